package main

import "syscall"

// childAttr makes a replica process die with the parent (SIGKILL when the
// parent ends), so an interrupted run leaves no replica behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
