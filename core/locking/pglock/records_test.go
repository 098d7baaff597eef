package pglock_test

import (
	"context"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/jobrecord"
	"github.com/hostloom/hostloom/core/locking/lockingtest"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

// TestRecords_V2_ExistingRowsKeepWorking: a job table as earlier builds
// created it (without the extra column), holding a row as they wrote it
// (an attempt of slot 10 cut short, run record 1 in the ring), gains the
// column when a provider first uses it, and the row reads as that record:
// the next leader recovers the slot, and the history keeps the earlier
// record.
func TestRecords_V2_ExistingRowsKeepWorking(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	if _, err := newProvider(t, pool, pglock.Options{}).LoadRecord(ctx, "warm-up"); err != nil { // creates the tables
		t.Fatal(err)
	}
	_, err := pool.Exec(ctx, `ALTER TABLE hostloom_locks_jobs DROP COLUMN extra;
INSERT INTO hostloom_locks_jobs (key, slot, open, run, att, term, until_ms, paused, seq, expires_at)
VALUES ('jobs:k', 10, 10, false, 1, 't1', 1, false, 1, now() + interval '1 hour');
INSERT INTO hostloom_locks_job_runs (key, idx, record) VALUES ('jobs:k', 0, 'earlier')`)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := newLock(t, pool, pglock.Options{}, "")
	r, err := l.ClaimSlot(ctx, "k", jobrecord.SlotClaim{Slot: 20, Attempt: 1, Recover: true, Term: "t2", TTL: time.Hour})
	if err != nil || r.Status != jobrecord.ClaimRecoverable || r.Slot != 10 || r.Attempt != 1 || r.Wait != 0 {
		t.Fatalf("recovery claim over an existing row = %+v, %v; want slot 10 recoverable at once", r, err)
	}
	r, err = l.ClaimSlot(ctx, "k", jobrecord.SlotClaim{Slot: 10, Attempt: 2, Term: "t2", Hold: time.Minute, Record: "recovered", TTL: time.Hour})
	if err != nil || r.Status != jobrecord.ClaimGranted || r.Seq != 2 {
		t.Fatalf("recovery = %+v, %v; want granted as run 2", r, err)
	}
	if h, err := l.JobHistory(ctx, "k", 10); err != nil || len(h) != 2 || h[0] != "recovered" || h[1] != "earlier" {
		t.Errorf("history = %v, %v; want [recovered earlier]", h, err)
	}
}

// TestRecords_V1_SwapRefusedAfterAnotherWrite: a swap over a row someone
// wrote since it was read, whatever it changed (here as an earlier
// release's pause would), writes nothing.
func TestRecords_V1_SwapRefusedAfterAnotherWrite(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	p := newProvider(t, pool, pglock.Options{})
	w := jobrecord.Write{Fields: map[string]string{"slot": "5", "seq": "1"}, HasEntry: true, Index: 0, Entry: "r1", TTL: time.Hour}
	from, err := p.LoadRecord(ctx, "k")
	if err != nil || from.Found {
		t.Fatalf("LoadRecord of nothing = %+v, %v", from, err)
	}
	if ok, err := p.SwapRecord(ctx, "k", from, w); err != nil || !ok {
		t.Fatalf("first swap = %v, %v", ok, err)
	}
	if ok, err := p.SwapRecord(ctx, "k", from, w); err != nil || ok {
		t.Errorf("second swap from the same read = %v, %v; want refused", ok, err)
	}
	from, err = p.LoadRecord(ctx, "k")
	if err != nil || !from.Found || from.Fields["slot"] != "5" {
		t.Fatalf("LoadRecord = %+v, %v", from, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE hostloom_locks_jobs SET paused = true WHERE key = 'k'`); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.SwapRecord(ctx, "k", from, w); err != nil || ok {
		t.Errorf("swap after another writer's update = %v, %v; want refused", ok, err)
	}
	from, err = p.LoadRecord(ctx, "k")
	if err != nil || from.Fields["paused"] != "1" {
		t.Fatalf("LoadRecord = %+v, %v", from, err)
	}
	// A field without a column of its own (one added to the record after
	// the table) is kept all the same.
	if ok, err := p.SwapRecord(ctx, "k", from, jobrecord.Write{Fields: map[string]string{"seq": "3", "note": "x"}, TTL: time.Hour}); err != nil || !ok {
		t.Fatalf("swap of a field without a column = %v, %v", ok, err)
	}
	if st, err := p.LoadRecord(ctx, "k"); err != nil || len(st.Fields) != 2 || st.Fields["note"] != "x" || st.Fields["seq"] != "3" {
		t.Errorf("LoadRecord after it = %+v, %v; want seq and note", st, err)
	}
}

// TestRecords_V1_ConcurrentClaimsGrantedOnce: concurrent claims of one
// slot, each a read and a conditional write, are granted once.
func TestRecords_V1_ConcurrentClaimsGrantedOnce(t *testing.T) {
	l, _ := newLock(t, newDB(t), pglock.Options{}, "")
	lockingtest.RunJobClaimRace(t, l, 16)
}
