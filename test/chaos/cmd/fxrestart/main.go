//go:build unix

// Command fxrestart measures how long two replicas of the example fx
// service (examples/app) both believe they lead a role after the lock's
// Redis restarts without persistence, the way a new user would run it:
// several processes of the example, configured only through its
// environment variables, against one private redis-server on loopback
// (--save "" --appendonly no) that is killed and started empty on the
// same port again and again.
//
//	go run ./test/chaos/cmd/fxrestart                     # defaults: lease 15s, renew 5s, retry 2s
//	go run ./test/chaos/cmd/fxrestart -lease 1s -renew 250ms -retry 250ms -spacing 10s -max-overlap 10ms
//
// Each process logs its leadership transitions (LeadershipAcquired,
// LeadershipLost, LeadershipReleased, LeadershipResigned) with a
// millisecond timestamp; from them the command rebuilds every process's
// terms of every role and prints, per restart, the overlaps (two or more
// processes leading one role at once), the longest, the leaderless time
// per role, the terms that ended and the invoices job runs logged inside
// an overlap. It exits 1 when the longest overlap exceeds -max-overlap or
// a role has no leader when the next restart is due, and 2 when the run
// itself fails (build, server, a process that exits on its own).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hostloom/hostloom/test/chaos"
)

// roles are the example's roles (examples/app/app.go).
var roles = []string{"billing", "inventory"}

type settings struct {
	replicas   int
	restarts   int
	spacing    time.Duration
	lease      time.Duration
	renew      time.Duration
	retry      time.Duration
	maxOverlap time.Duration
	dir        string
}

func main() {
	os.Exit(run())
}

func run() int {
	var s settings
	flag.IntVar(&s.replicas, "replicas", 3, "example processes")
	flag.IntVar(&s.restarts, "restarts", 10, "Redis restarts (kill, start empty on the same port)")
	flag.DurationVar(&s.spacing, "spacing", 25*time.Second, "time between restarts (and after the last one)")
	flag.DurationVar(&s.lease, "lease", 15*time.Second, "leadership.lease of every role")
	flag.DurationVar(&s.renew, "renew", 5*time.Second, "leadership.renew_interval of every role")
	flag.DurationVar(&s.retry, "retry", 2*time.Second, "leadership.retry_interval of every role")
	flag.DurationVar(&s.maxOverlap, "max-overlap", 50*time.Millisecond, "exit 1 when an overlap is longer")
	flag.StringVar(&s.dir, "dir", "", "keep the binary, the server's files and the processes' logs here (default: a new temporary directory)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "fxrestart: unexpected arguments %q\n", flag.Args())
		return 2
	}
	if s.replicas < 2 || s.restarts < 1 || s.spacing <= 0 || s.maxOverlap < 0 {
		fmt.Fprintf(os.Stderr, "fxrestart: want -replicas >= 2 (got %d), -restarts >= 1 (got %d), -spacing > 0 (got %v), -max-overlap >= 0 (got %v)\n",
			s.replicas, s.restarts, s.spacing, s.maxOverlap)
		return 2
	}
	if s.dir == "" {
		d, err := os.MkdirTemp("", "hostloom-fxrestart-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		s.dir = d
	}
	s.dir, _ = filepath.Abs(s.dir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := measure(ctx, s, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fxrestart: %v (files in %s)\n", err, s.dir)
		return 2
	}
	return code
}

// proc is one example process.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when its log is drained and it exited
	err  error         // its exit, after done

	mu     sync.Mutex
	events []event
	runs   []event
	exited bool
}

func (p *proc) snapshot() (events, runs []event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.events), slices.Clone(p.runs)
}

// startProc starts the example with env, writing its log to dir/name.log
// and reading its transitions as they come.
func startProc(bin, dir, name string, env []string) (*proc, error) {
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-http", "127.0.0.1:0", "-log-format", "json")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() {
		defer close(p.done)
		defer logf.Close()
		sc := bufio.NewScanner(io.TeeReader(stderr, logf))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			ev, isRun, ok := parseLine(name, sc.Text())
			if !ok {
				continue
			}
			p.mu.Lock()
			if isRun {
				p.runs = append(p.runs, ev)
			} else {
				p.events = append(p.events, ev)
			}
			p.mu.Unlock()
		}
		_, _ = io.Copy(logf, stderr)
		p.err = cmd.Wait()
		p.mu.Lock()
		p.exited = true
		p.mu.Unlock()
	}()
	return p, nil
}

// leaders returns, per role, the processes that lead it now according to
// their logs.
func leaders(procs []*proc) map[string][]string {
	out := map[string][]string{}
	for _, p := range procs {
		evs, _ := p.snapshot()
		last := map[string]bool{}
		for _, ev := range evs {
			last[ev.Role] = ev.Leader
		}
		for role, lead := range last {
			if lead {
				out[role] = append(out[role], p.name)
			}
		}
	}
	return out
}

func measure(ctx context.Context, s settings, out io.Writer) (int, error) {
	fmt.Fprintf(out, "fxrestart: %d example processes, %d restarts %v apart, lease %v / renew %v / retry %v, bound %v; files in %s\n",
		s.replicas, s.restarts, s.spacing, s.lease, s.renew, s.retry, s.maxOverlap, s.dir)
	bin := filepath.Join(s.dir, "example")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/hostloom/hostloom/examples/app")
	if b, err := build.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("go build examples/app (run from the repository, in its workspace): %w\n%s", err, b)
	}
	srv, err := chaos.StartRedis(s.dir, false)
	if err != nil {
		return 0, err
	}
	defer srv.Stop()
	env := []string{
		"HOSTLOOM_LOCKING__PROVIDER=redis",
		"HOSTLOOM_LOCKING__REDIS__ADDRS=" + srv.Addr(),
		"HOSTLOOM_LEADERSHIP__LEASE=" + s.lease.String(),
		"HOSTLOOM_LEADERSHIP__RENEW_INTERVAL=" + s.renew.String(),
		"HOSTLOOM_LEADERSHIP__RETRY_INTERVAL=" + s.retry.String(),
		// config.yaml gives inventory timings of its own: override them too.
		"HOSTLOOM_LEADERSHIP__ROLES__INVENTORY__LEASE=" + s.lease.String(),
		"HOSTLOOM_LEADERSHIP__ROLES__INVENTORY__RENEW_INTERVAL=" + s.renew.String(),
		"HOSTLOOM_LEADERSHIP__ROLES__INVENTORY__RETRY_INTERVAL=" + s.retry.String(),
	}
	procs := make([]*proc, 0, s.replicas)
	defer func() {
		for _, p := range procs {
			select {
			case <-p.done:
			default:
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
	}()
	for i := range s.replicas {
		p, err := startProc(bin, s.dir, fmt.Sprintf("p%d", i+1), env)
		if err != nil {
			return 0, err
		}
		procs = append(procs, p)
	}
	crashed := func() error {
		for _, p := range procs {
			p.mu.Lock()
			exited := p.exited
			p.mu.Unlock()
			if exited {
				return fmt.Errorf("%s exited on its own (%v); see %s.log", p.name, p.err, p.name)
			}
		}
		return nil
	}
	// wait sleeps d, or until ctx ends or a process exits.
	wait := func(d time.Duration) error {
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			if err := crashed(); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(min(100*time.Millisecond, time.Until(end))):
			}
		}
		return crashed()
	}
	oneEach := func() bool {
		ls := leaders(procs)
		for _, r := range roles {
			if len(ls[r]) != 1 {
				return false
			}
		}
		return true
	}
	startBound := 30*time.Second + s.lease
	deadline := time.Now().Add(startBound)
	for !oneEach() {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no single leader of every role within %v: %v", startBound, leaders(procs))
		}
		if err := wait(50 * time.Millisecond); err != nil {
			return 0, err
		}
	}
	ready := time.Now().Truncate(time.Millisecond)
	fmt.Fprintf(out, "every role led: %v\n", leaders(procs))

	var rs []restart
	var unled []string
	for i := range s.restarts {
		if err := wait(s.spacing); err != nil {
			return 0, err
		}
		if !oneEach() {
			unled = append(unled, fmt.Sprintf("before restart %d: %v", i+1, leaders(procs)))
		}
		r := restart{Killed: time.Now()}
		srv.Kill()
		if err := srv.Restart(); err != nil {
			return 0, fmt.Errorf("restart %d: %w", i+1, err)
		}
		r.Up = time.Now()
		rs = append(rs, r)
		fmt.Fprintf(out, "restart %d at %s: down %v\n", i+1, r.Killed.UTC().Format(tsLayout), r.Up.Sub(r.Killed).Round(time.Millisecond))
	}
	if err := wait(s.spacing); err != nil {
		return 0, err
	}
	if !oneEach() {
		unled = append(unled, fmt.Sprintf("after the last restart: %v", leaders(procs)))
	}
	// Everything until here is measured; the shutdown's releases are not.
	// Log timestamps are truncated to the millisecond: truncated too, the
	// end excludes every line logged after it.
	until := time.Now().Truncate(time.Millisecond)
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			return 0, fmt.Errorf("%s did not exit within 30s of SIGTERM", p.name)
		}
		if p.err != nil {
			return 0, fmt.Errorf("%s exited with %v after SIGTERM; see %s.log", p.name, p.err, p.name)
		}
	}

	var events, runs []event
	for _, p := range procs {
		evs, rns := p.snapshot()
		for _, ev := range evs {
			if ev.At.Before(until) {
				events = append(events, ev)
			}
		}
		runs = append(runs, rns...)
	}
	ts := tenures(events, until)
	overlaps, leaderless := windows(ts, roles, ready, until)
	stats := summarize(rs, overlaps, leaderless, events, runs)
	// Who led each role just before each restart and just before the next
	// one (or the end).
	handovers := make([]string, len(rs))
	for i, r := range rs {
		next := until
		if i+1 < len(rs) {
			next = rs[i+1].Killed
		}
		var per []string
		for _, role := range roles {
			per = append(per, fmt.Sprintf("%s %s>%s", role,
				leaderAt(ts, role, r.Killed.Add(-time.Millisecond)), leaderAt(ts, role, next.Add(-time.Millisecond))))
		}
		handovers[i] = strings.Join(per, ", ")
	}
	code := report(out, s, rs, stats, overlaps, handovers, unled)
	return code, nil
}

// report prints the table and the verdict and returns the exit code.
func report(out io.Writer, s settings, rs []restart, stats []restartStats, overlaps []window, handovers, unled []string) int {
	fmt.Fprintf(out, "\n%-7s %8s %11s %-34s %11s %11s %15s  %s\n", "restart", "overlaps", "max overlap", "leaderless per role",
		"terms ended", "first ended", "runs in overlap", "leader before>after")
	var maxOverlap, maxLeaderless time.Duration
	for i, st := range stats {
		name := "before"
		if i > 0 {
			name = fmt.Sprint(i)
		}
		var per []string
		for _, r := range roles {
			per = append(per, fmt.Sprintf("%s %v", r, st.Leaderless[r]))
		}
		first, who := "-", ""
		if i > 0 {
			who = handovers[i-1]
			if st.TermsEnded > 0 {
				first = st.FirstEnd.Round(time.Millisecond).String()
			}
		}
		fmt.Fprintf(out, "%-7s %8d %11v %-34s %11d %11s %15d  %s\n", name, st.Overlaps, st.MaxOverlap, strings.Join(per, ", "),
			st.TermsEnded, first, st.RunsOverlap, who)
		maxOverlap = max(maxOverlap, st.MaxOverlap)
		if i > 0 {
			maxLeaderless = max(maxLeaderless, st.MaxLeaderless)
		}
	}
	for _, w := range overlaps {
		fmt.Fprintf(out, "overlap: %s %s..%s (%v) by %s, after restart %d\n", w.Role,
			w.Start.UTC().Format(tsLayout), w.End.UTC().Format(tsLayout), w.Len(), strings.Join(w.Procs, "+"), bucket(rs, w.Start)+1)
	}
	fmt.Fprintf(out, "\nmax overlap %v (bound %v), longest leaderless stretch after a restart %v; timestamps have 1ms resolution\n",
		maxOverlap, s.maxOverlap, maxLeaderless)
	code := 0
	if maxOverlap > s.maxOverlap {
		fmt.Fprintf(out, "FAIL: an overlap of %v exceeds %v\n", maxOverlap, s.maxOverlap)
		code = 1
	}
	for _, u := range unled {
		fmt.Fprintf(out, "FAIL: not one leader per role %s\n", u)
		code = 1
	}
	if code == 0 {
		fmt.Fprintln(out, "PASS")
	}
	return code
}
