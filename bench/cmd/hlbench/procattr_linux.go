package main

import "syscall"

// childAttr makes a replica process die with the parent (SIGKILL when the
// parent ends), so an interrupted run leaves no replica behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// cpuSeconds is this process's CPU time so far (user + system), in seconds.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
