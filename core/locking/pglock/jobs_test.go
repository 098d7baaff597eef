package pglock_test

import (
	"context"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/locking/lockingtest"
	"github.com/hostloom/hostloom/core/locking/pglock"
	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// TestJobStore_S9_Postgres runs the job store checks (S9–S11) that
// memlock and redislock pass over a real PostgreSQL server.
func TestJobStore_S9_Postgres(t *testing.T) {
	pool := newDB(t)
	l, _ := newLock(t, pool, pglock.Options{}, "billing")
	lockingtest.RunJobStore(t, l)
}

// TestJobs_S11_RecordsExpire: a job's records expire with the TTL of their
// latest write, by the server's clock, history included.
func TestJobs_S11_RecordsExpire(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	l, _ := newLock(t, pool, pglock.Options{}, "")
	c := slotstore.SlotClaim{Slot: 5, Attempt: 1, Term: "t", Record: "r", TTL: 200 * time.Millisecond}
	if r, err := l.ClaimSlot(ctx, "k", c); err != nil || r.Status != slotstore.ClaimGranted {
		t.Fatalf("claim: %+v %v", r, err)
	}
	if st, err := l.JobStatus(ctx, "k"); err != nil || !st.HasSlot || st.TTL <= 0 || st.TTL > 200*time.Millisecond {
		t.Fatalf("status: %+v %v", st, err)
	}
	time.Sleep(300 * time.Millisecond)
	if st, err := l.JobStatus(ctx, "k"); err != nil || st.HasSlot || st.Runs != 0 {
		t.Fatalf("status after expiry: %+v %v, want nothing", st, err)
	}
	if h, err := l.JobHistory(ctx, "k", 10); err != nil || len(h) != 0 {
		t.Fatalf("history after expiry: %v %v", h, err)
	}
	// A claim over the expired set starts afresh: its history is its own.
	c.Slot, c.Record, c.TTL = 3, "fresh", time.Minute
	if r, err := l.ClaimSlot(ctx, "k", c); err != nil || r.Status != slotstore.ClaimGranted || r.Seq != 1 || r.HasPrevious {
		t.Fatalf("claim after expiry: %+v %v", r, err)
	}
	if h, err := l.JobHistory(ctx, "k", 10); err != nil || len(h) != 1 || h[0] != "fresh" {
		t.Fatalf("history after a fresh claim: %v %v", h, err)
	}
}
