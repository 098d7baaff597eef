package etcdlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
	"github.com/hostloom/hostloom/core/locking/etcdlock/etcdtest"
)

// waitFor bounds every wait for something that must happen.
const waitFor = 20 * time.Second

// etcdOpts: the shortest lease etcd grants here (one second).
func etcdOpts() leadership.Options {
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval = time.Second, 300*time.Millisecond, 500*time.Millisecond
	return o
}

// startElectors starts an elector for role "billing" over each client,
// each with a provider of its own under prefix (simulated processes),
// behind a FaultLock.
func startElectors(t *testing.T, clients []*clientv3.Client, prefix string, opts ...leadership.Option) ([]*leadership.Elector, []*leadershiptest.FaultLock) {
	return startElectorsOver(t, clients, prefix, true, opts...)
}

// startElectorsOver is startElectors, with the electors over the locks
// themselves (every capability shows) when faulty is false.
func startElectorsOver(t *testing.T, clients []*clientv3.Client, prefix string, faulty bool, opts ...leadership.Option) ([]*leadership.Elector, []*leadershiptest.FaultLock) {
	t.Helper()
	var electors []*leadership.Elector
	var faults []*leadershiptest.FaultLock
	for i, cl := range clients {
		l, _ := newLock(t, cl, prefix, "test")
		t.Cleanup(func() { _ = l.Close() })
		fault := leadershiptest.NewFaultLock(l)
		var lock locking.Lock = l
		if faulty {
			lock = fault
		}
		e, err := leadership.NewElector("billing", lock, etcdOpts(), append(opts, leadership.WithIdentity("node-"+string(rune('a'+i))))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			fault.Clear()
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			_ = e.Stop(ctx)
		})
		electors = append(electors, e)
		faults = append(faults, fault)
	}
	return electors, faults
}

// sampler samples IsLeader of every elector until end and keeps the
// highest number of simultaneous leaders seen.
type sampler struct {
	most atomic.Int32
	stop chan struct{}
	wg   sync.WaitGroup
}

func sample(electors []*leadership.Elector) *sampler {
	s := &sampler{stop: make(chan struct{})}
	s.wg.Go(func() {
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(200 * time.Microsecond):
			}
			n := int32(0)
			for _, e := range electors {
				if e.IsLeader() {
					n++
				}
			}
			if n > s.most.Load() {
				s.most.Store(n)
			}
		}
	})
	return s
}

func (s *sampler) end(t *testing.T) {
	t.Helper()
	close(s.stop)
	s.wg.Wait()
	if n := s.most.Load(); n > 1 {
		t.Fatalf("%d leaders at once", n)
	}
}

// waitLeader waits until one of electors other than not leads.
func waitLeader(t *testing.T, electors []*leadership.Elector, not *leadership.Elector) (*leadership.Elector, time.Duration) {
	t.Helper()
	began := time.Now()
	for time.Since(began) < waitFor {
		for _, e := range electors {
			if e != not && e.IsLeader() {
				return e, time.Since(began)
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no leader within %v", waitFor)
	return nil, 0
}

// TestElector_N2_HandoverParticipantsResign: over the shared cluster, a
// graceful Stop hands over through the release event, every elector is a
// participant with the holder marked, and a resign request moves the
// role. Durations are logged, not asserted.
func TestElector_N2_HandoverParticipantsResign(t *testing.T) {
	cl := newClient(t)
	electors, _ := startElectorsOver(t, []*clientv3.Client{cl, cl, cl}, prefixOf(t), false)
	s := sample(electors)
	first, _ := waitLeader(t, electors, nil)
	deadline := time.Now().Add(waitFor)
	for {
		ps, err := first.Participants(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		leaders := 0
		for _, p := range ps {
			if p.Leader {
				leaders++
			}
		}
		if len(ps) == 3 && leaders == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("participants = %+v, want 3 with one leader", ps)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := first.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	second, took := waitLeader(t, electors, first)
	t.Logf("handover after Resign: %v", took)
	stopped := time.Now()
	if err := second.Stop(context.Background()); err != nil {
		t.Fatalf("Stop of the leader: %v", err)
	}
	third, _ := waitLeader(t, electors, second)
	t.Logf("handover after Stop: %v", time.Since(stopped))
	if third == second {
		t.Fatal("the stopped elector leads")
	}
	s.end(t)
}

// TestElector_N4_AbandonedLeaderSucceededAfterItsLease: a leader that
// stops renewing (its process froze) is succeeded once its lease ran out
// on the server, and its term ended first.
func TestElector_N4_AbandonedLeaderSucceededAfterItsLease(t *testing.T) {
	cl := newClient(t)
	electors, faults := startElectors(t, []*clientv3.Client{cl, cl, cl}, prefixOf(t))
	s := sample(electors)
	old, _ := waitLeader(t, electors, nil)
	for i, e := range electors {
		if e == old {
			for _, op := range []leadershiptest.Op{leadershiptest.OpAcquire, leadershiptest.OpExtend, leadershiptest.OpRelease} {
				faults[i].Set(op, leadershiptest.FaultHang)
			}
		}
	}
	tok := old.Token()
	next, took := waitLeader(t, electors, old)
	t.Logf("takeover after abandonment: %v (lease %v, retry %v)", took, etcdOpts().Lease, etcdOpts().RetryInterval)
	if tok.Err() == nil {
		t.Fatal("a successor leads while the abandoned leader's token is live")
	}
	if next == old {
		t.Fatal("the abandoned elector leads")
	}
	s.end(t)
}

// TestElector_N5_MemberFaults: three electors, each with a client of its
// own, over a cluster of their own whose members fail: the etcd leader
// killed, a member paused (SIGSTOP), the killed member restarted. The
// role never has two leaders, and has one after every fault.
func TestElector_N5_MemberFaults(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	var clients []*clientv3.Client
	for range 3 {
		cl, err := c.Client()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Close() })
		clients = append(clients, cl)
	}
	electors, _ := startElectors(t, clients, "faults/")
	s := sample(electors)
	waitLeader(t, electors, nil)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader.Kill()
	_, took := waitLeader(t, electors, nil)
	t.Logf("a leader %v after the etcd leader was killed", took)
	var paused *etcdtest.Member
	for _, m := range c.Members() {
		if m != leader {
			paused = m
			break
		}
	}
	if err := leader.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := paused.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * etcdOpts().Lease) // a fault to live through, not a wait for an event
	_, took = waitLeader(t, electors, nil)
	t.Logf("a leader %v after two leases with a member paused", took)
	if err := paused.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(waitFor); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, electors, nil)
	s.end(t)
}

// TestElector_E7_UnreachableEndpointsAtStart: with no etcd at the
// endpoints, Start succeeds, nobody leads, and the outage is logged once.
func TestElector_E7_UnreachableEndpointsAtStart(t *testing.T) {
	cl, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://127.0.0.1:1"}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("clientv3.New without a reachable endpoint: %v", err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	p, err := etcdlock.New(cl, etcdlock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := locking.New(p, locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	core, logs := observer.New(zapcore.DebugLevel)
	e, err := leadership.NewElector("billing", l, etcdOpts(), leadership.WithLogger(zap.New(core)))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatalf("Start with unreachable endpoints = %v, want nil", err)
	}
	defer func() {
		// The deregistration cannot reach etcd (the etcd client waits for a
		// connection until the call's context ends): Stop returns by its
		// context's end.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	}()
	deadline := time.Now().Add(waitFor)
	for logs.FilterMessage("LeadershipProviderUnavailable").Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the outage was not logged")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Several attempts later: still one log line, nobody leads.
	time.Sleep(3 * etcdOpts().RetryInterval)
	if n := logs.FilterMessage("LeadershipProviderUnavailable").Len(); n != 1 {
		t.Fatalf("LeadershipProviderUnavailable logged %d times, want once per outage", n)
	}
	if e.IsLeader() {
		t.Fatal("leads without a reachable cluster")
	}
}

// TestElector_H4_N2_HandOverInOneWrite: a hand-over to a named
// participant moves the role to it (the handover transaction stores it
// as the holder, and it adopts the key), never with two leaders, and its
// fence is above the leaver's.
func TestElector_H4_N2_HandOverInOneWrite(t *testing.T) {
	cl := newClient(t)
	electors, _ := startElectorsOver(t, []*clientv3.Client{cl, cl, cl}, prefixOf(t), false)
	s := sample(electors)
	first, _ := waitLeader(t, electors, nil)
	var to *leadership.Elector
	for _, e := range electors {
		if e != first {
			to = e
		}
	}
	deadline := time.Now().Add(waitFor)
	for {
		ps, err := first.Participants(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("participants = %+v, want 3", ps)
		}
		time.Sleep(50 * time.Millisecond)
	}
	before := first.Fence()
	began := time.Now()
	if err := first.HandOver(context.Background(), to.Identity()); err != nil {
		t.Fatal(err)
	}
	for !to.IsLeader() {
		if time.Since(began) > waitFor {
			t.Fatalf("%s does not lead %v after the hand-over", to.Identity(), waitFor)
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("hand-over to %s: %v", to.Identity(), time.Since(began))
	if after := to.Fence(); after <= before {
		t.Fatalf("fence after the hand-over %d, want above %d", after, before)
	}
	s.end(t)
}
