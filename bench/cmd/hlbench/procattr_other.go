//go:build !linux

package main

import "syscall"

// childAttr: without Pdeathsig, a replica notices the parent's end when its
// stdin closes, and then stops.
func childAttr() *syscall.SysProcAttr { return nil }

// cpuSeconds is not measured here: the scale section reports 0.
func cpuSeconds() float64 { return 0 }
