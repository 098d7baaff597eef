//go:build linux

package redistest

import "syscall"

// sysProcAttr asks the kernel to kill the server when the test binary dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
