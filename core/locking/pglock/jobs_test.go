package pglock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// TestJobStore_S9_Postgres runs the job store semantics (S9–S11) that
// core/locking's jobStoreSuite checks over memlock and Redis, over a real
// PostgreSQL server.
func TestJobStore_S9_Postgres(t *testing.T) {
	pool := newDB(t)
	l, _ := newLock(t, pool, pglock.Options{}, "billing")
	jobStoreSuite(t, l)
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

// jobStoreSuite checks claim, recovery, completion, pause and history
// semantics (S9-S11) on a fresh key of l.
func jobStoreSuite(t *testing.T, l *locking.DistributedLock) {
	ctx := context.Background()
	key := "sched:billing:" + strings.ReplaceAll(t.Name(), "/", "_")
	if !l.Capabilities().JobSlots {
		t.Fatal("Capabilities().JobSlots is false")
	}
	const s1, s2, s3, s4 = int64(1_000_000), int64(2_000_000), int64(3_000_000), int64(4_000_000)
	claim := func(c slotstore.SlotClaim) slotstore.SlotClaimResult {
		t.Helper()
		if c.TTL == 0 {
			c.TTL = time.Hour
		}
		if c.Attempt == 0 {
			c.Attempt = 1
		}
		r, err := l.ClaimSlot(ctx, key, c)
		if err != nil {
			t.Fatalf("claim %+v: %v", c, err)
		}
		return r
	}
	complete := func(c slotstore.SlotCompletion) bool {
		t.Helper()
		c.TTL = time.Hour
		ok, err := l.CompleteSlot(ctx, key, c)
		if err != nil {
			t.Fatalf("complete %+v: %v", c, err)
		}
		return ok
	}
	want := func(what string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}

	// Recovery only, on an empty key: nothing to do.
	r := claim(slotstore.SlotClaim{Recover: true, Term: "t1"})
	want("recover-only on empty key", r.Status, slotstore.ClaimStarted)

	// T1 claims s1 and holds it for an hour.
	r = claim(slotstore.SlotClaim{Slot: s1, Term: "t1", Hold: time.Hour, Record: "a1"})
	want("first claim", []any{r.Status, r.HasPrevious, r.Attempt, r.Seq}, []any{slotstore.ClaimGranted, false, 1, 1})
	r = claim(slotstore.SlotClaim{Slot: s1, Term: "t1", Record: "x"})
	want("same slot again", []any{r.Status, r.Previous}, []any{slotstore.ClaimStarted, s1})
	r = claim(slotstore.SlotClaim{Slot: s1 - 1, Term: "t1", Record: "x"})
	want("older slot", r.Status, slotstore.ClaimStarted)
	st, err := l.JobStatus(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	want("status", []any{st.HasSlot, st.Slot, st.Unfinished, st.Attempt, st.Running, st.Runs, st.Paused}, []any{true, s1, s1, 1, true, 1, false})
	if st.TTL <= 0 || st.TTL > time.Hour {
		t.Errorf("status TTL = %v, want in (0, 1h]", st.TTL)
	}

	// T2 asks for recovery: s1 is unfinished but T1's hold has not passed.
	r = claim(slotstore.SlotClaim{Slot: s2, Recover: true, Term: "t2", Record: "x"})
	want("recoverable while held", []any{r.Status, r.Slot, r.Attempt}, []any{slotstore.ClaimRecoverable, s1, 1})
	if r.Wait <= 0 || r.Wait > time.Hour {
		t.Errorf("wait = %v, want in (0, 1h]", r.Wait)
	}
	r = claim(slotstore.SlotClaim{Slot: s1, Attempt: 2, Term: "t2", Record: "x"})
	want("recovery before the hold passed", r.Status, slotstore.ClaimWait)
	// A term never recovers its own attempt.
	r = claim(slotstore.SlotClaim{Slot: s1, Attempt: 2, Term: "t1", Record: "x"})
	want("own attempt", r.Status, slotstore.ClaimRefused)

	// T1's run returns cut short: the attempt certainly ended, s1 stays unfinished.
	if !complete(slotstore.SlotCompletion{Slot: s1, Attempt: 1, Term: "t1", Seq: 1, Done: false, Record: "a1-canceled"}) {
		t.Error("completion of the current claim did not match")
	}
	r = claim(slotstore.SlotClaim{Slot: s2, Recover: true, Term: "t2", Record: "x"})
	want("recoverable after return", []any{r.Status, r.Slot, r.Attempt, r.Wait}, []any{slotstore.ClaimRecoverable, s1, 1, time.Duration(0)})
	r = claim(slotstore.SlotClaim{Slot: s1, Attempt: 2, Term: "t2", Hold: time.Hour, Record: "a2"})
	want("recovery", []any{r.Status, r.Attempt, r.Seq}, []any{slotstore.ClaimGranted, 2, 2})
	r = claim(slotstore.SlotClaim{Slot: s1, Attempt: 2, Term: "t3", Record: "x"})
	want("second recovery of the same attempt", r.Status, slotstore.ClaimRefused)
	if !complete(slotstore.SlotCompletion{Slot: s1, Attempt: 2, Term: "t2", Seq: 2, Done: true, Record: "a2-success"}) {
		t.Error("completion of the recovery did not match")
	}
	// A late completion of a superseded claim rewrites its record only.
	if complete(slotstore.SlotCompletion{Slot: s1, Attempt: 1, Term: "t1", Seq: 1, Done: true, Record: "a1-late"}) {
		t.Error("completion of a superseded claim matched")
	}
	r = claim(slotstore.SlotClaim{Slot: s2, Recover: true, Term: "t2", Record: "b1"})
	want("next slot after recovery", []any{r.Status, r.Previous, r.Seq}, []any{slotstore.ClaimGranted, s1, 3})
	complete(slotstore.SlotCompletion{Slot: s2, Attempt: 1, Term: "t2", Seq: 3, Done: true, Record: "b1-success"})
	h, err := l.JobHistory(ctx, key, 10)
	if err != nil {
		t.Fatal(err)
	}
	want("history", h, []string{"b1-success", "a2-success", "a1-late"})

	// Pause (S10): a claim is refused and its slot recorded as passed.
	if err := l.SetJobPaused(ctx, key, true, time.Hour); err != nil {
		t.Fatal(err)
	}
	r = claim(slotstore.SlotClaim{Slot: s3, Recover: true, Term: "t2", Record: "x"})
	want("paused claim", r.Status, slotstore.ClaimPaused)
	if st, _ := l.JobStatus(ctx, key); !st.Paused || st.Slot != s3 {
		t.Errorf("paused status = %+v, want paused with slot %d recorded", st, s3)
	}
	if err := l.SetJobPaused(ctx, key, false, time.Hour); err != nil {
		t.Fatal(err)
	}
	r = claim(slotstore.SlotClaim{Slot: s3, Term: "t2", Record: "x"})
	want("paused slot after resume", r.Status, slotstore.ClaimStarted)
	r = claim(slotstore.SlotClaim{Slot: s4, Term: "t2", Record: "c1"})
	want("next slot after resume", r.Status, slotstore.ClaimGranted)

	// Attempts are bounded: an unfinished third attempt is not recoverable.
	_ = claim(slotstore.SlotClaim{Slot: s4 + 1, Term: "t4", Record: "d1"})
	for attempt, term := range []string{2: "t5", 3: "t6"} {
		if term == "" {
			continue
		}
		r = claim(slotstore.SlotClaim{Slot: s4 + 1, Attempt: attempt, Term: term, Record: "d"})
		want(fmt.Sprintf("attempt %d", attempt), r.Status, slotstore.ClaimGranted)
	}
	r = claim(slotstore.SlotClaim{Slot: s4 + 2, Recover: true, Term: "t7", Record: "e1"})
	want("claim past an exhausted slot", r.Status, slotstore.ClaimGranted)

	// The history keeps the newest JobHistoryLen records.
	for i := range slotstore.JobHistoryLen + 5 {
		_ = claim(slotstore.SlotClaim{Slot: s4 + 10 + int64(i), Term: "t8", Record: fmt.Sprint("r", i)})
	}
	h, err = l.JobHistory(ctx, key, slotstore.JobHistoryLen)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != slotstore.JobHistoryLen || h[0] != fmt.Sprint("r", slotstore.JobHistoryLen+4) || h[len(h)-1] != "r5" {
		t.Errorf("history: %d records, first %q, last %q; want %d from r%d to r5", len(h), h[0], h[len(h)-1], slotstore.JobHistoryLen, slotstore.JobHistoryLen+4)
	}
	if h, err := l.JobHistory(ctx, key, 2); err != nil || len(h) != 2 {
		t.Errorf("history(2) = %d records, %v", len(h), err)
	}
}

// TestJobKeys_D4_ListsLiveJobRecordsByPrefix: JobKeys lists the provider
// keys of live job records under a prefix (data, never SQL: a quote and a
// semicolon in a name are listed as they are), sorted, leaving out expired
// records and other prefixes.
func TestJobKeys_D4_ListsLiveJobRecordsByPrefix(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	l, p := newLock(t, pool, pglock.Options{}, "ns")
	claim := func(key string, ttl time.Duration) string {
		t.Helper()
		c := slotstore.SlotClaim{Slot: 1, Attempt: 1, Term: "t", Record: "r", TTL: ttl}
		if r, err := l.ClaimSlot(ctx, key, c); err != nil || r.Status != slotstore.ClaimGranted {
			t.Fatalf("claim %q: %+v %v", key, r, err)
		}
		full, err := l.JobKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return full
	}
	b := claim("sched:billing:invoices", time.Minute)
	q := claim("sched:billing:it's;DROP_TABLE_x", time.Minute)
	claim("sched:inventory:sync", time.Minute)
	claim("sched:billing:gone", 50*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	prefix := strings.TrimSuffix(b, "invoices")
	got, err := p.JobKeys(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{b, q}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("JobKeys(%q) = %q, want %q", prefix, got, want)
	}
	if all, err := p.JobKeys(ctx, ""); err != nil || len(all) != 3 {
		t.Errorf("JobKeys(\"\") = %q, %v: want the 3 live records", all, err)
	}
}
