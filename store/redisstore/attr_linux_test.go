package redisstore_test

import "syscall"

// childAttr makes the kernel kill a redis-server a test started if the
// test process dies first (a timeout's panic, a killed go test).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
