package leadership_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// handOverTrio starts a, b and c for role "billing" over one memlock,
// a first, so a leads, and returns them.
func handOverTrio(t *testing.T) (lock interface {
	RequestHandOver(ctx context.Context, key, owner, target string) error
}, a, b, c *leadership.Elector) {
	t.Helper()
	l := memLock(t)
	a, b, c = trioOver(t, l)
	return l, a, b, c
}

// trioOver starts a, b and c for role "billing" over l, a first, so a
// leads, and returns them.
func trioOver(t *testing.T, l locking.Lock) (a, b, c *leadership.Elector) {
	t.Helper()
	a = mustElector(t, "billing", l, fastOpts(), leadership.WithIdentity("a"))
	b = mustElector(t, "billing", l, fastOpts(), leadership.WithIdentity("b"))
	c = mustElector(t, "billing", l, fastOpts(), leadership.WithIdentity("c"))
	mustStart(t, a)
	synctest.Wait()
	mustStart(t, b)
	mustStart(t, c)
	synctest.Wait()
	if !a.IsLeader() {
		t.Fatal("a does not lead")
	}
	return a, b, c
}

// TestElector_H4_HandOverToNamedParticipant: the leader hands the role to
// c, which takes it at once (no fake time passes); b, also a candidate,
// holds back; a sits out. After a RetryInterval anyone may take a free
// role again.
func TestElector_H4_HandOverToNamedParticipant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, a, b, c := handOverTrio(t)
		begin := time.Now()
		if err := a.HandOver(context.Background(), "c"); err != nil {
			t.Fatalf("HandOver: %v", err)
		}
		if a.IsLeader() || a.Token().Err() == nil {
			t.Fatal("a leads after HandOver returned")
		}
		synctest.Wait()
		if !c.IsLeader() || b.IsLeader() || time.Since(begin) != 0 {
			t.Fatalf("c leads %t, b leads %t, after %v: want c at once", c.IsLeader(), b.IsLeader(), time.Since(begin))
		}
		if id, ok := a.Leader(); !ok || id != "c" {
			t.Fatalf("a learned leader %q %t, want c", id, ok)
		}
		for _, e := range []*leadership.Elector{a, b, c} {
			mustStop(t, e)
		}
	})
}

// TestElector_H4_OthersHoldBackARetryInterval: a hands the role to
// "ghost", a participant that never takes it (it registered through a
// refused acquisition and has no elector); b, a candidate, holds back and
// takes the free role once a RetryInterval has passed, not before. a,
// which handed the role over, does not take it back when the others'
// hold-back ends: it sits out a RetryInterval past it, as after Resign,
// so another instance gets the first chance (E8). (A sit-out that ended
// at the same instant as the hold-back let a take the role back in about
// half of the runs; b then waited for ever, as fake time went on with
// a's renewals.)
func TestElector_H4_OthersHoldBackARetryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := memLock(t)
		a := mustElector(t, "billing", l, fastOpts(), leadership.WithIdentity("a"))
		b := mustElector(t, "billing", l, fastOpts(), leadership.WithIdentity("b"))
		mustStart(t, a)
		synctest.Wait()
		mustStart(t, b)
		synctest.Wait()
		if _, err := l.TryAcquireAs(context.Background(), "leader:billing", fastOpts().Lease, "ghost"); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("ghost's acquisition: %v, want refused (it registers)", err)
		}
		var ledAt time.Time
		b.OnChange(func(c leadership.Change) {
			if c.IsLeader && ledAt.IsZero() {
				ledAt = c.At
			}
		})
		begin := time.Now()
		if err := a.HandOver(context.Background(), "ghost"); err != nil {
			t.Fatalf("HandOver: %v", err)
		}
		synctest.Wait()
		if b.IsLeader() {
			t.Fatal("b took the role handed to ghost at once")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*fastOpts().RetryInterval)
		defer cancel()
		if err := b.WaitForLeadership(ctx); err != nil {
			id, _ := a.Leader()
			t.Fatalf("b does not lead two RetryIntervals after the hand-over (leader %q, a leads %t): %v", id, a.IsLeader(), err)
		}
		synctest.Wait()
		if d := ledAt.Sub(begin); d < fastOpts().RetryInterval {
			t.Fatalf("b led %v after the hand-over, before a RetryInterval", d)
		}
		mustStop(t, a)
		mustStop(t, b)
	})
}

// TestElector_H4_UnknownIdentityNamesParticipants: an identity that is
// not a participant, the leader's own, or a call while not leading fail
// without releasing anything.
func TestElector_H4_UnknownIdentityNamesParticipants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, a, b, c := handOverTrio(t)
		err := a.HandOver(context.Background(), "zed")
		if !errors.Is(err, leadership.ErrNotParticipant) {
			t.Fatalf("HandOver(zed): %v", err)
		}
		for _, want := range []string{`"zed"`, `"a"`, `"b"`, `"c"`, `"billing"`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
		}
		if err := a.HandOver(context.Background(), "a"); !errors.Is(err, leadership.ErrNotParticipant) {
			t.Fatalf("HandOver to itself: %v", err)
		}
		if err := b.HandOver(context.Background(), "c"); !errors.Is(err, leadership.ErrNotLeader) {
			t.Fatalf("HandOver by a candidate: %v", err)
		}
		synctest.Wait()
		if !a.IsLeader() || a.Term() != 1 {
			t.Fatal("a failed hand-over released the role")
		}
		for _, e := range []*leadership.Elector{a, b, c} {
			mustStop(t, e)
		}
	})
}

// TestElector_H4_RequestThroughTheLock: an operator's hand-over request
// through the lock (as the CLI sends it) makes the leader hand the role
// to the named participant; one naming another holder is ignored.
func TestElector_H4_RequestThroughTheLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock, a, b, c := handOverTrio(t)
		if err := lock.RequestHandOver(context.Background(), "leader:billing", "b", "c"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !a.IsLeader() {
			t.Fatal("a stepped down for a request addressed to b")
		}
		begin := time.Now()
		if err := lock.RequestHandOver(context.Background(), "leader:billing", "a", "c"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if a.IsLeader() || !c.IsLeader() || b.IsLeader() || time.Since(begin) != 0 {
			t.Fatalf("after the request: a %t, b %t, c %t, after %v", a.IsLeader(), b.IsLeader(), c.IsLeader(), time.Since(begin))
		}
		for _, e := range []*leadership.Elector{a, b, c} {
			mustStop(t, e)
		}
	})
}

// probedLock is a memlock whose Features carry a participant probe
// (locking.ParticipantProbe) that answers from the identities the test
// lists, as a backend copy that lags the latest writes would, and that
// counts the probes and the full participant reads.
type probedLock struct {
	*locking.DistributedLock
	known         map[string]bool
	err           error
	probes, reads int
}

func (l *probedLock) Features() locking.Features {
	f := l.DistributedLock.Features()
	f.Probe = l
	return f
}

func (l *probedLock) IsParticipant(_ context.Context, _, owner string) (bool, error) {
	l.probes++
	return l.known[owner], l.err
}

func (l *probedLock) Participants(ctx context.Context, key string) ([]locking.Participant, error) {
	l.reads++
	return l.DistributedLock.Participants(ctx, key)
}

// TestElector_H4_ProbeFindsTheSuccessorWithoutTheFullRead: over a lock
// with a participant probe, a hand-over whose successor the probe finds
// goes ahead without reading the participants in full.
func TestElector_H4_ProbeFindsTheSuccessorWithoutTheFullRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &probedLock{DistributedLock: memLock(t), known: map[string]bool{"c": true}}
		a, b, c := trioOver(t, l)
		if err := a.HandOver(context.Background(), "c"); err != nil {
			t.Fatalf("HandOver: %v", err)
		}
		synctest.Wait()
		if !c.IsLeader() || b.IsLeader() {
			t.Fatalf("c leads %t, b leads %t: want c", c.IsLeader(), b.IsLeader())
		}
		if l.probes != 1 || l.reads != 0 {
			t.Fatalf("%d probes and %d full reads, want 1 and 0", l.probes, l.reads)
		}
		for _, e := range []*leadership.Elector{a, b, c} {
			mustStop(t, e)
		}
	})
}

// TestElector_H4_ProbeMissIsConfirmedByTheFullRead: a probe that does not
// find the successor (its copy lags the registration) or fails is
// confirmed by the full read, which hands over to a participant and
// refuses an unknown identity with the participants named; the leader's
// own identity is refused without a probe.
func TestElector_H4_ProbeMissIsConfirmedByTheFullRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &probedLock{DistributedLock: memLock(t), known: map[string]bool{}}
		a, b, c := trioOver(t, l)
		err := a.HandOver(context.Background(), "zed")
		if !errors.Is(err, leadership.ErrNotParticipant) || !strings.Contains(err.Error(), `"b"`) {
			t.Fatalf("HandOver(zed): %v, want not a participant, naming b", err)
		}
		if err := a.HandOver(context.Background(), "a"); !errors.Is(err, leadership.ErrNotParticipant) {
			t.Fatalf("HandOver to itself: %v", err)
		}
		if l.probes != 1 || l.reads != 2 {
			t.Fatalf("%d probes and %d full reads, want 1 and 2", l.probes, l.reads)
		}
		synctest.Wait()
		if !a.IsLeader() || a.Term() != 1 {
			t.Fatal("a failed hand-over released the role")
		}
		l.err = errors.New("probe failed")
		if err := a.HandOver(context.Background(), "c"); err != nil {
			t.Fatalf("HandOver(c) after a failed probe: %v", err)
		}
		synctest.Wait()
		if !c.IsLeader() || l.probes != 2 || l.reads != 3 {
			t.Fatalf("c leads %t after %d probes and %d full reads; want c, 2 and 3", c.IsLeader(), l.probes, l.reads)
		}
		for _, e := range []*leadership.Elector{a, b, c} {
			mustStop(t, e)
		}
	})
}

// pollingProvider is a provider without events (its lock polls) that
// keeps participants: an elector over it never hears a release.
type pollingProvider struct {
	locking.Provider
	locking.ParticipantRegistry
}

// slowTaker is a provider whose acquisitions by owner are held until
// gate, when set, is closed (a successor slow to take what it is handed).
type slowTaker struct {
	locking.Provider
	locking.Subscriber
	locking.ParticipantRegistry
	owner string
	gate  chan struct{}
}

func (p *slowTaker) Acquire(ctx context.Context, r locking.AcquireRequest) (locking.AcquireResult, error) {
	if g := p.gate; g != nil && r.Owner == p.owner {
		<-g
	}
	return p.Provider.Acquire(ctx, r)
}

// TestElector_H4_B1_AHandedRoleIsKeptForItsSuccessor: a hands the role to
// c, whose attempt takes almost a RetryInterval to reach the lock; b, a
// candidate that never hears the release (its lock polls), tries in the
// meantime and is refused: the lock keeps the role for c for the
// RetryInterval the other candidates hold back. c leads, and the role
// moved once. Without the hold b took the role, and it moved again.
func TestElector_H4_B1_AHandedRoleIsKeptForItsSuccessor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memlock.New()
		counted := &countingAcquires{Provider: mem, owner: "b"}
		slow := &slowTaker{Provider: mem, Subscriber: mem, ParticipantRegistry: mem, owner: "c"}
		newLock := func(p locking.Provider) *locking.DistributedLock {
			l, err := locking.New(p, locking.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		o := fastOpts()
		a := mustElector(t, "billing", newLock(mem), o, leadership.WithIdentity("a"))
		b := mustElector(t, "billing", newLock(pollingProvider{counted, mem}), o, leadership.WithIdentity("b"))
		c := mustElector(t, "billing", newLock(slow), o, leadership.WithIdentity("c"))
		mustStart(t, a)
		synctest.Wait()
		mustStart(t, b)
		mustStart(t, c)
		time.Sleep(o.Lease)
		synctest.Wait()
		if !a.IsLeader() {
			t.Fatal("a does not lead")
		}
		moves := 0
		for _, e := range []*leadership.Elector{b, c} {
			e.OnChange(func(ch leadership.Change) {
				if ch.IsLeader {
					moves++
				}
			})
		}
		gate := make(chan struct{})
		slow.gate = gate
		if err := a.HandOver(context.Background(), "c"); err != nil {
			t.Fatalf("HandOver: %v", err)
		}
		before := counted.n.Load()
		time.Sleep(o.RetryInterval * 9 / 10) // b polls meanwhile; c's attempt is on its way
		synctest.Wait()
		tried := counted.n.Load() - before
		slow.gate = nil
		close(gate)
		synctest.Wait()
		if tried == 0 {
			t.Fatal("b made no attempt while c's was on its way")
		}
		if !c.IsLeader() || b.IsLeader() || moves != 1 {
			t.Errorf("after the handover c leads %t, b leads %t, %d moves (b tried %d times meanwhile); want c after one move", c.IsLeader(), b.IsLeader(), moves, tried)
		}
		for _, e := range []*leadership.Elector{a, b, c} {
			mustStop(t, e)
		}
	})
}

// countingAcquires counts the acquisitions owner makes.
type countingAcquires struct {
	locking.Provider
	owner string
	n     atomic.Int64
}

func (p *countingAcquires) Acquire(ctx context.Context, r locking.AcquireRequest) (locking.AcquireResult, error) {
	if r.Owner == p.owner {
		p.n.Add(1)
	}
	return p.Provider.Acquire(ctx, r)
}
