package leadership_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
)

// handOverTrio starts a, b and c for role "billing" over one memlock,
// a first, so a leads, and returns them.
func handOverTrio(t *testing.T) (lock interface {
	RequestHandOver(ctx context.Context, key, owner, target string) error
}, a, b, c *leadership.Elector) {
	t.Helper()
	l := memLock(t)
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
	return l, a, b, c
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
