//go:build linux

package pgtest

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// sysProcAttr runs the process with cred (nil: as the current user) and asks
// the kernel to kill it when the test binary dies.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
}

// child is a process of the server other than the postmaster, named by
// its pid and its start time (so a reused pid is not mistaken for it).
type child struct {
	pid   int
	start string
	proc  *os.Process // by pidfd where the kernel has them: a signal never reaches a reused pid
}

// procStat reads /proc/pid/stat: the state letter, the parent's pid and
// the start time; ok is false when the process is gone.
func procStat(pid int) (state byte, ppid int, start string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, "", false
	}
	// pid (comm) state ppid … ; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, "", false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, 0, "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0][0], ppid, f[19], true // fields 3, 4 and 22 of proc(5)
}

// stopped reports whether pid is stopped by a signal (state T), or gone.
func stopped(pid int) bool {
	state, _, _, ok := procStat(pid)
	return !ok || state == 'T'
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []child {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []child
	for _, e := range entries {
		cpid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, start, ok := procStat(cpid); ok && ppid == pid {
			p, err := os.FindProcess(cpid)
			if err != nil {
				continue
			}
			c := child{pid: cpid, start: start, proc: p}
			if !c.running() { // exited, or the pid was reused, before FindProcess
				_ = p.Release()
				continue
			}
			out = append(out, c)
		}
	}
	return out
}

// running reports whether c has not exited: its pid still names it and
// it is not a zombie (a zombie has closed its files, sockets included;
// reaping it is its new parent's business).
func (c child) running() bool {
	state, _, start, ok := procStat(c.pid)
	return ok && start == c.start && state != 'Z'
}

// kill sends SIGKILL to c.
func (c child) kill() { _ = c.proc.Signal(syscall.SIGKILL) }

// release frees what FindProcess holds for c.
func (c child) release() { _ = c.proc.Release() }
