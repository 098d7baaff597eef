package lockingtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/jobrecord"
	"github.com/hostloom/hostloom/core/locking"
)

// Slots of the job store steps, in milliseconds as the scheduler stores them.
const (
	slot1 = int64(1_000_000)
	slot2 = int64(2_000_000)
	slot3 = int64(3_000_000)
	slot4 = int64(4_000_000)
)

// jobStep is one step of the job store checks. The steps share one key:
// each starts from the records the steps before it left.
type jobStep struct {
	name string
	run  func(t *testing.T, j jobKey)
}

// jobSteps are run in this order; names cite the DESIGN.md rules they cover.
var jobSteps = []jobStep{
	{"S9_FirstClaimGrantedOnce", stepFirstClaim},
	{"S9_RecoveryWaitsForTheHold", stepRecoveryWaits},
	{"S9_RecoveryAfterTheRunReturned", stepRecoveryAfterReturn},
	{"S10_PauseRecordsTheSlotAsPassed", stepPause},
	{"S9_AttemptsBounded", stepAttemptsBounded},
	{"S11_HistoryKeepsTheNewest", stepHistoryBounded},
}

// JobStoreChecks returns the names of the steps RunJobStore runs, in
// order: the names of its subtests.
func JobStoreChecks() []string {
	names := make([]string, len(jobSteps))
	for i, s := range jobSteps {
		names[i] = s.name
	}
	return names
}

// RunJobStore checks the job records of l (S9–S11: claim, recovery,
// completion, pause and history) on a fresh key named after t, one subtest
// per step. The steps run in order on that one key, each from the records
// the one before left, so once a step stops early (t.Fatal) the later ones
// are skipped; a mismatch reported with t.Error lets them run. l
// must report Capabilities().JobSlots. The steps take no fake time: run
// RunJobStore outside a testing/synctest bubble (it calls t.Run).
func RunJobStore(t *testing.T, l *locking.DistributedLock) {
	t.Helper()
	if !l.Capabilities().JobSlots {
		t.Fatal("Capabilities().JobSlots is false")
	}
	j := jobKey{l: l, key: "sched:billing:" + strings.ReplaceAll(t.Name(), "/", "_")}
	stopped := "" // the step that ended early (t.Fatal): later ones skip
	for _, s := range jobSteps {
		t.Run(s.name, func(t *testing.T) {
			if stopped != "" {
				t.Skipf("step %s stopped early; this one starts from its records", stopped)
			}
			stopped = s.name
			s.run(t, j)
			stopped = ""
		})
	}
}

// jobKey is the lock and key the job store steps share.
type jobKey struct {
	l   *locking.DistributedLock
	key string
}

// claim claims c (TTL an hour and attempt 1 unless set) or fails t.
func (j jobKey) claim(t *testing.T, c jobrecord.SlotClaim) jobrecord.SlotClaimResult {
	t.Helper()
	if c.TTL == 0 {
		c.TTL = time.Hour
	}
	if c.Attempt == 0 {
		c.Attempt = 1
	}
	r, err := j.l.ClaimSlot(context.Background(), j.key, c)
	if err != nil {
		t.Fatalf("claim %+v: %v", c, err)
	}
	return r
}

// complete records c (TTL an hour) or fails t, and reports whether it
// matched the current claim.
func (j jobKey) complete(t *testing.T, c jobrecord.SlotCompletion) bool {
	t.Helper()
	c.TTL = time.Hour
	ok, err := j.l.CompleteSlot(context.Background(), j.key, c)
	if err != nil {
		t.Fatalf("complete %+v: %v", c, err)
	}
	return ok
}

// status returns the job's status or fails t.
func (j jobKey) status(t *testing.T) jobrecord.JobStatus {
	t.Helper()
	st, err := j.l.JobStatus(context.Background(), j.key)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// history returns the job's newest n records or fails t.
func (j jobKey) history(t *testing.T, n int) []string {
	t.Helper()
	h, err := j.l.JobHistory(context.Background(), j.key, n)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// pause pauses or resumes the job or fails t.
func (j jobKey) pause(t *testing.T, paused bool) {
	t.Helper()
	if err := j.l.SetJobPaused(context.Background(), j.key, paused, time.Hour); err != nil {
		t.Fatal(err)
	}
}

// wantPrint compares got and want as printed.
func wantPrint(t *testing.T, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// stepFirstClaim: recovery only on an empty key does nothing; then T1
// claims slot1 and holds it for an hour, and claims of it or an older slot
// find it started.
func stepFirstClaim(t *testing.T, j jobKey) {
	r := j.claim(t, jobrecord.SlotClaim{Recover: true, Term: "t1"})
	wantPrint(t, "recover-only on empty key", r.Status, jobrecord.ClaimStarted)

	r = j.claim(t, jobrecord.SlotClaim{Slot: slot1, Term: "t1", Hold: time.Hour, Record: "a1"})
	wantPrint(t, "first claim", []any{r.Status, r.HasPrevious, r.Attempt, r.Seq}, []any{jobrecord.ClaimGranted, false, 1, 1})
	r = j.claim(t, jobrecord.SlotClaim{Slot: slot1, Term: "t1", Record: "x"})
	wantPrint(t, "same slot again", []any{r.Status, r.Previous}, []any{jobrecord.ClaimStarted, slot1})
	r = j.claim(t, jobrecord.SlotClaim{Slot: slot1 - 1, Term: "t1", Record: "x"})
	wantPrint(t, "older slot", r.Status, jobrecord.ClaimStarted)
	st := j.status(t)
	wantPrint(t, "status", []any{st.HasSlot, st.Slot, st.Unfinished, st.Attempt, st.Running, st.Runs, st.Paused}, []any{true, slot1, slot1, 1, true, 1, false})
	if st.TTL <= 0 || st.TTL > time.Hour {
		t.Errorf("status TTL = %v, want in (0, 1h]", st.TTL)
	}
}

// stepRecoveryWaits: T2 asks for recovery; slot1 is unfinished but T1's
// hold has not passed. A term never recovers its own attempt.
func stepRecoveryWaits(t *testing.T, j jobKey) {
	r := j.claim(t, jobrecord.SlotClaim{Slot: slot2, Recover: true, Term: "t2", Record: "x"})
	wantPrint(t, "recoverable while held", []any{r.Status, r.Slot, r.Attempt}, []any{jobrecord.ClaimRecoverable, slot1, 1})
	if r.Wait <= 0 || r.Wait > time.Hour {
		t.Errorf("wait = %v, want in (0, 1h]", r.Wait)
	}
	r = j.claim(t, jobrecord.SlotClaim{Slot: slot1, Attempt: 2, Term: "t2", Record: "x"})
	wantPrint(t, "recovery before the hold passed", r.Status, jobrecord.ClaimWait)
	r = j.claim(t, jobrecord.SlotClaim{Slot: slot1, Attempt: 2, Term: "t1", Record: "x"})
	wantPrint(t, "own attempt", r.Status, jobrecord.ClaimRefused)
}

// stepRecoveryAfterReturn: T1's run returns cut short, so its attempt
// certainly ended and slot1 stays unfinished: T2 recovers it once, a late
// completion of the superseded claim rewrites its record only, and the
// next slot follows.
func stepRecoveryAfterReturn(t *testing.T, j jobKey) {
	if !j.complete(t, jobrecord.SlotCompletion{Slot: slot1, Attempt: 1, Term: "t1", Seq: 1, Done: false, Record: "a1-canceled"}) {
		t.Error("completion of the current claim did not match")
	}
	r := j.claim(t, jobrecord.SlotClaim{Slot: slot2, Recover: true, Term: "t2", Record: "x"})
	wantPrint(t, "recoverable after return", []any{r.Status, r.Slot, r.Attempt, r.Wait}, []any{jobrecord.ClaimRecoverable, slot1, 1, time.Duration(0)})
	r = j.claim(t, jobrecord.SlotClaim{Slot: slot1, Attempt: 2, Term: "t2", Hold: time.Hour, Record: "a2"})
	wantPrint(t, "recovery", []any{r.Status, r.Attempt, r.Seq}, []any{jobrecord.ClaimGranted, 2, 2})
	r = j.claim(t, jobrecord.SlotClaim{Slot: slot1, Attempt: 2, Term: "t3", Record: "x"})
	wantPrint(t, "second recovery of the same attempt", r.Status, jobrecord.ClaimRefused)
	if !j.complete(t, jobrecord.SlotCompletion{Slot: slot1, Attempt: 2, Term: "t2", Seq: 2, Done: true, Record: "a2-success"}) {
		t.Error("completion of the recovery did not match")
	}
	if j.complete(t, jobrecord.SlotCompletion{Slot: slot1, Attempt: 1, Term: "t1", Seq: 1, Done: true, Record: "a1-late"}) {
		t.Error("completion of a superseded claim matched")
	}
	r = j.claim(t, jobrecord.SlotClaim{Slot: slot2, Recover: true, Term: "t2", Record: "b1"})
	wantPrint(t, "next slot after recovery", []any{r.Status, r.Previous, r.Seq}, []any{jobrecord.ClaimGranted, slot1, 3})
	j.complete(t, jobrecord.SlotCompletion{Slot: slot2, Attempt: 1, Term: "t2", Seq: 3, Done: true, Record: "b1-success"})
	wantPrint(t, "history", j.history(t, 10), []string{"b1-success", "a2-success", "a1-late"})
}

// stepPause: while paused a claim is refused and its slot recorded as
// passed; after the resume the next slot is granted.
func stepPause(t *testing.T, j jobKey) {
	j.pause(t, true)
	r := j.claim(t, jobrecord.SlotClaim{Slot: slot3, Recover: true, Term: "t2", Record: "x"})
	wantPrint(t, "paused claim", r.Status, jobrecord.ClaimPaused)
	if st, _ := j.l.JobStatus(context.Background(), j.key); !st.Paused || st.Slot != slot3 {
		t.Errorf("paused status = %+v, want paused with slot %d recorded", st, slot3)
	}
	j.pause(t, false)
	r = j.claim(t, jobrecord.SlotClaim{Slot: slot3, Term: "t2", Record: "x"})
	wantPrint(t, "paused slot after resume", r.Status, jobrecord.ClaimStarted)
	r = j.claim(t, jobrecord.SlotClaim{Slot: slot4, Term: "t2", Record: "c1"})
	wantPrint(t, "next slot after resume", r.Status, jobrecord.ClaimGranted)
}

// stepAttemptsBounded: a slot is started at most MaxJobAttempts times; an
// unfinished third attempt is not recoverable, and the next slot is
// granted past it.
func stepAttemptsBounded(t *testing.T, j jobKey) {
	_ = j.claim(t, jobrecord.SlotClaim{Slot: slot4 + 1, Term: "t4", Record: "d1"})
	for attempt, term := range []string{2: "t5", 3: "t6"} {
		if term == "" {
			continue
		}
		r := j.claim(t, jobrecord.SlotClaim{Slot: slot4 + 1, Attempt: attempt, Term: term, Record: "d"})
		wantPrint(t, fmt.Sprintf("attempt %d", attempt), r.Status, jobrecord.ClaimGranted)
	}
	r := j.claim(t, jobrecord.SlotClaim{Slot: slot4 + 2, Recover: true, Term: "t7", Record: "e1"})
	wantPrint(t, "claim past an exhausted slot", r.Status, jobrecord.ClaimGranted)
}

// stepHistoryBounded: the history keeps the newest JobHistoryLen records.
func stepHistoryBounded(t *testing.T, j jobKey) {
	for i := range jobrecord.JobHistoryLen + 5 {
		_ = j.claim(t, jobrecord.SlotClaim{Slot: slot4 + 10 + int64(i), Term: "t8", Record: fmt.Sprint("r", i)})
	}
	h := j.history(t, jobrecord.JobHistoryLen)
	if len(h) != jobrecord.JobHistoryLen || h[0] != fmt.Sprint("r", jobrecord.JobHistoryLen+4) || h[len(h)-1] != "r5" {
		t.Errorf("history: %d records, first %q, last %q; want %d from r%d to r5", len(h), h[0], h[len(h)-1], jobrecord.JobHistoryLen, jobrecord.JobHistoryLen+4)
	}
	if h, err := j.l.JobHistory(context.Background(), j.key, 2); err != nil || len(h) != 2 {
		t.Errorf("history(2) = %d records, %v", len(h), err)
	}
}

// RunJobClaimRace checks that concurrent claims of one slot are granted
// once (S9, V1): for a few slots in turn, contenders in as many
// goroutines claim the same slot with terms of their own, and exactly one
// is granted; the others find it started. Over a store that decides in
// Go and writes back only if the record is unchanged, this is the check
// that a lost write is decided again. l must report
// Capabilities().JobSlots; run it outside a testing/synctest bubble.
func RunJobClaimRace(t *testing.T, l *locking.DistributedLock, contenders int) {
	t.Helper()
	if !l.Capabilities().JobSlots {
		t.Fatal("Capabilities().JobSlots is false")
	}
	ctx := context.Background()
	key := "sched:race:" + strings.ReplaceAll(t.Name(), "/", "_")
	type result struct {
		r    jobrecord.SlotClaimResult
		term string
		err  error
	}
	for slot := int64(1000); slot <= 3000; slot += 1000 {
		results := make(chan result, contenders)
		var wg sync.WaitGroup
		for i := range contenders {
			wg.Go(func() {
				term := fmt.Sprintf("t%d-%d", slot, i)
				r, err := l.ClaimSlot(ctx, key, jobrecord.SlotClaim{Slot: slot, Attempt: 1, Term: term, Record: term, TTL: time.Hour})
				results <- result{r, term, err}
			})
		}
		wg.Wait()
		close(results)
		var won []result
		for res := range results {
			switch {
			case res.err != nil:
				t.Errorf("slot %d: claim: %v", slot, res.err)
			case res.r.Status == jobrecord.ClaimGranted:
				won = append(won, res)
			case res.r.Status != jobrecord.ClaimStarted:
				t.Errorf("slot %d: a claim was %v, want granted or started", slot, res.r.Status)
			}
		}
		if len(won) != 1 {
			t.Fatalf("slot %d: %d of %d concurrent claims granted, want 1", slot, len(won), contenders)
		}
		// The run ends, so the next slot's claims find nothing to recover.
		ok, err := l.CompleteSlot(ctx, key, jobrecord.SlotCompletion{Slot: slot, Attempt: 1, Term: won[0].term, Seq: won[0].r.Seq, Done: true, Record: "done", TTL: time.Hour})
		if err != nil || !ok {
			t.Fatalf("slot %d: completion of the granted claim = %v, %v", slot, ok, err)
		}
		if h, err := l.JobHistory(ctx, key, 1); err != nil || len(h) != 1 || h[0] != "done" {
			t.Errorf("slot %d: newest history record = %v, %v; want [done]", slot, h, err)
		}
	}
}
