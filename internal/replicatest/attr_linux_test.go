package replicatest

import "syscall"

// childAttr makes the kernel kill a replica if the test process dies
// first (a timeout's panic, a killed go test), so none outlives it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
