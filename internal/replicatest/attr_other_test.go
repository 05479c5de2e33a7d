//go:build !linux

package replicatest

import "syscall"

// childAttr is nil where there is no parent-death signal: the tests'
// cleanups still stop every replica they started.
func childAttr() *syscall.SysProcAttr { return nil }
