package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/lockingtest"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/scheduling/slotstore"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// TestJobStore_S9_Redis runs the job store checks (S9–S11) over a real
// redis-server, with and without hash tags.
func TestJobStore_S9_Redis(t *testing.T) {
	srv := redistest.Start(t)
	for _, tags := range []bool{false, true} {
		t.Run(fmt.Sprintf("hash tags %v", tags), func(t *testing.T) {
			o := locking.DefaultOptions()
			o.Namespace, o.UseHashTags = "billing", tags
			l, err := redislock.NewLock(srv.Client(t), o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close() })
			lockingtest.RunJobStore(t, l)
		})
	}
}

// TestJobStore_S9_RedisCluster runs the job store checks over Redis
// Cluster without hash tags: each operation touches the job's one key.
func TestJobStore_S9_RedisCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	o := locking.DefaultOptions()
	o.Namespace = "billing"
	l, err := redislock.NewLock(cl.Client(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	lockingtest.RunJobStore(t, l)
}

// TestJobs_S11_KeysExpireAndParse covers the Redis side of the job records:
// every write sets the hash's time to live; fields that are not numbers
// are errors naming the field, never a panic; the scripts survive SCRIPT
// FLUSH.
func TestJobs_S11_KeysExpireAndParse(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	p := redislock.New(c)
	t.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()

	claim := slotstore.SlotClaim{Slot: 1_700_000_000_000, Attempt: 1, Term: "t", Hold: time.Second, Record: `{"x":1}`, TTL: time.Hour}
	r, err := p.ClaimSlot(ctx, "ns:jobs:a", claim)
	if err != nil || r.Status != slotstore.ClaimGranted || r.Seq != 1 {
		t.Fatalf("claim: %+v %v", r, err)
	}
	if ttl := c.PTTL(ctx, "ns:jobs:a").Val(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Errorf("PTTL after claim = %v, want about 1h", ttl)
	}
	if err := p.SetJobPaused(ctx, "ns:jobs:a", true, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, "ns:jobs:a").Val(); ttl <= time.Hour {
		t.Errorf("PTTL after pause = %v, want about 2h", ttl)
	}
	if until := c.HGet(ctx, "ns:jobs:a", "until").Val(); len(until) < 13 || strings.ContainsAny(until, ".e") {
		t.Errorf("until = %q, want integer server milliseconds", until)
	}

	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if st, err := p.JobStatus(ctx, "ns:jobs:a"); err != nil || !st.Paused || st.Slot != claim.Slot || !st.Running {
		t.Errorf("status: %+v %v", st, err)
	}
	if ok, err := p.CompleteSlot(ctx, "ns:jobs:a", slotstore.SlotCompletion{Slot: claim.Slot, Attempt: 1, Term: "t", Seq: 1, Done: true, Record: "done", TTL: time.Hour}); err != nil || !ok {
		t.Errorf("complete after SCRIPT FLUSH: %v %v", ok, err)
	}

	for _, field := range []string{"slot", "open", "att", "until", "seq"} {
		key := "ns:jobs:bad-" + field
		if err := c.HSet(ctx, key, field, "x1").Err(); err != nil {
			t.Fatal(err)
		}
		_, err := p.ClaimSlot(ctx, key, claim)
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("claim over a corrupt %s: %v, want an error naming it", field, err)
		}
	}
	if err := c.Set(ctx, "ns:jobs:string", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.JobHistory(ctx, "ns:jobs:string", 5); err == nil {
		t.Error("history of a key of another type: no error")
	}
	if _, err := p.JobStatus(ctx, "ns:jobs:bad-seq"); err == nil || !strings.Contains(err.Error(), "seq") {
		t.Errorf("status over a corrupt seq: %v", err)
	}
}

// TestJobs_NilClient: every job operation of a provider without a client
// returns ErrNilClient.
func TestJobs_NilClient(t *testing.T) {
	p := redislock.New(nil)
	ctx := context.Background()
	if _, err := p.ClaimSlot(ctx, "k", slotstore.SlotClaim{TTL: time.Second}); !errors.Is(err, redislock.ErrNilClient) {
		t.Errorf("claim: %v", err)
	}
	if _, err := p.JobHistory(ctx, "k", 1); !errors.Is(err, redislock.ErrNilClient) {
		t.Errorf("history: %v", err)
	}
	if _, err := p.JobStatus(ctx, "k"); !errors.Is(err, redislock.ErrNilClient) {
		t.Errorf("status: %v", err)
	}
}
