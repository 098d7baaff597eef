package main

// The scale section: roles × replica processes over one redis-server, with
// balancing (B1). Each replica is this binary re-executed with replicaCmd
// (see replica.go); the parent starts and stops them, reads their JSON
// status lines and measures.

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hostloom/hostloom/bench/internal/redisproc"
	"github.com/redis/go-redis/v9"
)

// scaleLoad is the Redis load of the fleet over a window at steady state.
type scaleLoad struct {
	Window     time.Duration
	CmdsPerSec float64 // INFO commandstats, script-internal commands included
	PerRole    float64
	PerCommand map[string]float64
	ReqPerSec  float64 // requests the replicas wrote on their connections
	ReqPerRole float64
	Acquired   int64   // acquisitions during the window (0 when steady)
	Leads      []int64 // roles led per replica
	AllLed     time.Duration
	RedisCPU   float64 // redis-server's CPU (user + sys) over the window, in cores
	ClientCPU  float64 // the replica processes' CPU (user + sys) over the window, in cores (0 where not measured)
}

// scaleMove is one membership change (a join or a leave) and the balancing
// that follows it.
type scaleMove struct {
	Converged time.Duration // from the change (the joiner's first Start, the leaver's stop) to the last transition
	Ready     time.Duration // a join: the joiner's Start calls, first to last
	Acquired  int64         // acquisitions by the replicas from the change to convergence
	ByReplica []int64       // the same per replica, in start order (a joiner last)
	Minimum   int64         // the fewest acquisitions that converge
	Leads     []int64       // roles led per replica afterwards

	// A join: when the joiner had its first, half and all of its
	// acquisitions, from its first Start (the transition times of its status
	// lines, which come at most 20 ms apart).
	First, Half, All time.Duration

	// A leave: how long the leaver's Stop calls took (from its stop to
	// its last report), and when every role was led again by the others
	// (0: not seen before convergence).
	Stopped, AllLed time.Duration

	// A leave: the most roles unled at once after AllLed (a dip: the
	// others losing terms after every role was led), and how long after
	// AllLed every role was led again for the last time (0: no dip).
	Unled int64
	Reled time.Duration
	// Terms the others lost from the change to convergence, by reason.
	Resigned, Refused, Expired int64
}

// scaleResult is the scale section's figures.
type scaleResult struct {
	Roles, Replicas int
	Set             settings

	// Replicas−1 replicas started together, until converged.
	StartConverged time.Duration
	StartAcquired  int64
	StartLeads     []int64

	// The last replica joins, leaves and joins again (cfg.scaleJoins joins).
	Joins, Leaves []scaleMove

	Balanced   scaleLoad
	Unbalanced *scaleLoad // the same fleet without Balance; nil when not run

	Mem []replicaMsg // per replica, after the balanced window
}

// runScale runs the scale section against the server at addr.
func runScale(ctx context.Context, cfg config, addr string, admin *redis.Client) (scaleResult, error) {
	bin, err := os.Executable()
	if err != nil {
		return scaleResult{}, fmt.Errorf("scale: finding this binary to run replicas: %w", err)
	}
	n, roles, s := cfg.scaleReplicas, cfg.scaleRoles, cfg.scaleSet
	res := scaleResult{Roles: roles, Replicas: n, Set: s}
	quiet := 2*s.Retry + 500*time.Millisecond
	stamp := time.Now().UnixNano()

	f := &scaleFleet{bin: bin, addr: addr, ns: fmt.Sprintf("scale-b-%d", stamp), roles: roles, s: s, balance: true, fx: cfg.scaleFx}
	defer f.close()
	// 1. n−1 replicas start together.
	for i := 1; i < n; i++ {
		if _, err := f.spawn(fmt.Sprintf("replica-%d", i)); err != nil {
			return res, err
		}
	}
	if err := f.waitReady(cfg.scaleTimeout); err != nil {
		return res, err
	}
	first := f.procs[0].starting
	for _, p := range f.procs {
		first = min(first, p.starting)
	}
	st, err := f.waitConverged(true, cfg.scaleTimeout, quiet)
	if err != nil {
		return res, fmt.Errorf("scale: %d replicas: %w", n-1, err)
	}
	res.StartConverged = time.Duration(lastChange(st) - first)
	res.StartAcquired = sum(st, func(m replicaMsg) int64 { return m.Acquired })
	res.StartLeads = leadsOf(st)
	logf("scale %d roles × %d replicas (%s): converged %s after the first start, %d acquisitions, leads %v",
		roles, n-1, s.Name, fmtDur(res.StartConverged), res.StartAcquired, res.StartLeads)

	// 2. The n-th replica joins; then it leaves and joins again.
	for j := range cfg.scaleJoins {
		if j > 0 {
			m, err := f.leave(f.procs[n-1], cfg.scaleTimeout, quiet)
			if err != nil {
				return res, err
			}
			res.Leaves = append(res.Leaves, m)
		}
		m, err := f.join(fmt.Sprintf("replica-%d", n), cfg.scaleTimeout, quiet)
		if err != nil {
			return res, err
		}
		res.Joins = append(res.Joins, m)
	}

	// 3. Steady state with Balance, then memory.
	if res.Balanced, err = f.measureLoad(ctx, cfg, admin); err != nil {
		return res, err
	}
	logScaleLoad("balanced", roles, n, res.Balanced)
	if res.Mem, err = f.memory(cfg.scaleTimeout); err != nil {
		return res, err
	}
	for _, m := range res.Mem {
		logf("scale memory %s: heap %.1f MB, stacks %.1f MB = %.1f MB (%.0f B per elector, client included), %d goroutines; before the electors %.1f MB, %d goroutines; peak so far %.0f B per elector, %d goroutines",
			m.Name, mb(m.HeapBytes), mb(m.StackBytes), mb(m.HeapBytes+m.StackBytes), perElector(m, roles), m.Goroutines, mb(m.BaseHeap+m.BaseStack), m.BaseGoroutines,
			peakPerElector(m, roles), m.PeakGoroutines)
	}
	if err := f.close(); err != nil {
		return res, err
	}

	// 4. The same fleet without Balance: n replicas start together.
	if !cfg.scaleCompare {
		return res, nil
	}
	u := &scaleFleet{bin: bin, addr: addr, ns: fmt.Sprintf("scale-u-%d", stamp), roles: roles, s: s, fx: cfg.scaleFx}
	defer u.close()
	for i := 1; i <= n; i++ {
		if _, err := u.spawn(fmt.Sprintf("replica-%d", i)); err != nil {
			return res, err
		}
	}
	if err := u.waitReady(cfg.scaleTimeout); err != nil {
		return res, err
	}
	first = u.procs[0].starting
	for _, p := range u.procs {
		first = min(first, p.starting)
	}
	st, err = u.waitConverged(false, cfg.scaleTimeout, quiet)
	if err != nil {
		return res, fmt.Errorf("scale: without balance: %w", err)
	}
	load, err := u.measureLoad(ctx, cfg, admin)
	if err != nil {
		return res, err
	}
	load.AllLed = time.Duration(lastChange(st) - first)
	res.Unbalanced = &load
	logScaleLoad("unbalanced", roles, n, load)
	return res, u.close()
}

// join starts one more replica and waits until the fleet converged again.
func (f *scaleFleet) join(name string, timeout, quiet time.Duration) (scaleMove, error) {
	st, err := f.statuses()
	if err != nil {
		return scaleMove{}, err
	}
	share := int64((f.roles + len(f.procs)) / (len(f.procs) + 1)) // ceil(roles / replicas after the join)
	var m scaleMove
	for _, s := range st {
		m.Minimum += max(0, s.Leads-share)
	}
	joiner, err := f.spawn(name)
	if err != nil {
		return m, err
	}
	if err := f.waitReady(timeout); err != nil {
		return m, err
	}
	after, err := f.waitConverged(true, timeout, quiet)
	if err != nil {
		return m, fmt.Errorf("scale: join of %s: %w", name, err)
	}
	m.Ready = time.Duration(joiner.ready - joiner.starting)
	m.Converged = time.Duration(lastChange(after) - joiner.starting)
	m.account(st, after)
	m.First, m.Half, m.All = joiner.timeline(after[len(after)-1].Acquired)
	logf("scale join of %s: converged %s after its first Start (its %d Starts took %s; its first role after %s, half after %s, all %d after %s); %d acquisitions %v (minimum %d); leads %v",
		name, fmtDur(m.Converged), f.roles, fmtDur(m.Ready), fmtDur(m.First), fmtDur(m.Half), after[len(after)-1].Acquired, fmtDur(m.All), m.Acquired, m.ByReplica, m.Minimum, m.Leads)
	return m, nil
}

// leave stops replica p gracefully and waits until the others converged.
func (f *scaleFleet) leave(p *replicaProc, timeout, quiet time.Duration) (scaleMove, error) {
	st, err := f.statuses()
	if err != nil {
		return scaleMove{}, err
	}
	i := slices.Index(f.procs, p)
	m := scaleMove{Minimum: st[i].Leads} // its roles need new leaders
	st = slices.Delete(st, i, i+1)
	t0 := time.Now()
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(f.s.Lease + 10*time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return m, fmt.Errorf("scale: replica %s did not stop within %v: killed", p.name, f.s.Lease+10*time.Second)
	}
	p.mu.Lock()
	werr := p.waitErr
	p.mu.Unlock()
	if werr != nil {
		return m, fmt.Errorf("scale: replica %s: %w", p.name, werr)
	}
	f.procs = slices.Delete(f.procs, i, i+1)
	after, err := f.waitConverged(true, timeout, quiet)
	if err != nil {
		return m, fmt.Errorf("scale: leave of %s: %w", p.name, err)
	}
	m.Converged = time.Duration(lastChange(after) - t0.UnixNano())
	m.account(st, after)
	p.mu.Lock()
	if p.stopped > 0 {
		m.Stopped = time.Duration(p.stopped - t0.UnixNano())
	}
	p.mu.Unlock()
	p.mu.Lock()
	last := p.status
	p.mu.Unlock()
	logf("scale leave of %s: its peak memory until it exited: heap live %.1f MB + stacks %.1f MB (%.0f B per elector), %d goroutines",
		p.name, mb(last.PeakHeap), mb(last.PeakStack), peakPerElector(last, f.roles), last.PeakGoroutines)
	m.AllLed = f.allLedAfter(t0.UnixNano())
	m.Unled, m.Reled = f.dipAfter(t0.UnixNano() + int64(m.AllLed))
	lostSince := func(f func(replicaMsg) int64) int64 { return sum(after, f) - sum(st, f) }
	m.Resigned = lostSince(func(m replicaMsg) int64 { return m.Resigned })
	m.Refused = lostSince(func(m replicaMsg) int64 { return m.Refused })
	m.Expired = lostSince(func(m replicaMsg) int64 { return m.Expired })
	reled := "not all led again in the statuses seen"
	if m.Unled == 0 || m.Reled > 0 {
		reled = "all led again " + fmtDur(m.AllLed+m.Reled) + " after the stop began"
	}
	logf("scale leave of %s: every role led by the others %s after its stop began (its Stop calls took %s); converged %s after; %d acquisitions %v (minimum %d); leads %v; the others lost %d terms (resigned %d, refused %d, expired %d); afterwards at most %d roles unled, %s",
		p.name, fmtDur(m.AllLed), fmtDur(m.Stopped), fmtDur(m.Converged), m.Acquired, m.ByReplica, m.Minimum, m.Leads,
		m.Resigned+m.Refused+m.Expired, m.Resigned, m.Refused, m.Expired, m.Unled, reled)
	return m, nil
}

// leadsPoint is one status line of a replica on the fleet's timeline.
type leadsPoint struct {
	at    int64 // its latest transition, or t when earlier
	proc  int
	leads int64
}

// timeline returns each replica's leads at t (Unix ns), from its last
// status line that settled reports as describing the state at t, and its
// other status lines in time order, each at its latest transition or at t
// when that is earlier.
func (f *scaleFleet) timeline(t int64, settled func(replicaMsg) bool) ([]int64, []leadsPoint) {
	var pts []leadsPoint
	leads := make([]int64, len(f.procs))
	for i, p := range f.procs {
		p.mu.Lock()
		for _, m := range p.history {
			if settled(m) {
				leads[i] = m.Leads
				continue
			}
			pts = append(pts, leadsPoint{max(m.LastChange, t), i, m.Leads})
		}
		p.mu.Unlock()
	}
	slices.SortStableFunc(pts, func(a, b leadsPoint) int { return cmp.Compare(a.at, b.at) })
	return leads, pts
}

// allLedAfter returns when, after t0 (Unix ns), the fleet's replicas
// together led every role, from their status histories (each status
// carries the replica's leads and its latest transition); 0 when never.
func (f *scaleFleet) allLedAfter(t0 int64) time.Duration {
	leads, pts := f.timeline(t0, func(m replicaMsg) bool { return m.At < t0 })
	for _, pt := range pts {
		leads[pt.proc] = pt.leads
		if total(leads) == int64(f.roles) {
			return time.Duration(pt.at - t0)
		}
	}
	return 0
}

// dipAfter returns, from t1 (Unix ns, when every role was led) on, the
// most roles unled at once and how long after t1 every role was last led
// again (0, 0: none went unled; reled 0 too when the histories end short).
func (f *scaleFleet) dipAfter(t1 int64) (unled int64, reled time.Duration) {
	// A status sent after t1 whose latest transition came before it
	// describes the state at t1: applied as a point, it could show a dip
	// between two replicas' lines that never happened.
	leads, pts := f.timeline(t1, func(m replicaMsg) bool { return m.LastChange <= t1 })
	var last int64
	short := false
	for _, pt := range pts {
		leads[pt.proc] = pt.leads
		if d := int64(f.roles) - total(leads); d > 0 {
			unled, short = max(unled, d), true
		} else if short {
			last, short = pt.at, false
		}
	}
	if unled == 0 || short {
		return unled, 0
	}
	return unled, time.Duration(last - t1)
}

func total(leads []int64) int64 {
	var n int64
	for _, l := range leads {
		n += l
	}
	return n
}

// account fills the acquisitions between before (the replicas then, a
// joiner missing) and after.
func (m *scaleMove) account(before, after []replicaMsg) {
	m.ByReplica = make([]int64, len(after))
	for i, a := range after {
		m.ByReplica[i] = a.Acquired
		if i < len(before) {
			m.ByReplica[i] -= before[i].Acquired
		}
		m.Acquired += m.ByReplica[i]
	}
	m.Leads = leadsOf(after)
}

func logScaleLoad(what string, roles, n int, l scaleLoad) {
	logf("scale steady %s %d roles × %d: %.1f requests/s (%.3f per role), %.1f cmds/s (%.3f per role), Redis CPU %.3f cores, replicas' CPU %.3f cores, %d acquisitions in %s, leads %v; %v",
		what, roles, n, l.ReqPerSec, l.ReqPerRole, l.CmdsPerSec, l.PerRole, l.RedisCPU, l.ClientCPU, l.Acquired, l.Window.Round(100*time.Millisecond), l.Leads, fmtCmds(l.PerCommand))
}

// perElector is the replica's heap and stacks over its electors: an upper
// bound, as it includes the Redis client and its connection pool, which
// the baseline before the electors (one connection at most) does not.
func perElector(m replicaMsg, roles int) float64 {
	return float64(m.HeapBytes+m.StackBytes) / float64(roles)
}

// peakPerElector is the replica's highest sampled heap + stacks per
// elector, counted as perElector counts.
func peakPerElector(m replicaMsg, roles int) float64 {
	return float64(m.PeakHeap+m.PeakStack) / float64(roles)
}

func sum(st []replicaMsg, f func(replicaMsg) int64) int64 {
	var n int64
	for _, m := range st {
		n += f(m)
	}
	return n
}

func leadsOf(st []replicaMsg) []int64 {
	out := make([]int64, len(st))
	for i, m := range st {
		out[i] = m.Leads
	}
	return out
}

func lastChange(st []replicaMsg) int64 {
	var t int64
	for _, m := range st {
		t = max(t, m.LastChange)
	}
	return t
}

// replicaProc is one running replica process.
type replicaProc struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu              sync.Mutex
	status          replicaMsg
	history         []replicaMsg // every status
	starting, ready int64        // Unix ns; 0 until reported
	stopped         int64        // Unix ns of its "stopped" report; 0 until then
	readyCh, exited chan struct{}
	waitErr         error
	mem             chan replicaMsg
}

// scaleFleet is the replicas of one namespace.
type scaleFleet struct {
	bin, addr, ns string
	roles         int
	fx            bool // replicas are fx apps (-fx)
	s             settings
	balance       bool
	procs         []*replicaProc
	closed        bool
}

// spawn starts one replica; its electors start at once.
func (f *scaleFleet) spawn(name string) (*replicaProc, error) {
	cmd := exec.Command(f.bin, replicaCmd, "-name", name, "-addr", f.addr, "-ns", f.ns,
		"-roles", fmt.Sprint(f.roles), fmt.Sprintf("-balance=%t", f.balance),
		"-lease", f.s.Lease.String(), "-renew", f.s.Renew.String(), "-retry", f.s.Retry.String(), fmt.Sprintf("-fx=%t", f.fx))
	cmd.SysProcAttr = childAttr() // dies with the parent, where the OS allows
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("scale: starting replica %s (%s): %w", name, f.bin, err)
	}
	p := &replicaProc{name: name, cmd: cmd, stdin: stdin, readyCh: make(chan struct{}), exited: make(chan struct{}),
		mem: make(chan replicaMsg, 4)}
	f.procs = append(f.procs, p)
	var readers sync.WaitGroup
	readers.Go(func() { p.read(stdout) })
	readers.Go(func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logf("scale %s: %s", name, sc.Text())
		}
	})
	go func() {
		readers.Wait() // Wait closes the pipes: only after reading them to the end
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.exited)
	}()
	return p, nil
}

// read dispatches the replica's JSON lines until its stdout ends.
func (p *replicaProc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var m replicaMsg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			logf("scale %s: %s", p.name, sc.Text())
			continue
		}
		p.mu.Lock()
		switch m.Type {
		case "starting":
			p.starting = m.At
		case "ready":
			p.ready = m.At
			close(p.readyCh)
		case "status":
			p.status = m
			p.history = append(p.history, m)
		case "stopped":
			p.stopped = m.At
		case "mem":
			select {
			case p.mem <- m:
			default:
			}
		}
		p.mu.Unlock()
	}
}

// timeline returns when the replica had its first, half and all of total
// acquisitions, from its first Start.
func (p *replicaProc) timeline(total int64) (first, half, all time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at := func(n int64) time.Duration {
		for _, m := range p.history {
			if m.Acquired >= n {
				return time.Duration(m.LastChange - p.starting)
			}
		}
		return 0
	}
	return at(1), at((total + 1) / 2), at(total)
}

// gone reports an error when the replica exited.
func (p *replicaProc) gone() error {
	select {
	case <-p.exited:
		p.mu.Lock()
		defer p.mu.Unlock()
		return fmt.Errorf("scale: replica %s exited early: %v", p.name, p.waitErr)
	default:
		return nil
	}
}

func (f *scaleFleet) waitReady(timeout time.Duration) error {
	deadline := time.After(timeout)
	for _, p := range f.procs {
		select {
		case <-p.readyCh:
		case <-p.exited:
			return p.gone()
		case <-deadline:
			return fmt.Errorf("scale: replica %s did not start its %d electors within %v", p.name, f.roles, timeout)
		}
	}
	return nil
}

// statuses is every replica's latest status, in spawn order.
func (f *scaleFleet) statuses() ([]replicaMsg, error) {
	out := make([]replicaMsg, len(f.procs))
	for i, p := range f.procs {
		if err := p.gone(); err != nil {
			return nil, err
		}
		p.mu.Lock()
		out[i] = p.status
		p.mu.Unlock()
	}
	return out, nil
}

// waitConverged waits until every role is led and, when balanced, nobody
// leads more than ceil(roles/replicas) (B1), and no transition happened for
// quiet; it returns the statuses then.
func (f *scaleFleet) waitConverged(balanced bool, timeout, quiet time.Duration) ([]replicaMsg, error) {
	share := int64((f.roles + len(f.procs) - 1) / len(f.procs))
	deadline := time.Now().Add(timeout)
	var key string
	var since time.Time
	for {
		st, err := f.statuses()
		if err != nil {
			return nil, err
		}
		ok := sum(st, func(m replicaMsg) int64 { return m.Leads }) == int64(f.roles)
		for _, m := range st {
			ok = ok && (!balanced || m.Leads <= share)
		}
		k := fmt.Sprint(sum(st, func(m replicaMsg) int64 { return m.Acquired }), sum(st, func(m replicaMsg) int64 { return m.Lost }))
		if !ok || k != key {
			key, since = k, time.Now()
		}
		if ok && time.Since(since) >= quiet {
			return st, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("not converged within %v (share %d): leads %v", timeout, share, leadsOf(st))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// measureLoad waits cfg.scaleWarm, then measures Redis commands and the
// replicas' requests over cfg.scaleWindow.
func (f *scaleFleet) measureLoad(ctx context.Context, cfg config, admin *redis.Client) (scaleLoad, error) {
	time.Sleep(cfg.scaleWarm)
	cpu0, err := redisCPU(ctx, admin)
	if err != nil {
		return scaleLoad{}, err
	}
	before, err := redisproc.CommandStats(ctx, admin)
	if err != nil {
		return scaleLoad{}, err
	}
	s0, err := f.statuses()
	if err != nil {
		return scaleLoad{}, err
	}
	t0 := time.Now()
	time.Sleep(cfg.scaleWindow)
	after, err := redisproc.CommandStats(ctx, admin)
	if err != nil {
		return scaleLoad{}, err
	}
	win := time.Since(t0)
	cpu1, err := redisCPU(ctx, admin)
	if err != nil {
		return scaleLoad{}, err
	}
	time.Sleep(1100 * time.Millisecond) // every replica reports within a second
	s1, err := f.statuses()
	if err != nil {
		return scaleLoad{}, err
	}
	delta, total := redisproc.Delta(before, after)
	l := scaleLoad{Window: win, CmdsPerSec: float64(total) / win.Seconds(), PerCommand: map[string]float64{}, Leads: leadsOf(s1)}
	for k, v := range delta {
		l.PerCommand[k] = float64(v) / win.Seconds()
	}
	for i := range s1 {
		// Each replica's own clock pair: its writes per second.
		if dt := time.Duration(s1[i].At - s0[i].At); dt > 0 {
			l.ReqPerSec += float64(s1[i].Writes-s0[i].Writes) / dt.Seconds()
		}
		l.Acquired += s1[i].Acquired - s0[i].Acquired
		if dt := time.Duration(s1[i].At - s0[i].At); dt > 0 && s1[i].CPU > 0 {
			l.ClientCPU += (s1[i].CPU - s0[i].CPU) / dt.Seconds()
		}
	}
	l.PerRole = l.CmdsPerSec / float64(f.roles)
	l.ReqPerRole = l.ReqPerSec / float64(f.roles)
	l.RedisCPU = (cpu1 - cpu0) / win.Seconds()
	return l, nil
}

// redisCPU is redis-server's used_cpu_user + used_cpu_sys in seconds
// (INFO cpu).
func redisCPU(ctx context.Context, admin *redis.Client) (float64, error) {
	info, err := admin.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (k != "used_cpu_user" && k != "used_cpu_sys") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("INFO cpu %s: %w", line, err)
		}
		total += f
	}
	return total, nil
}

// memory asks every replica for its heap and stacks after GC.
func (f *scaleFleet) memory(timeout time.Duration) ([]replicaMsg, error) {
	var out []replicaMsg
	for _, p := range f.procs {
		if _, err := io.WriteString(p.stdin, "mem\n"); err != nil {
			return nil, fmt.Errorf("scale: asking replica %s for its memory: %w", p.name, err)
		}
		select {
		case m := <-p.mem:
			out = append(out, m)
		case <-p.exited:
			return nil, p.gone()
		case <-time.After(timeout):
			return nil, fmt.Errorf("scale: replica %s did not report its memory within %v", p.name, timeout)
		}
	}
	return out, nil
}

// close stops every replica: the end of its stdin makes it stop its
// electors (releasing their leases) and exit; one still running after a
// lease and ten seconds more is killed. It is idempotent and returns the
// replicas' failures.
func (f *scaleFleet) close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	var wg sync.WaitGroup
	errs := make([]error, len(f.procs))
	for i, p := range f.procs {
		_ = p.stdin.Close()
		wg.Go(func() {
			select {
			case <-p.exited:
			case <-time.After(f.s.Lease + 10*time.Second):
				_ = p.cmd.Process.Kill()
				<-p.exited
				errs[i] = fmt.Errorf("scale: replica %s did not stop within %v: killed", p.name, f.s.Lease+10*time.Second)
				return
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.waitErr != nil {
				errs[i] = fmt.Errorf("scale: replica %s: %w", p.name, p.waitErr)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// scaleSection is the Markdown of the scale section.
func (r *report) scaleSection(p func(string, ...any)) {
	sc := r.scale
	if sc == nil {
		return
	}
	n := sc.Replicas
	p("## 4. Many roles: balancing over replica processes (B1)")
	p("")
	p("%d roles × %d replica processes over the one redis-server, settings %s (lease/renew/retry). Each replica is `hlbench` re-executed as a child process: its own go-redis client and Redis provider, one `BalanceGroup`, one elector per role with `Options.Balance` and `WithIdentity(replica name)`. Replicas report their leadership transitions (OnChange: acquisitions, losses, the latest `Change.At`) and the requests written on their connections as JSON lines on stdout; converged (B1) = every role led and no replica leading more than ceil(R/N), with no transition for 2 × RetryInterval + 500 ms afterwards (the time reported is that of the last transition).", sc.Roles, n, sc.Set.Name)
	p("")
	p("| start | |")
	p("|---|---|")
	p("| %d replicas start together | converged %s after the first replica's start; %d acquisitions; leads %v |", n-1, fmtDur(sc.StartConverged), sc.StartAcquired, sc.StartLeads)
	p("")
	p("Then replica %d joins%s. Time to balance: from the joiner's first `Start` (a leave: from the moment its stop began) to the last leadership transition of the fleet; B1's target is 2 × RetryInterval = %s. Acquisitions are counted by every replica from the change to convergence (a join: the joiner last); the minimum is Σ max(0, leads − ceil(R/N)) before a join, and the leaver's roles for a leave.", n, joinsText(len(sc.Joins)), fmtDur(2*sc.Set.Retry))
	p("")
	p("| change | time to balance | joiner's %d `Start` calls | joiner's roles: first, half, all | acquisitions | per replica | minimum | leads after |", sc.Roles)
	p("|---|---|---|---|---|---|---|---|")
	for i, m := range sc.Joins {
		if i > 0 {
			l := sc.Leaves[i-1]
			p("| replica %d leaves | **%s** (every role led again after %s; its Stop calls took %s) | | | %d | %v | %d | %v |", n, fmtDur(l.Converged), fmtDur(l.AllLed), fmtDur(l.Stopped), l.Acquired, l.ByReplica, l.Minimum, l.Leads)
		}
		p("| replica %d joins | **%s** | %s | %s, %s, %s | %d | %v | %d | %v |", n, fmtDur(m.Converged), fmtDur(m.Ready), fmtDur(m.First), fmtDur(m.Half), fmtDur(m.All), m.Acquired, m.ByReplica, m.Minimum, m.Leads)
	}
	p("")
	p("| steady state and memory | |")
	p("|---|---|")
	loads := []struct {
		name string
		l    *scaleLoad
	}{{"with Balance", &sc.Balanced}, {"without Balance", sc.Unbalanced}}
	for _, x := range loads {
		if x.l == nil {
			continue
		}
		extra := ""
		if x.l.AllLed > 0 {
			extra = fmt.Sprintf("; all %d roles led %s after the first start", sc.Roles, fmtDur(x.l.AllLed))
		}
		p("| Redis load %s, steady | **%.3f** commands/s per role (%.1f/s in all: %s); %.3f requests/s per role (%.1f/s); Redis CPU %.3f cores, the replicas' %.3f cores (timings, not counts); %d acquisitions in the %s window; leads %v%s |",
			x.name, x.l.PerRole, x.l.CmdsPerSec, fmtCmds(x.l.PerCommand), x.l.ReqPerRole, x.l.ReqPerSec, x.l.RedisCPU, x.l.ClientCPU, x.l.Acquired, x.l.Window.Round(100*time.Millisecond), x.l.Leads, extra)
	}
	for _, m := range sc.Mem {
		p("| memory of %s (%d electors) | heap %.1f MB + stacks %.1f MB = **%.1f MB** (%.0f B per elector, the Redis client included), %d goroutines; before the electors were built: %.1f MB, %d goroutines; peak since its start: %.0f B per elector, %d goroutines |",
			m.Name, sc.Roles, mb(m.HeapBytes), mb(m.StackBytes), mb(m.HeapBytes+m.StackBytes), perElector(m, sc.Roles), m.Goroutines, mb(m.BaseHeap+m.BaseStack), m.BaseGoroutines,
			peakPerElector(m, sc.Roles), m.PeakGoroutines)
	}
	p("")
	p("Commands are `INFO commandstats` deltas over the window (every command a script runs counted as well as the EVALSHA; the harness's INFO excluded) divided by the roles; requests are writes on the replicas' connections, each replica's count over its own status timestamps. With Balance every replica's group also reads each role's participants once per RetryInterval (one round trip per role per round). The load is measured %s after convergence. Memory: `HeapAlloc` + `StackInuse` after two GCs, reported by the replica itself; the peak is the highest sample (every 5 ms, no GC forced) of the heap live at the latest GC plus the goroutine stacks, per elector as the figure before it (the Redis client included).", r.cfg.scaleWarm)
	p("")
}

// scaleTargets are B1's: time to balance, and no handover beyond the
// minimum.
func (r *report) scaleTargets() []target {
	sc := r.scale
	if sc == nil {
		return nil
	}
	worst, extra := time.Duration(0), int64(0)
	var acq, minimum []int64
	for _, m := range append(slices.Clone(sc.Joins), sc.Leaves...) {
		extra += m.Acquired - m.Minimum
		acq, minimum = append(acq, m.Acquired), append(minimum, m.Minimum)
	}
	var joins []string
	for _, m := range sc.Joins {
		worst = max(worst, m.Converged)
		joins = append(joins, fmtDur(m.Converged))
	}
	return []target{
		{fmt.Sprintf("balance after a join ≤ 2 × RetryInterval (B1; %d roles × %d processes; every join)", sc.Roles, sc.Replicas),
			fmt.Sprintf("%s (RetryInterval %s)", strings.Join(joins, ", "), fmtDur(sc.Set.Retry)), worst <= 2*sc.Set.Retry},
		{"handovers during a join or leave = the minimum (no role moves twice)",
			fmt.Sprintf("acquisitions %v, minimum %v", acq, minimum), extra == 0},
	}
}

func joinsText(joins int) string {
	if joins <= 1 {
		return ""
	}
	leaves := "leaves"
	if joins == 2 {
		leaves = "leave"
	}
	return fmt.Sprintf(", then leaves and joins again (%d joins, %d %s)", joins, joins-1, leaves)
}

// scaleSane reports figures only a broken harness produces.
func (r *report) scaleSane() error {
	sc := r.scale
	if sc == nil {
		return nil
	}
	var errs []error
	if sc.StartAcquired < int64(sc.Roles) || len(sc.Joins) == 0 {
		errs = append(errs, fmt.Errorf("scale: %d acquisitions at start for %d roles, %d joins", sc.StartAcquired, sc.Roles, len(sc.Joins)))
	}
	for _, m := range append(slices.Clone(sc.Joins), sc.Leaves...) {
		if m.Acquired <= 0 || m.Converged <= 0 {
			errs = append(errs, fmt.Errorf("scale: a change converged after %v with %d acquisitions", m.Converged, m.Acquired))
		}
	}
	for _, l := range []*scaleLoad{&sc.Balanced, sc.Unbalanced} {
		if l != nil && (l.CmdsPerSec <= 0 || l.ReqPerSec <= 0) {
			errs = append(errs, fmt.Errorf("scale: %.1f commands/s, %.1f requests/s", l.CmdsPerSec, l.ReqPerSec))
		}
	}
	if len(sc.Mem) != sc.Replicas || slices.ContainsFunc(sc.Mem, func(m replicaMsg) bool { return m.HeapBytes <= 0 }) {
		errs = append(errs, fmt.Errorf("scale: memory of %d replicas reported, want %d", len(sc.Mem), sc.Replicas))
	}
	return errors.Join(errs...)
}
