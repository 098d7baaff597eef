//go:build unix && !linux

package pgtest

import "syscall"

// sysProcAttr runs the process with cred (nil: as the current user).
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}

// child is a process of the server other than the postmaster; this
// platform does not list them (see sysproc_linux.go).
type child struct{}

// stopped reports true: without /proc the postmaster's children are not
// listed, so there is nothing to wait for before listing them.
func stopped(int) bool { return true }

// childrenOf lists nothing on this platform: Shutdown(ShutdownKill)
// then waits for the postmaster only.
func childrenOf(int) []child { return nil }

func (child) running() bool { return false }

func (child) kill()    {}
func (child) release() {}
