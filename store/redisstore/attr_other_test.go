//go:build !linux

package redisstore_test

import "syscall"

// childAttr is nil where there is no parent-death signal: the tests'
// cleanups still stop every redis-server they started.
func childAttr() *syscall.SysProcAttr { return nil }
