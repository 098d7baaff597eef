//go:build linux

package etcdtest

import "syscall"

// sysProcAttr asks the kernel to kill the member when the test binary dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
