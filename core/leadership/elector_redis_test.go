package leadership_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// redisNode is one simulated process: its own client, provider and lock.
type redisNode struct {
	client *redis.Client
	lock   *locking.DistributedLock
	fault  *leadershiptest.FaultLock
}

func newRedisNode(tb testing.TB, srv *redistest.Server) *redisNode {
	tb.Helper()
	c := srv.Client(tb)
	p := redislock.New(c)
	tb.Cleanup(func() { _ = p.Close() }) // before the client closes (LIFO)
	o := locking.DefaultOptions()
	o.Namespace = "test"
	lock, err := locking.New(p, o)
	if err != nil {
		tb.Fatal(err)
	}
	return &redisNode{client: c, lock: lock, fault: leadershiptest.NewFaultLock(lock)}
}

// redisOpts: sub-second lease, for quick takeovers in real time.
func redisOpts() leadership.Options {
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval = time.Second, 300*time.Millisecond, 500*time.Millisecond
	return o
}

// leaderSampler samples IsLeader of every elector until stopped and keeps
// the highest number of simultaneous leaders seen.
type leaderSampler struct {
	max     atomic.Int32
	samples atomic.Int64
	stop    chan struct{}
	wg      sync.WaitGroup
}

func sampleLeaders(electors func() []*leadership.Elector) *leaderSampler {
	s := &leaderSampler{stop: make(chan struct{})}
	s.wg.Go(func() {
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			n := int32(0)
			for _, e := range electors() {
				if e.IsLeader() {
					n++
				}
			}
			if n > s.max.Load() {
				s.max.Store(n)
			}
			s.samples.Add(1)
			time.Sleep(200 * time.Microsecond)
		}
	})
	return s
}

func (s *leaderSampler) end(t *testing.T) {
	t.Helper()
	close(s.stop)
	s.wg.Wait()
	if s.max.Load() > 1 {
		t.Fatalf("%d leaders at once", s.max.Load())
	}
	if s.samples.Load() < 100 {
		t.Fatalf("only %d samples", s.samples.Load())
	}
}

// waitLeader waits (bounded by a generous liveness timeout) until exactly
// one of electors leads and returns it.
func waitLeader(t *testing.T, electors []*leadership.Elector, not *leadership.Elector) *leadership.Elector {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	won := make(chan *leadership.Elector, len(electors))
	var wg sync.WaitGroup
	for _, e := range electors {
		if e == not {
			continue
		}
		wg.Go(func() {
			if e.WaitForLeadership(ctx) == nil {
				won <- e
			}
		})
	}
	var leader *leadership.Elector
	select {
	case leader = <-won:
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	if leader == nil {
		t.Fatal("no leader within 10s")
	}
	return leader
}

func startRedisElectors(t *testing.T, srv *redistest.Server, n int) ([]*leadership.Elector, []*redisNode) {
	t.Helper()
	var electors []*leadership.Elector
	var nodes []*redisNode
	for i := range n {
		node := newRedisNode(t, srv)
		e := mustElector(t, "billing", node.fault, redisOpts(), leadership.WithIdentity("node-"+string(rune('a'+i))))
		mustStart(t, e)
		t.Cleanup(func() {
			node.fault.Clear()
			if err := e.Stop(context.Background()); err != nil {
				t.Errorf("Stop: %v", err)
			}
		})
		electors = append(electors, e)
		nodes = append(nodes, node)
	}
	return electors, nodes
}

func TestElector_Redis_E8_StopHandsOver(t *testing.T) {
	srv := redistest.Start(t)
	electors, _ := startRedisElectors(t, srv, 3)
	sampler := sampleLeaders(func() []*leadership.Elector { return electors })
	first := waitLeader(t, electors, nil)
	if h, ok, err := first.LookupLeader(context.Background()); err != nil || !ok || h.Owner != leadership.Describe(first).Identity {
		t.Fatalf("Leader() = %+v, %v, %v; want %s", h, ok, err, leadership.Describe(first).Identity)
	}
	if err := first.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if first.IsLeader() || !tokenDone(first) {
		t.Fatal("stopped leader still leads")
	}
	second := waitLeader(t, electors, first)
	if second == first {
		t.Fatal("the stopped elector leads")
	}
	if err := second.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	third := waitLeader(t, electors, second)
	if third == first || third == second {
		t.Fatal("wrong elector leads after resignation")
	}
	time.Sleep(1500 * time.Millisecond) // renewals over more than one lease
	if !third.IsLeader() || third.Term() != 1 {
		t.Fatalf("leader lost its term: leader %v term %d", third.IsLeader(), third.Term())
	}
	sampler.end(t)
}

func TestElector_Redis_E8_AbandonedLeaderExpires(t *testing.T) {
	srv := redistest.Start(t)
	electors, nodes := startRedisElectors(t, srv, 3)
	sampler := sampleLeaders(func() []*leadership.Elector { return electors })
	old := waitLeader(t, electors, nil)
	var oldNode *redisNode
	for i, e := range electors {
		if e == old {
			oldNode = nodes[i]
		}
	}
	// The leader's process freezes: no renewal, no release, no attempt.
	for _, op := range []leadershiptest.Op{leadershiptest.OpAcquire, leadershiptest.OpExtend, leadershiptest.OpRelease} {
		oldNode.fault.Set(op, leadershiptest.FaultHang)
	}
	abandoned := time.Now()
	tok := old.Token()
	next := waitLeader(t, electors, old)
	took := time.Since(abandoned)
	if tok.Err() == nil {
		t.Fatal("a successor leads while the abandoned leader's token is live")
	}
	// The successor waited for the lease to run out at the server, not for
	// a release.
	if took < 300*time.Millisecond {
		t.Fatalf("took over %v after abandonment, before the lease could expire", took)
	}
	if next == old {
		t.Fatal("the abandoned elector leads")
	}
	sampler.end(t)
}

func TestElector_Redis_E7_OutageAndRecovery(t *testing.T) {
	srv := redistest.Start(t)
	log, logs := observed()
	var electors []*leadership.Elector
	for range 2 {
		node := newRedisNode(t, srv)
		e := mustElector(t, "billing", node.lock, redisOpts(), leadership.WithLogger(log))
		mustStart(t, e)
		t.Cleanup(func() { _ = e.Stop(context.Background()) })
		electors = append(electors, e)
	}
	sampler := sampleLeaders(func() []*leadership.Elector { return electors })
	leader := waitLeader(t, electors, nil)
	tok := leader.Token()
	srv.Kill()
	// Nobody leads while the provider is unreachable: the leader's term
	// ends by its lease (1s) at the latest.
	select {
	case <-tok.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the leader kept its term through the outage")
	}
	// Each elector logs the outage once (the client's own dial retries can
	// delay a failing call past its context, so wait for both).
	waitLogs := func(msg string, n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for logs.FilterMessage(msg).Len() < n && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := logs.FilterMessage(msg).Len(); got != n {
			t.Fatalf("%s logged %d times, want %d", msg, got, n)
		}
	}
	waitLogs("LeadershipProviderUnavailable", 2)
	time.Sleep(2 * time.Second) // several failing retries later
	for _, e := range electors {
		if e.IsLeader() {
			t.Fatal("a leader while Redis is down")
		}
	}
	if n := logs.FilterMessage("LeadershipProviderUnavailable").Len(); n != 2 {
		t.Fatalf("outage logged %d times, want once per elector", n)
	}
	srv.Restart(t)
	waitLeader(t, electors, nil)
	waitLogs("LeadershipProviderRecovered", 2)
	sampler.end(t)
}

// TestElector_O4_Redis_AuthErrorIsAConfigErrorNotAnOutage: a server that
// requires a password the client does not send, or a wrong one: one Error
// naming the credentials, no outage Warn; once the server stops asking,
// the elector leads and says the provider recovered.
func TestElector_O4_Redis_AuthErrorIsAConfigErrorNotAnOutage(t *testing.T) {
	for _, password := range []string{"", "wrong-secret"} {
		t.Run(map[bool]string{true: "no password", false: "wrong password"}[password == ""], func(t *testing.T) {
			srv := redistest.Start(t)
			authed := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: "server-secret"})
			defer authed.Close()
			if err := srv.Client(t).ConfigSet(t.Context(), "requirepass", "server-secret").Err(); err != nil {
				t.Fatal(err)
			}
			e, logs := loggedElectorAt(t, &redis.Options{Addr: srv.Addr(), Password: password, MaxRetries: -1})
			defer mustStop(t, e)
			waitFor(t, func() bool { return logs.FilterMessage("LeadershipProviderAuthFailed").Len() > 0 })
			time.Sleep(1200 * time.Millisecond) // two more attempts at RetryInterval
			failed := logs.FilterMessage("LeadershipProviderAuthFailed").All()
			if len(failed) != 1 || failed[0].Level != zapcore.ErrorLevel || !strings.Contains(failed[0].ContextMap()["error"].(string), "refused the credentials") {
				t.Fatalf("LeadershipProviderAuthFailed = %v, want once at Error", failed)
			}
			for _, w := range logs.FilterMessage("LeadershipProviderUnavailable").All() {
				if w.Level > zapcore.DebugLevel {
					t.Fatalf("an authentication error was reported as an outage: %v", w)
				}
			}
			if err := authed.ConfigSet(t.Context(), "requirepass", "").Err(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if err := e.WaitForLeadership(ctx); err != nil {
				if password != "" {
					// A client that sends a password the server no longer
					// wants is still refused (AUTH with no password set):
					// it stays a configuration error.
					return
				}
				t.Fatalf("no leadership after the server stopped asking for a password: %v", err)
			}
			if logs.FilterMessage("LeadershipProviderRecovered").Len() != 1 {
				t.Fatalf("LeadershipProviderRecovered not logged: %v", logs.All())
			}
		})
	}
}

// TestElector_O5_OutageLogNamesTheCause: a server that refuses
// connections: the outage Warn carries the dial error, not only a context
// error.
func TestElector_O5_OutageLogNamesTheCause(t *testing.T) {
	e, logs := loggedElectorAt(t, &redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer func() {
		// The deregistration cannot reach the server either: Stop logs it
		// at Warn and returns nil, since no lease was ever held (an
		// orchestrator sees a clean stop during an outage).
		if err := e.Stop(context.Background()); err != nil {
			t.Errorf("Stop during the outage = %v, want nil (no lease held)", err)
		}
		d := logs.FilterMessage("LeadershipDeregisterFailed").All()
		if len(d) != 1 || d[0].Level != zapcore.WarnLevel {
			t.Errorf("LeadershipDeregisterFailed logged %d times, want once at Warn", len(d))
		} else if msg, _ := d[0].ContextMap()["error"].(string); !strings.Contains(msg, "connection refused") {
			t.Errorf("deregistration Warn = %v, want the refused connection", d[0].ContextMap())
		}
	}()
	waitFor(t, func() bool { return logs.FilterMessage("LeadershipProviderUnavailable").Len() > 0 })
	w := logs.FilterMessage("LeadershipProviderUnavailable").All()[0]
	if msg, _ := w.ContextMap()["error"].(string); w.Level != zapcore.WarnLevel || !strings.Contains(msg, "connection refused") {
		t.Fatalf("outage log = %s %v, want a Warn naming the refused connection", w.Level, w.ContextMap())
	}
}

// loggedElectorAt starts an elector for billing over its own client with
// o, logging to the returned observer; the client and provider close at
// cleanup, after the test's deferred Stop.
func loggedElectorAt(t *testing.T, o *redis.Options) (*leadership.Elector, *observer.ObservedLogs) {
	t.Helper()
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	p := redislock.New(c)
	t.Cleanup(func() { _ = p.Close() }) // before the client closes (LIFO)
	lock, err := locking.New(p, locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	log, logs := observed()
	e := mustElector(t, "billing", lock, redisOpts(), leadership.WithLogger(log))
	mustStart(t, e)
	return e, logs
}
