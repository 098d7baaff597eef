package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/jobrecord"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/lockingtest"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// TestRecords_V2_ExistingHashesKeepWorking: a job hash as the earlier
// releases' scripts wrote it (an attempt of slot 10 cut short, run record
// 1 in the ring) reads as that record: the next leader recovers the slot,
// and the history keeps the earlier record.
func TestRecords_V2_ExistingHashesKeepWorking(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	l, err := redislock.NewLock(c, locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	key, _ := l.JobKey("k")
	if err := c.HSet(ctx, key, "slot", "10", "open", "10", "run", "0", "att", "1", "term", "t1", "until", "1", "seq", "1", "h0", "earlier").Err(); err != nil {
		t.Fatal(err)
	}
	c.Expire(ctx, key, time.Hour)
	r, err := l.ClaimSlot(ctx, "k", jobrecord.SlotClaim{Slot: 20, Attempt: 1, Recover: true, Term: "t2", TTL: time.Hour})
	if err != nil || r.Status != jobrecord.ClaimRecoverable || r.Slot != 10 || r.Attempt != 1 || r.Wait != 0 {
		t.Fatalf("recovery claim over an existing hash = %+v, %v; want slot 10 recoverable at once", r, err)
	}
	r, err = l.ClaimSlot(ctx, "k", jobrecord.SlotClaim{Slot: 10, Attempt: 2, Term: "t2", Hold: time.Minute, Record: "recovered", TTL: time.Hour})
	if err != nil || r.Status != jobrecord.ClaimGranted || r.Seq != 2 {
		t.Fatalf("recovery = %+v, %v; want granted as run 2", r, err)
	}
	if h, err := l.JobHistory(ctx, "k", 10); err != nil || len(h) != 2 || h[0] != "recovered" || h[1] != "earlier" {
		t.Errorf("history = %v, %v; want [recovered earlier]", h, err)
	}
	// The hash keeps the earlier layout, for processes still running an
	// earlier release.
	if f := c.HMGet(ctx, key, "open", "run", "att", "term", "seq", "h1").Val(); f[0] != "10" || f[1] != "1" || f[2] != "2" || f[3] != "t2" || f[4] != "2" || f[5] != "recovered" {
		t.Errorf("hash fields = %v", f)
	}
}

// TestRecords_V1_SwapRefusedAfterAnotherWrite: a swap over a hash whose
// record fields changed since they were read (a field set, changed or
// removed, as an earlier release's scripts would) writes nothing; a
// ring entry written meanwhile does not count as a change.
func TestRecords_V1_SwapRefusedAfterAnotherWrite(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	p := redislock.New(c)
	t.Cleanup(func() { _ = p.Close() })
	w := jobrecord.Write{Fields: map[string]string{"slot": "6", "seq": "2"}, HasEntry: true, Index: 1, Entry: "r2", TTL: time.Hour}
	for _, tt := range []struct {
		name   string
		change func(key string) error
		ok     bool
	}{
		{"nothing changed", func(string) error { return nil }, true},
		{"a ring entry written", func(key string) error { return c.HSet(ctx, key, "h0", "other").Err() }, true},
		{"a field set", func(key string) error { return c.HSet(ctx, key, "paused", "1").Err() }, false},
		{"a field changed", func(key string) error { return c.HSet(ctx, key, "seq", "9").Err() }, false},
		{"a field removed", func(key string) error { return c.HDel(ctx, key, "slot").Err() }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key := "jobs:" + tt.name
			if err := c.HSet(ctx, key, "slot", "5", "seq", "1", "h0", "r1").Err(); err != nil {
				t.Fatal(err)
			}
			from, err := p.LoadRecord(ctx, key)
			if err != nil || !from.Found || len(from.Fields) != 2 {
				t.Fatalf("LoadRecord = %+v, %v; want the two record fields", from, err)
			}
			if err := tt.change(key); err != nil {
				t.Fatal(err)
			}
			if ok, err := p.SwapRecord(ctx, key, from, w); err != nil || ok != tt.ok {
				t.Fatalf("SwapRecord = %v, %v; want %v", ok, err, tt.ok)
			}
			if tt.ok {
				if f := c.HMGet(ctx, key, "slot", "seq", "h1").Val(); f[0] != "6" || f[1] != "2" || f[2] != "r2" {
					t.Errorf("fields after the swap = %v", f)
				}
				if ttl := c.PTTL(ctx, key).Val(); ttl <= 59*time.Minute {
					t.Errorf("PTTL after the swap = %v, want about 1h", ttl)
				}
			}
		})
	}
}

// TestRecords_V1_ConcurrentClaimsGrantedOnce: concurrent claims of one
// slot, each a read and a conditional write, are granted once.
func TestRecords_V1_ConcurrentClaimsGrantedOnce(t *testing.T) {
	srv := redistest.Start(t)
	l, err := redislock.NewLock(srv.Client(t), locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	lockingtest.RunJobClaimRace(t, l, 16)
}
