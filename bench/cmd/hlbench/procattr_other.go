//go:build !linux

package main

import "syscall"

// childAttr: without Pdeathsig, a replica notices the parent's end when its
// stdin closes, and then stops.
func childAttr() *syscall.SysProcAttr { return nil }
