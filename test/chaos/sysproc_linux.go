//go:build linux

package chaos

import "syscall"

// sysProcAttr asks the kernel to kill a child when the harness dies, so an
// interrupted run leaves no process behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
