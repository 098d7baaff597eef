package pglock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

// pgOpts: a sub-second lease, for quick takeovers in real time.
func pgOpts() leadership.Options {
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval = time.Second, 300*time.Millisecond, 500*time.Millisecond
	return o
}

// startElectors starts n electors for role "billing", each over its own
// provider on the same database (simulated processes).
func startElectors(t *testing.T, po pglock.Options, n int) ([]*leadership.Elector, []*leadershiptest.FaultLock) {
	t.Helper()
	pool := newDB(t)
	var electors []*leadership.Elector
	var faults []*leadershiptest.FaultLock
	for i := range n {
		l, _ := newLock(t, pool, po, "test")
		fault := leadershiptest.NewFaultLock(l)
		var lock locking.Lock = fault
		if po.Table == "direct" { // no fault injection: every capability of the lock shows
			lock = l
		}
		e, err := leadership.NewElector("billing", lock, pgOpts(), leadership.WithIdentity("node-"+string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			fault.Clear()
			if err := e.Stop(context.Background()); err != nil {
				t.Errorf("Stop: %v", err)
			}
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
	deadline := began.Add(waitFor)
	for time.Now().Before(deadline) {
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

// E8, D2: Stop and Resign hand over at once through the release
// notification; with notifications disabled the candidates find the free
// key by polling. Durations are logged, not asserted.
func TestElector_E8_D2_HandoverOverPostgres(t *testing.T) {
	for _, c := range []struct {
		name string
		o    pglock.Options
	}{
		{"notifications", pglock.Options{}},
		{"polling", pglock.Options{DisableNotifications: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			electors, _ := startElectors(t, c.o, 3)
			s := sample(electors)
			first, _ := waitLeader(t, electors, nil)
			if h, ok, err := first.LookupLeader(context.Background()); err != nil || !ok || h.Owner != leadership.Describe(first).Identity {
				t.Fatalf("LookupLeader = %+v, %v, %v; want %s", h, ok, err, leadership.Describe(first).Identity)
			}
			if err := first.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			second, took := waitLeader(t, electors, first)
			t.Logf("handover after Stop: %v", took)
			if err := second.Resign(context.Background()); err != nil {
				t.Fatal(err)
			}
			// With notifications the third candidate is woken by the
			// release; polling, it tries on its own cadence and may lose
			// the race to the resigned one, back after its one
			// RetryInterval.
			not := second
			if c.o.DisableNotifications {
				not = first
			}
			third, took := waitLeader(t, electors, not)
			t.Logf("handover after Resign: %v (%s leads)", took, leadership.Describe(third).Identity)
			if third == first {
				t.Fatal("the stopped elector leads")
			}
			term := third.Term()
			time.Sleep(1500 * time.Millisecond) // renewals over more than one lease
			if !third.IsLeader() || third.Term() != term {
				t.Fatalf("leader lost its term: leader %v term %d, was %d", third.IsLeader(), third.Term(), term)
			}
			s.end(t)
		})
	}
}

// E8: a leader that stops renewing (its process froze) is succeeded once
// its lease runs out by the database's clock, not before.
func TestElector_E8_AbandonedLeaderExpiresOverPostgres(t *testing.T) {
	electors, faults := startElectors(t, pglock.Options{}, 3)
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
	t.Logf("takeover after abandonment: %v", took)
	if tok.Err() == nil {
		t.Fatal("a successor leads while the abandoned leader's token is live")
	}
	if took < 300*time.Millisecond {
		t.Fatalf("took over %v after abandonment, before the lease could run out", took)
	}
	if next == old {
		t.Fatal("the abandoned elector leads")
	}
	s.end(t)
}

// P1, D4: every running elector is a participant; the holder is marked.
func TestElector_P1_ParticipantsOverPostgres(t *testing.T) {
	electors, _ := startElectors(t, pglock.Options{Table: "direct"}, 3)
	leader, _ := waitLeader(t, electors, nil)
	deadline := time.Now().Add(waitFor)
	for {
		ps, err := leader.Participants(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		leaders := 0
		for _, p := range ps {
			if p.Leader {
				leaders++
				if p.Identity != leadership.Describe(leader).Identity {
					t.Fatalf("participant %q marked leader, want %q", p.Identity, leadership.Describe(leader).Identity)
				}
			}
		}
		if len(ps) == 3 && leaders == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("participants = %+v, want 3 with one leader", ps)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// P2, D2: every instance learns the new leader's identity from the
// acquisition notification (OnNewLeader), after a handover too.
func TestElector_P2_EveryInstanceLearnsTheLeaderOverPostgres(t *testing.T) {
	electors, _ := startElectors(t, pglock.Options{Table: "direct"}, 3)
	var mu sync.Mutex
	seen := make(map[*leadership.Elector]string)
	for _, e := range electors {
		e.OnNewLeader(func(id string) {
			mu.Lock()
			seen[e] = id
			mu.Unlock()
		})
	}
	everyoneSees := func(id string) {
		t.Helper()
		deadline := time.Now().Add(waitFor)
		for {
			mu.Lock()
			n := 0
			for _, e := range electors {
				if seen[e] == id {
					n++
				}
			}
			mu.Unlock()
			if n == len(electors) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d instances learned leader %q", n, len(electors), id)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	first, _ := waitLeader(t, electors, nil)
	if err := first.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	second, _ := waitLeader(t, electors, first)
	everyoneSees(leadership.Describe(second).Identity)
}
