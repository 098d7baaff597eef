package pglock_test

import (
	"context"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

// B2: a free key waits Yield for a live participant of higher priority:
// meanwhile a lower-priority caller is refused with the wait left and no
// holder, the higher one takes it at once, and once the wait has passed
// the lower one may. An extension reports a higher-priority participant
// registered for a full lease (Preempt) and counts the live ones.
func TestAcquire_B2_YieldToHigherPriority(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	p := newProvider(t, pool, pglock.Options{})
	req := func(owner string, prio int) locking.AcquireRequest {
		return locking.AcquireRequest{Key: "k", Value: "v-" + owner, TTL: time.Minute, Owner: owner,
			ParticipantTTL: time.Minute, Priority: prio, Yield: 300 * time.Millisecond}
	}
	// x holds; hi (priority 5) registers by trying.
	if r, err := p.Acquire(ctx, req("x", 0)); err != nil || !r.Acquired {
		t.Fatalf("x: %+v, %v", r, err)
	}
	r, err := p.Acquire(ctx, req("hi", 5))
	if err != nil || r.Acquired || r.HolderValue != "v-x" || r.TopPriority != 5 {
		t.Fatalf("hi while x holds: %+v, %v; want refused by x, top priority 5", r, err)
	}
	if ok, err := p.Release(ctx, locking.ReleaseRequest{Key: "k", Value: "v-x"}); err != nil || !ok {
		t.Fatalf("release: %v, %v", ok, err)
	}
	// lo (priority 1) finds the key free but must wait for hi.
	r, err = p.Acquire(ctx, req("lo", 1))
	if err != nil || r.Acquired || r.HolderValue != "" || r.TopPriority != 5 || r.Remaining <= 0 || r.Remaining > 300*time.Millisecond {
		t.Fatalf("lo on a free key: %+v, %v; want refused with the wait left (0, 300ms], no holder, top 5", r, err)
	}
	// The wait is measured from the first refusal, not restarted.
	time.Sleep(100 * time.Millisecond)
	if r2, err := p.Acquire(ctx, req("lo", 1)); err != nil || r2.Acquired || r2.Remaining >= r.Remaining {
		t.Fatalf("lo again: %+v, %v; want a shorter wait than %v", r2, err, r.Remaining)
	}
	time.Sleep(250 * time.Millisecond)
	r, err = p.Acquire(ctx, req("lo", 1))
	if err != nil || !r.Acquired {
		t.Fatalf("lo after the wait: %+v, %v; want acquired", r, err)
	}
	// lo's extension sees hi, live and registered for a full lease
	// (its TTL here: 10ms), and counts three live participants.
	time.Sleep(20 * time.Millisecond)
	e, err := p.Extend(ctx, locking.ExtendRequest{Key: "k", Value: "v-lo", TTL: 10 * time.Millisecond, Owner: "lo", ParticipantTTL: time.Minute, Priority: 1})
	if err != nil || !e.Extended || !e.Preempt || e.Participants != 3 {
		t.Fatalf("lo's extension: %+v, %v; want extended, preempt, 3 participants", e, err)
	}
	// A higher priority takes a free key at once.
	time.Sleep(20 * time.Millisecond) // lo's lease of 10ms runs out
	if r, err := p.Acquire(ctx, req("hi", 5)); err != nil || !r.Acquired {
		t.Fatalf("hi on the free key: %+v, %v; want acquired at once", r, err)
	}
}
