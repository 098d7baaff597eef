package leadership_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
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
