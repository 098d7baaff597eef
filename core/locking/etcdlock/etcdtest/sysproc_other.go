//go:build unix && !linux

package etcdtest

import "syscall"

// sysProcAttr has nothing to add outside Linux.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
