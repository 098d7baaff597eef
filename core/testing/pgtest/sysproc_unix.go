//go:build unix && !linux

package pgtest

import "syscall"

// sysProcAttr runs the process with cred (nil: as the current user).
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
