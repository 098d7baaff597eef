package main

// The replica process of the scale section: hlbench re-executes itself
// with the hidden first argument replicaCmd. A replica runs one elector per
// role over its own Redis client, all with one identity (its name) and, with
// -balance, one balance group: one leadership.Process, as a production process
// (an fx app through leadershipfx) has. It reports
// on stdout as JSON lines (replicaMsg) and reads commands from stdin, one a
// line: "mem" reports its memory; "stop" or the end of stdin (the parent
// exited) stops every elector gracefully and exits.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof" // HLBENCH_PPROF_DIR
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostloom/hostloom/bench/internal/locks"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	hlredis "github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// replicaCmd is the hidden subcommand that turns hlbench into a replica.
const replicaCmd = "__scale-replica"

// replicaMsg is one line a replica writes on stdout. Times are Unix
// nanoseconds of the machine's wall clock, shared by parent and replicas.
type replicaMsg struct {
	Type string `json:"type"` // starting, ready, status, mem, stopped
	Name string `json:"name"`
	At   int64  `json:"at"`

	// status: leadership as the replica's OnChange subscribers saw it.
	Leads      int64   `json:"leads,omitempty"`       // acquired − lost
	Acquired   int64   `json:"acquired,omitempty"`    // acquisitions since start
	Lost       int64   `json:"lost,omitempty"`        // losses (resign, stop, expiry) since start
	LastChange int64   `json:"last_change,omitempty"` // Change.At of the latest transition
	CPU        float64 `json:"cpu,omitempty"`         // the replica's CPU time so far (user + system), seconds
	Writes     int64   `json:"writes,omitempty"`      // requests written on the client's connections
	Resigned   int64   `json:"resigned,omitempty"`    // losses by Resign (balance handovers) since start
	Refused    int64   `json:"refused,omitempty"`     // losses to a refused renewal or a newer holder since start
	Expired    int64   `json:"expired,omitempty"`     // losses to a lease that ran out before a renewal since start

	// mem: after two GCs; Base* before the electors were built.
	HeapBytes      int64 `json:"heap,omitempty"`
	StackBytes     int64 `json:"stack,omitempty"`
	Goroutines     int   `json:"goroutines,omitempty"`
	BaseHeap       int64 `json:"base_heap,omitempty"`
	BaseStack      int64 `json:"base_stack,omitempty"`
	BaseGoroutines int   `json:"base_goroutines,omitempty"`

	// status and mem: the highest instant so far, sampled every 5 ms
	// without forcing a GC (runtime/metrics): goroutine stacks and their
	// count exactly, the heap as live at the latest GC.
	PeakStack      int64 `json:"peak_stack,omitempty"`
	PeakHeap       int64 `json:"peak_heap,omitempty"`
	PeakGoroutines int   `json:"peak_goroutines,omitempty"`
}

// runReplica is the replica's main; it returns the exit code.
func runReplica(args []string) int {
	fs := flag.NewFlagSet(replicaCmd, flag.ContinueOnError)
	name := fs.String("name", "", "identity of this replica")
	addr := fs.String("addr", "", "redis-server address")
	ns := fs.String("ns", "", "lock namespace")
	roles := fs.Int("roles", 0, "number of roles")
	balance := fs.Bool("balance", false, "electors balance through their process's balance group")
	lease := fs.Duration("lease", leadership.DefaultLease, "Options.Lease")
	renew := fs.Duration("renew", leadership.DefaultRenewInterval, "Options.RenewInterval")
	retry := fs.Duration("retry", leadership.DefaultRetryInterval, "Options.RetryInterval")
	withFx := fs.Bool("fx", false, "run the roles in an fx app through leadershipfx (one Role, the rest with leadershipfx.New), as a service does")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *name == "" || *addr == "" || *ns == "" || *roles <= 0 {
		fmt.Fprintf(os.Stderr, "%s: -name, -addr, -ns and -roles > 0 are required (got name %q, addr %q, ns %q, roles %d)\n", replicaCmd, *name, *addr, *ns, *roles)
		return 2
	}
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval, o.Balance = *lease, *renew, *retry, *balance
	if dir := os.Getenv("HLBENCH_PPROF_DIR"); dir != "" {
		// For diagnosing a large run by hand: each replica serves
		// net/http/pprof on a loopback port it writes to DIR/NAME.addr.
		if err := servePprof(dir, *name); err != nil {
			fmt.Fprintf(os.Stderr, "%s %s: pprof: %v\n", replicaCmd, *name, err)
			return 1
		}
	}
	if err := serveReplica(*name, *addr, *ns, *roles, *withFx, o, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "%s %s: %v\n", replicaCmd, *name, err)
		return 1
	}
	return 0
}

// replicaState counts one replica's transitions.
type replicaState struct {
	acquired, lost, lastChange, writes atomic.Int64
	resigned, refused, expired         atomic.Int64
	peak                               peakMem
}

func (s *replicaState) status(name string) replicaMsg {
	acq, lost := s.acquired.Load(), s.lost.Load()
	m := replicaMsg{Type: "status", Name: name, At: time.Now().UnixNano(), Leads: acq - lost, Acquired: acq, Lost: lost,
		LastChange: s.lastChange.Load(), Writes: s.writes.Load(), CPU: cpuSeconds(),
		Resigned: s.resigned.Load(), Refused: s.refused.Load(), Expired: s.expired.Load()}
	s.peak.fill(&m)
	return m
}

// onChange counts one transition of a replica's elector.
func (s *replicaState) onChange(ch leadership.Change) {
	if ch.IsLeader {
		s.acquired.Add(1)
	} else {
		s.lost.Add(1)
	}
	switch ch.Reason {
	case leadership.Resigned:
		s.resigned.Add(1)
	case leadership.Refused:
		s.refused.Add(1)
	case leadership.Expired:
		s.expired.Add(1)
	}
	for at := ch.At.UnixNano(); ; {
		prev := s.lastChange.Load()
		if at <= prev || s.lastChange.CompareAndSwap(prev, at) {
			break
		}
	}
}

func serveReplica(name, addr, ns string, roles int, withFx bool, o leadership.Options, in io.Reader, out io.Writer) error {
	var outMu sync.Mutex
	enc := json.NewEncoder(out)
	emit := func(m replicaMsg) {
		outMu.Lock()
		defer outMu.Unlock()
		_ = enc.Encode(m) // the parent gone: stdin ends too, and we stop
	}
	st := &replicaState{}
	c := redis.NewClient(locks.RedisOptions(addr, &st.writes))
	defer c.Close()
	p := hlredis.New(c)
	defer p.Close()
	lo := locking.DefaultOptions()
	lo.Namespace = ns
	lock, err := locking.New(p, lo)
	if err != nil {
		return err
	}
	base := memNow()

	// One process, as a production app has: its identity, its balance
	// group, its leave; with -fx, the process of an fx app's leadershipfx
	// roles.
	var logger *zap.Logger
	if o.Balance && os.Getenv("HLBENCH_BALANCE_LOG") != "" {
		// For diagnosing a run by hand: the balance group's decisions
		// (handovers, takers gone) on stderr, at Debug. Only those, or
		// the messages whose names begin with one of the comma-separated
		// prefixes the variable gives instead of "1": the electors' own
		// lines (a million refusals in a 50,000-role run) slowed the
		// replicas enough to change what they measured.
		prefixes := []string{"LeadershipBalance"}
		if v := os.Getenv("HLBENCH_BALANCE_LOG"); v != "1" {
			prefixes = strings.Split(v, ",")
		}
		c := zap.NewDevelopmentConfig()
		c.OutputPaths = []string{"stderr"}
		if l, err := c.Build(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return messagesOnly{c, prefixes} })); err == nil {
			logger = l
		}
	}
	stopPeak := st.peak.sample(5 * time.Millisecond)
	defer stopPeak()
	newHost := newProcessHost
	if withFx {
		newHost = newFxHost
	}
	host, err := newHost(lock, name, roles, o, logger, st.onChange)
	if err != nil {
		return err
	}
	emit(replicaMsg{Type: "starting", Name: name, At: time.Now().UnixNano()})
	startErr := host.start(context.Background())
	// The process's leave, as an fx app's (leadershipfx leaves through
	// it): the leading roles hand over first, on a goroutine each, so the
	// releases and deregistrations of electors that share the lock client
	// go out together.
	stopAll := func() {
		if dir := os.Getenv("HLBENCH_PPROF_DIR"); dir != "" {
			// The leaver exits when its electors have stopped: its stop
			// is profiled here, to DIR/NAME-stop-UNIXNANO.prof.
			stopProf := profileStop(dir, name)
			defer stopProf()
		}
		ctx, cancel := context.WithTimeout(context.Background(), o.Lease)
		defer cancel()
		_ = host.leave(ctx) // an unreleased lease expires on its own
	}
	if startErr != nil {
		stopAll()
		return startErr
	}
	emit(replicaMsg{Type: "ready", Name: name, At: time.Now().UnixNano()})

	// Status: at once after a change (checked every 20 ms), else every second.
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var last replicaMsg
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			m := st.status(name)
			if m.Acquired != last.Acquired || m.Lost != last.Lost || time.Duration(m.At-last.At) >= time.Second {
				emit(m)
				last = m
			}
		}
	})

	sc := bufio.NewScanner(in)
commands:
	for sc.Scan() {
		switch sc.Text() {
		case "mem":
			m := memNow()
			emit(replicaMsg{Type: "mem", Name: name, At: time.Now().UnixNano(),
				HeapBytes: m.heap, StackBytes: m.stack, Goroutines: m.goroutines,
				BaseHeap: base.heap, BaseStack: base.stack, BaseGoroutines: base.goroutines,
				PeakStack: st.status(name).PeakStack, PeakHeap: st.status(name).PeakHeap, PeakGoroutines: st.status(name).PeakGoroutines})
		case "stop":
			break commands
		}
	}
	stopAll()
	close(done)
	wg.Wait()
	emit(st.status(name))
	emit(replicaMsg{Type: "stopped", Name: name, At: time.Now().UnixNano()})
	if err := sc.Err(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

type memSample struct {
	heap, stack int64
	goroutines  int
}

// memNow is the heap in use and the goroutine stacks after two GCs.
func memNow() memSample {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return memSample{heap: int64(ms.HeapAlloc), stack: int64(ms.StackInuse), goroutines: runtime.NumGoroutine()}
}

// servePprof serves net/http/pprof on a free loopback port and writes the
// address to dir/name.addr.
// profileStop starts a CPU profile of a replica's stop; the function it
// returns ends it.
func profileStop(dir, name string) func() {
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-stop-%d.prof", name, time.Now().UnixNano())))
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

func servePprof(dir, name string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".addr"), []byte(ln.Addr().String()), 0o644); err != nil {
		_ = ln.Close()
		return err
	}
	go func() { _ = http.Serve(ln, nil) }()
	return nil
}

// messagesOnly passes on the log lines whose message begins with one of
// prefixes and drops every other.
type messagesOnly struct {
	zapcore.Core
	prefixes []string
}

func (c messagesOnly) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	for _, p := range c.prefixes {
		if strings.HasPrefix(e.Message, p) {
			return c.Core.Check(e, ce)
		}
	}
	return ce
}

func (c messagesOnly) With(fields []zapcore.Field) zapcore.Core {
	return messagesOnly{c.Core.With(fields), c.prefixes}
}
