//go:build linux

package leadership_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/fencing"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// pauseChildEnv carries a pauseChild configuration (JSON) to the test
// binary re-executed as a replica process by TestAssert_G3_...
const pauseChildEnv = "HOSTLOOM_G3_PAUSE_CHILD"

// pauseResource is the fencing gate resource the replicas write to.
const pauseResource = "g3-effects"

// pauseWorkers is the number of workers per replica: after SIGCONT each of
// them races the elector's own goroutines to its next Assert.
const pauseWorkers = 4

// pauseChild configures one replica process.
type pauseChild struct {
	Addr     string // redis-server
	Identity string
	Out      string // event file, appended
}

// pauseEvent is one line of a replica's event file.
type pauseEvent struct {
	Kind   string `json:"k"` // "lead", "eff" or "end"
	Worker int    `json:"w"`
	Term   uint64 `json:"term"`
	Fence  uint64 `json:"fence"`
	Seq    uint64 `json:"seq,omitempty"`
	// Fields t0 and t1 (eff): wall clock (Unix ns) just before leadership.Assert
	// (or the Token's Err) was called and just after it returned nil.
	T0 int64 `json:"t0,omitempty"`
	T1 int64 `json:"t1,omitempty"`
	// Late (end): the outcome of one more fenced write with the ended
	// term's fence: "accepted", "stale" or an error.
	Late string `json:"late,omitempty"`
}

// TestAssert_G3_PausedLeaderRecordsNoEffectAfterItsDeadline runs two
// replica processes (this test binary, re-executed) electing one role over
// a real redis-server with a 1s lease. Each of the leader's workers calls
// leadership.Assert (one of them the Token's Err, on a Token obtained
// before the pause) before each effect and records each effect with the
// wall-clock time just before that call; then it writes the effect through
// a fencing gate with the term's fence. The test stops the leader with
// SIGSTOP, waits 3 leases and until the other process has written with a
// higher fence, resumes it with SIGCONT, and waits for the resumed worker
// to report that its term ended. Twice: usually once per process.
//
// The paused leader's deadline is at most a lease after its last renewal
// was sent, which was before the stop; the process cannot run between the
// stop (confirmed in /proc) and SIGCONT, 3 leases later. So an effect whose
// Assert began after the stop would be an effect after the deadline: there
// must be none. The assertions are on that order of events, not on how
// long anything took. The gate must have accepted the fences in
// non-decreasing order, and the resumed leader's late write must be
// refused as stale.
func TestAssert_G3_PausedLeaderRecordsNoEffectAfterItsDeadline(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	gate, err := fencing.New(srv.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	procs := []*pauseProc{startPauseProc(t, srv.Addr(), "p0", dir), startPauseProc(t, srv.Addr(), "p1", dir)}

	for trial := 1; trial <= 2; trial++ {
		// Usually the successor of the previous trial.
		leader, follower, term := waitPauseLeader(t, procs, 3)
		fence := leader.fenceOf(term)
		if err := syscall.Kill(leader.pid(), syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		waitStopped(t, leader.pid())
		stopped := time.Now().UnixNano()
		time.Sleep(3 * time.Second) // three leases
		waitUntil(t, 20*time.Second, fmt.Sprintf("trial %d: %s to write with a fence above %d", trial, follower.id, fence), func() bool {
			h, err := gate.Highest(context.Background(), pauseResource)
			return err == nil && h > fence
		})
		resumed := time.Now().UnixNano()
		if err := syscall.Kill(leader.pid(), syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		var ends []pauseEvent
		if !within(20*time.Second, func() bool {
			leader.poll(t)
			e, ok := leader.endsOf(term)
			ends = e
			return ok
		}) {
			// Say where each worker is: its last events, and the
			// process's goroutines (SIGQUIT makes it print them and exit).
			for w := range pauseWorkers {
				t.Logf("%s worker %d, last events: %+v", leader.id, w, leader.lastOf(w, 3))
			}
			t.Logf("%s goroutines after SIGQUIT:\n%s", leader.id, leader.quit())
			t.Fatalf("trial %d: timed out after 20s waiting for every worker of %s that took part in term %d to end it after SIGCONT", trial, leader.id, term)
		}

		effects := leader.effectsOf(term)
		if len(effects) == 0 {
			t.Fatalf("trial %d: %s recorded no effect in term %d: nothing was tested", trial, leader.id, term)
		}
		for _, e := range effects {
			switch {
			case e.T0 >= resumed:
				t.Errorf("trial %d: %s term %d effect %d (worker %d): Assert began %v after SIGCONT and passed, although the term's deadline was before the stop",
					trial, leader.id, term, e.Seq, e.Worker, time.Duration(e.T0-resumed))
			case e.T0 >= stopped:
				t.Errorf("trial %d: %s term %d effect %d: Assert began while the process was stopped (clock?)", trial, leader.id, term, e.Seq)
			case e.T1 >= resumed:
				// Assert passed before the stop and the clock read after it
				// ran after SIGCONT: the stop landed between the two
				// (check-then-act, which only the fence covers).
				t.Logf("trial %d: %s effect %d checked before the stop and recorded after SIGCONT", trial, leader.id, e.Seq)
			}
		}
		for _, end := range ends {
			if end.Late != "stale" {
				t.Errorf("trial %d: %s worker %d's write with the ended term's fence %d: %q, want it refused as stale", trial, leader.id, end.Worker, fence, end.Late)
			}
		}
		t.Logf("trial %d: %s term %d (fence %d): %d effects by %d of %d workers, the last Assert %v before the stop; paused %v; successor %s",
			trial, leader.id, term, fence, len(effects), len(ends), pauseWorkers, time.Duration(stopped-effects[len(effects)-1].T0), time.Duration(resumed-stopped), follower.id)
	}

	for _, p := range procs {
		p.stop(t)
	}
	entries, err := gate.Entries(context.Background(), pauseResource)
	if err != nil {
		t.Fatal(err)
	}
	var highest uint64
	for i, s := range entries {
		f := strings.Fields(s)
		if len(f) != 3 {
			t.Fatalf("entry %d %q: want \"identity fence seq\"", i, s)
		}
		fence, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			t.Fatalf("entry %d %q: %v", i, s, err)
		}
		if fence < highest {
			t.Errorf("entry %d %q: fence %d accepted after fence %d", i, s, fence, highest)
		}
		highest = max(highest, fence)
	}
	if len(entries) == 0 {
		t.Error("the gate accepted no effect")
	}
}

// TestAssert_G3_HelperProcess is the replica process of
// TestAssert_G3_PausedLeaderRecordsNoEffectAfterItsDeadline; it does
// nothing in a normal test run.
func TestAssert_G3_HelperProcess(t *testing.T) {
	cfg := os.Getenv(pauseChildEnv)
	if cfg == "" {
		t.Skip("runs only as a replica process of TestAssert_G3_PausedLeaderRecordsNoEffectAfterItsDeadline")
	}
	var c pauseChild
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		t.Fatal(err)
	}
	if err := runPauseChild(c, os.Stdin); err != nil {
		t.Fatal(err)
	}
}

// runPauseChild elects the role until stdin is closed; see
// TestAssert_G3_PausedLeaderRecordsNoEffectAfterItsDeadline.
func runPauseChild(c pauseChild, stdin io.Reader) error {
	f, err := os.OpenFile(c.Out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	var mu sync.Mutex
	record := func(e pauseEvent) error {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		_, err = f.Write(append(b, '\n')) // one write per line
		return err
	}

	client := redis.NewClient(&redis.Options{Addr: c.Addr, MaxRetries: -1})
	defer client.Close()
	provider := redislock.New(client)
	defer provider.Close()
	lo := locking.DefaultOptions()
	lo.Namespace = "g3"
	lock, err := locking.New(provider, lo)
	if err != nil {
		return err
	}
	gate, err := fencing.New(client)
	if err != nil {
		return err
	}
	opts := leadership.DefaultOptions()
	opts.Lease, opts.RenewInterval, opts.RetryInterval = time.Second, 250*time.Millisecond, 100*time.Millisecond
	e, err := leadership.NewElector("paused", lock, opts, leadership.WithIdentity(c.Identity))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := e.Start(ctx); err != nil {
		return err
	}
	workErr := make(chan error, pauseWorkers)
	var seq atomic.Uint64
	for w := range pauseWorkers {
		go func() { workErr <- pauseWork(ctx, e, gate, c.Identity, w, &seq, record) }()
	}

	_, _ = io.Copy(io.Discard, stdin) // until the parent closes it
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	stopErr := e.Stop(sctx)
	cancel()
	for range pauseWorkers {
		if err := <-workErr; err != nil {
			return err
		}
	}
	if stopErr != nil && !errors.Is(stopErr, locking.ErrLeaseLost) {
		return stopErr
	}
	return nil
}

// pauseWork is one worker: while e leads, it calls Assert before each
// effect, records the effect, then writes it through gate with the term's
// fence; seqs numbers the effects of the process. The last worker checks
// Token().Err() instead of Assert. A worker never waits on the
// Token and never sleeps: stopped in the middle of its I/O, it resumes
// before the elector's timers run, so its next Assert alone must notice
// that the term is over. (With a flag that only the elector's goroutine
// clears in place of Assert, this test fails in most runs.)
func pauseWork(ctx context.Context, e *leadership.Elector, gate *fencing.Gate, id string, worker int, seqs *atomic.Uint64, record func(pauseEvent) error) error {
	check := leadership.Assert
	if worker == pauseWorkers-1 {
		// The last worker asks the Token itself, obtained before the
		// pause: its Err must check the deadline too, not wait for a timer.
		check = func(tok context.Context) error { return tok.Err() }
	}
	write := func(fence uint64, entry string) error {
		wctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return gate.Append(wctx, pauseResource, fence, entry)
	}
	for {
		if err := e.WaitForLeadership(ctx); err != nil {
			return nil
		}
		tok := e.Token()
		term := e.Term()
		fence, ok := leadership.FenceFrom(tok)
		if tok != e.Token() || leadership.Assert(tok) != nil {
			continue // the term changed or ended while reading it
		}
		if !ok {
			return errors.New("redislock issued no fence")
		}
		if err := record(pauseEvent{Kind: "lead", Worker: worker, Term: term, Fence: fence}); err != nil {
			return err
		}
		for ctx.Err() == nil {
			t0 := time.Now()
			if check(tok) != nil {
				break
			}
			t1 := time.Now()
			seq := seqs.Add(1)
			if err := record(pauseEvent{Kind: "eff", Worker: worker, Term: term, Fence: fence, Seq: seq, T0: t0.UnixNano(), T1: t1.UnixNano()}); err != nil {
				return err
			}
			if err := write(fence, fmt.Sprintf("%s %d %d", id, fence, seq)); err != nil {
				// Stale, or a write whose 2s context ran out while the
				// process was stopped mid-write: either way the term's
				// work ends here, and the late write below decides.
				break
			}
		}
		late := "accepted"
		if err := write(fence, fmt.Sprintf("%s %d late", id, fence)); errors.Is(err, fencing.ErrStale) {
			late = "stale"
		} else if err != nil {
			late = err.Error()
		}
		if err := record(pauseEvent{Kind: "end", Worker: worker, Term: term, Fence: fence, Late: late}); err != nil {
			return err
		}
	}
}

// pauseProc is a running replica process and what it has recorded.
type pauseProc struct {
	id     string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    string
	output bytes.Buffer // stdout and stderr

	offset int64
	events []pauseEvent
	done   chan struct{}
}

func startPauseProc(t *testing.T, addr, id, dir string) *pauseProc {
	t.Helper()
	cfg, err := json.Marshal(pauseChild{Addr: addr, Identity: id, Out: filepath.Join(dir, id+".jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	p := &pauseProc{id: id, out: filepath.Join(dir, id+".jsonl"), done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "-test.run=^TestAssert_G3_HelperProcess$", "-test.count=1", "-test.timeout=2m")
	p.cmd.Env = append(os.Environ(), pauseChildEnv+"="+string(cfg))
	p.cmd.Stdout, p.cmd.Stderr = &p.output, &p.output
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { // after a failure: never leave it stopped or running
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *pauseProc) pid() int { return p.cmd.Process.Pid }

// poll reads the events p appended since the last poll.
func (p *pauseProc) poll(t *testing.T) {
	t.Helper()
	f, err := os.Open(p.out)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(p.offset, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil { // EOF: an incomplete line is read again next time
			return
		}
		p.offset += int64(len(line))
		var e pauseEvent
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("%s: %q: %v", p.out, line, err)
		}
		p.events = append(p.events, e)
	}
}

// leading returns the term p leads (worker 0's last "lead" with no "end"
// after it) and how many effects it recorded in it.
func (p *pauseProc) leading() (term uint64, effects int, ok bool) {
	for _, e := range p.events {
		if e.Worker != 0 {
			continue
		}
		switch e.Kind {
		case "lead":
			term, effects, ok = e.Term, 0, true
		case "eff":
			effects++
		case "end":
			ok = false
		}
	}
	return term, effects, ok
}

func (p *pauseProc) fenceOf(term uint64) uint64 {
	for _, e := range p.events {
		if e.Kind == "lead" && e.Term == term {
			return e.Fence
		}
	}
	return 0
}

func (p *pauseProc) effectsOf(term uint64) []pauseEvent {
	var out []pauseEvent
	for _, e := range p.events {
		if e.Kind == "eff" && e.Term == term {
			out = append(out, e)
		}
	}
	return out
}

// endsOf returns the "end" events of term polled so far; ok once every
// worker that took part in the term (wrote its "lead") has written one.
// A worker that had not yet started its term when the process was stopped
// (on a loaded machine a goroutine can start late) never joins it: its
// first Assert after SIGCONT fails, so it writes neither.
func (p *pauseProc) endsOf(term uint64) (ends []pauseEvent, ok bool) {
	led, ended := map[int]bool{}, map[int]bool{}
	for _, e := range p.events {
		if e.Term != term {
			continue
		}
		switch e.Kind {
		case "lead":
			led[e.Worker] = true
		case "end":
			ends = append(ends, e)
			ended[e.Worker] = true
		}
	}
	for w := range led {
		if !ended[w] {
			return ends, false
		}
	}
	return ends, len(led) > 0
}

// lastOf returns worker's last n events polled so far.
func (p *pauseProc) lastOf(worker, n int) []pauseEvent {
	var out []pauseEvent
	for _, e := range p.events {
		if e.Worker == worker {
			out = append(out, e)
		}
	}
	return out[max(len(out)-n, 0):]
}

// quit makes p print its goroutines and exit (SIGQUIT), and returns its
// output; after 10s without an exit, what it printed so far.
func (p *pauseProc) quit() string {
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.done:
		return p.output.String()
	case <-time.After(10 * time.Second):
		return "(no exit within 10s after SIGQUIT)"
	}
}

// stop closes p's stdin and waits for it to stop its elector and exit 0.
func (p *pauseProc) stop(t *testing.T) {
	t.Helper()
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not exit 30s after its stdin closed:\n%s", p.id, p.output.String())
	}
	if !p.cmd.ProcessState.Success() {
		t.Errorf("%s: %s:\n%s", p.id, p.cmd.ProcessState, p.output.String())
	}
}

// waitPauseLeader waits until one of the two procs leads a term in which
// it recorded at least n effects, and returns it, the other and the term.
func waitPauseLeader(t *testing.T, procs []*pauseProc, n int) (leader, follower *pauseProc, term uint64) {
	t.Helper()
	waitUntil(t, 20*time.Second, "a leader recording effects", func() bool {
		for i, p := range procs {
			p.poll(t)
			if tm, effects, ok := p.leading(); ok && effects >= n {
				leader, follower, term = p, procs[1-i], tm
				return true
			}
		}
		return false
	})
	return leader, follower, term
}

// waitStopped waits until /proc reports pid stopped (state T).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	waitUntil(t, 10*time.Second, fmt.Sprintf("pid %d to stop", pid), func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// "pid (comm) S ...": the state follows the last ')'.
		i := bytes.LastIndexByte(b, ')')
		return i >= 0 && i+2 < len(b) && b[i+2] == 'T'
	})
}

// waitUntil polls cond every 10 ms until it holds, failing t after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !within(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// within polls cond every 10 ms until it holds (true) or timeout passes
// (false).
func within(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
