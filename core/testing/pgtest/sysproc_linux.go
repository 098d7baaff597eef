//go:build linux

package pgtest

import "syscall"

// sysProcAttr runs the process with cred (nil: as the current user) and asks
// the kernel to kill it when the test binary dies.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
}
