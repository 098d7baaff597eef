package leadership_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// TestElector_H4_HandOverOverRedis: three processes over a real Redis.
// The leader hands the role to c, which takes it in the term after; then
// an operator's request through the lock (as hostloom handover sends it)
// makes c hand it to b. The candidate not named never leads.
func TestElector_H4_HandOverOverRedis(t *testing.T) {
	srv := redistest.Start(t)
	o := leadership.DefaultOptions() // a RetryInterval of 2s: a wrong taker would show
	names := []string{"a", "b", "c"}
	es := map[string]*leadership.Elector{}
	var op *redisNode
	for _, n := range names {
		node := newRedisNode(t, srv)
		op = node
		e := mustElector(t, "billing", node.lock, o, leadership.WithIdentity(n))
		es[n] = e
		t.Cleanup(func() { _ = e.Stop(context.Background()) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mustStart(t, es["a"])
	if err := es["a"].WaitForLeadership(ctx); err != nil {
		t.Fatal(err)
	}
	mustStart(t, es["b"])
	mustStart(t, es["c"])
	// Both candidates registered (their first, refused, attempt).
	for {
		ps, err := es["a"].Participants(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 3 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("participants %v", ps)
		case <-time.After(10 * time.Millisecond):
		}
	}
	// And their notification subscriptions live: the name of the
	// successor travels in the release's notification. A candidate whose
	// subscription comes up after it makes one immediate try without
	// knowing the name, so b could take the role before c (seen once in
	// CI, on a busy machine).
	for _, n := range []string{"b", "c"} {
		for !leadership.Describe(es[n]).Subscribed {
			select {
			case <-ctx.Done():
				t.Fatalf("%s's subscription never came up", n)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	var bLed atomic.Bool
	unsub := es["b"].OnChange(func(c leadership.Change) {
		if c.IsLeader {
			bLed.Store(true)
		}
	})
	if err := es["a"].HandOver(ctx, "c"); err != nil {
		t.Fatalf("HandOver: %v", err)
	}
	if err := es["c"].WaitForLeadership(ctx); err != nil {
		t.Fatalf("c did not take the role: %v", err)
	}
	unsub()
	if es["b"].IsLeader() || bLed.Load() || es["a"].IsLeader() {
		t.Fatalf("b led %t (%t), a leads %t", es["b"].IsLeader(), bLed.Load(), es["a"].IsLeader())
	}
	err := es["c"].HandOver(ctx, "nobody")
	if !errors.Is(err, leadership.ErrNotParticipant) {
		t.Fatalf("HandOver(nobody): %v", err)
	}

	// The operator's request, resent until heard: delivery is best effort
	// and c's subscription may not be live yet.
	for !es["b"].IsLeader() {
		if err := op.lock.RequestHandOver(ctx, "leader:billing", "c", "b"); err != nil {
			t.Fatal(err)
		}
		wait, stop := context.WithTimeout(ctx, 200*time.Millisecond)
		_ = es["b"].WaitForLeadership(wait)
		stop()
		if ctx.Err() != nil {
			t.Fatal("b did not take the role handed to it through the lock")
		}
	}
	if es["c"].IsLeader() || es["a"].IsLeader() {
		t.Fatal("two leaders after the operator's hand-over")
	}
}
