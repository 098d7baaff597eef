package jobrecord_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/jobrecord"
)

// now is the store's clock in the tables: a whole second plus 400 µs, so
// that holds show their rounding down to the millisecond.
var now = time.UnixMilli(1_700_000_000_000).Add(400 * time.Microsecond)

// nowMs is now in Unix ms, rounded down.
const nowMs = int64(1_700_000_000_000)

// open is a record with slot 10 open at attempt 1 by term "t1", running
// and held for a minute, after 4 runs.
var open = jobrecord.Record{Slot: 10, HasSlot: true, Open: 10, Running: true, Attempt: 1, Term: "t1", Until: nowMs + 60_000, Seq: 4}

// with returns r changed by f.
func with(r jobrecord.Record, f func(*jobrecord.Record)) jobrecord.Record {
	f(&r)
	return r
}

// TestClaim_V1_S9_S10_Rules is every rule of a claim, one row each.
func TestClaim_V1_S9_S10_Rules(t *testing.T) {
	paused := with(open, func(r *jobrecord.Record) { r.Paused = true })
	ended := with(open, func(r *jobrecord.Record) { r.Running = false })
	held := with(open, func(r *jobrecord.Record) { r.Until = nowMs - 1 })
	exhausted := with(open, func(r *jobrecord.Record) { r.Attempt = jobrecord.MaxJobAttempts })
	closed := with(open, func(r *jobrecord.Record) { r.Open, r.Running = 0, false })
	prev := jobrecord.SlotClaimResult{Previous: 10, HasPrevious: true}
	res := func(s jobrecord.ClaimStatus, f func(*jobrecord.SlotClaimResult)) jobrecord.SlotClaimResult {
		r := prev
		r.Status = s
		if f != nil {
			f(&r)
		}
		return r
	}
	// granted is r after a granted claim of slot at attempt by term t
	// (hold 1.5 s from now, in ms), written as run r.Seq+1.
	granted := func(r jobrecord.Record, slot int64, attempt int, term string) jobrecord.Change {
		n := r
		if attempt == 1 {
			n.Slot, n.HasSlot = slot, true
		}
		n.Open, n.Running, n.Attempt, n.Term, n.Until, n.Seq = slot, true, attempt, term, nowMs+1500, r.Seq+1
		return jobrecord.Change{Write: true, Record: n, Entry: n.Seq, Value: "rec"}
	}
	claim := func(slot int64, attempt int, recover bool, term string) jobrecord.SlotClaim {
		return jobrecord.SlotClaim{Slot: slot, Attempt: attempt, Recover: recover, Term: term, Hold: 1500 * time.Millisecond, Record: "rec", TTL: time.Hour}
	}
	tests := []struct {
		name   string
		r      jobrecord.Record
		c      jobrecord.SlotClaim
		want   jobrecord.SlotClaimResult
		change jobrecord.Change
	}{
		// S10: a paused job.
		{"S10 paused: a later first slot is recorded as passed", paused, claim(11, 1, true, "t2"),
			res(jobrecord.ClaimPaused, nil), jobrecord.Change{Write: true, Record: with(paused, func(r *jobrecord.Record) { r.Slot = 11 })}},
		{"S10 paused: the first slot of a job with none", jobrecord.Record{Paused: true}, claim(11, 1, false, "t2"),
			jobrecord.SlotClaimResult{Status: jobrecord.ClaimPaused}, jobrecord.Change{Write: true, Record: jobrecord.Record{Paused: true, Slot: 11, HasSlot: true}}},
		{"S10 paused: a slot not later writes nothing", paused, claim(10, 1, false, "t2"), res(jobrecord.ClaimPaused, nil), jobrecord.Change{}},
		{"S10 paused: recovery only writes nothing", paused, claim(0, 1, true, "t2"), res(jobrecord.ClaimPaused, nil), jobrecord.Change{}},
		{"S10 paused: a recovery is paused, not recorded", with(held, func(r *jobrecord.Record) { r.Paused = true }), claim(10, 2, false, "t2"),
			res(jobrecord.ClaimPaused, nil), jobrecord.Change{}},
		// S9: recoveries (attempt 2 or more).
		{"S9 recovery of a slot that is not open", held, claim(9, 2, false, "t2"), res(jobrecord.ClaimRefused, nil), jobrecord.Change{}},
		{"S9 recovery when nothing is open", closed, claim(10, 2, false, "t2"), res(jobrecord.ClaimRefused, nil), jobrecord.Change{}},
		{"S9 recovery skipping an attempt", held, claim(10, 3, false, "t2"), res(jobrecord.ClaimRefused, nil), jobrecord.Change{}},
		{"S9 recovery past the maximum", with(held, func(r *jobrecord.Record) { r.Attempt = jobrecord.MaxJobAttempts }),
			claim(10, jobrecord.MaxJobAttempts+1, false, "t2"), res(jobrecord.ClaimRefused, nil), jobrecord.Change{}},
		{"S9 a term never recovers its own attempt", held, claim(10, 2, false, "t1"), res(jobrecord.ClaimRefused, nil), jobrecord.Change{}},
		{"S9 recovery waits for the hold", open, claim(10, 2, false, "t2"),
			res(jobrecord.ClaimWait, func(r *jobrecord.SlotClaimResult) { r.Wait, r.Attempt = 60*time.Second-400*time.Microsecond, 1 }), jobrecord.Change{}},
		{"S9 recovery after the hold passed", held, claim(10, 2, false, "t2"),
			res(jobrecord.ClaimGranted, func(r *jobrecord.SlotClaimResult) { r.Attempt, r.Seq = 2, 5 }), granted(held, 10, 2, "t2")},
		{"S9 recovery after the attempt reported its end, within the hold", ended, claim(10, 2, false, "t2"),
			res(jobrecord.ClaimGranted, func(r *jobrecord.SlotClaimResult) { r.Attempt, r.Seq = 2, 5 }), granted(ended, 10, 2, "t2")},
		{"S9 the last attempt", with(held, func(r *jobrecord.Record) { r.Attempt = jobrecord.MaxJobAttempts - 1 }), claim(10, jobrecord.MaxJobAttempts, false, "t2"),
			res(jobrecord.ClaimGranted, func(r *jobrecord.SlotClaimResult) { r.Attempt, r.Seq = jobrecord.MaxJobAttempts, 5 }),
			granted(with(held, func(r *jobrecord.Record) { r.Attempt = jobrecord.MaxJobAttempts - 1 }), 10, jobrecord.MaxJobAttempts, "t2")},
		// S9: a first attempt asking for recovery.
		{"S9 another term's open slot is recoverable, with its wait", open, claim(11, 1, true, "t2"),
			res(jobrecord.ClaimRecoverable, func(r *jobrecord.SlotClaimResult) {
				r.Slot, r.Attempt, r.Wait = 10, 1, 60*time.Second-400*time.Microsecond
			}), jobrecord.Change{}},
		{"S9 recoverable at once when the attempt reported its end", ended, claim(0, 1, true, "t2"),
			res(jobrecord.ClaimRecoverable, func(r *jobrecord.SlotClaimResult) { r.Slot, r.Attempt = 10, 1 }), jobrecord.Change{}},
		{"S9 a term's own open slot is not recoverable", open, claim(11, 1, true, "t1"),
			res(jobrecord.ClaimGranted, func(r *jobrecord.SlotClaimResult) { r.Attempt, r.Seq = 1, 5 }), granted(open, 11, 1, "t1")},
		{"S9 an exhausted slot is not recoverable", exhausted, claim(11, 1, true, "t2"),
			res(jobrecord.ClaimGranted, func(r *jobrecord.SlotClaimResult) { r.Attempt, r.Seq = 1, 5 }), granted(exhausted, 11, 1, "t2")},
		{"S9 without Recover an open slot is passed over", open, claim(11, 1, false, "t2"),
			res(jobrecord.ClaimGranted, func(r *jobrecord.SlotClaimResult) { r.Attempt, r.Seq = 1, 5 }), granted(open, 11, 1, "t2")},
		// First attempts (S-rules: at most once per slot).
		{"recovery only on an empty job", jobrecord.Record{}, claim(0, 1, true, "t1"),
			jobrecord.SlotClaimResult{Status: jobrecord.ClaimStarted}, jobrecord.Change{}},
		{"recovery only with nothing open", closed, claim(0, 1, true, "t2"), res(jobrecord.ClaimStarted, nil), jobrecord.Change{}},
		{"the recorded slot again", closed, claim(10, 1, false, "t2"), res(jobrecord.ClaimStarted, nil), jobrecord.Change{}},
		{"an older slot", closed, claim(9, 1, false, "t2"), res(jobrecord.ClaimStarted, nil), jobrecord.Change{}},
		{"the first slot of a job", jobrecord.Record{}, claim(10, 1, false, "t1"),
			jobrecord.SlotClaimResult{Status: jobrecord.ClaimGranted, Attempt: 1, Seq: 1}, granted(jobrecord.Record{}, 10, 1, "t1")},
		{"a later slot", closed, claim(11, 1, false, "t2"),
			res(jobrecord.ClaimGranted, func(r *jobrecord.SlotClaimResult) { r.Attempt, r.Seq = 1, 5 }), granted(closed, 11, 1, "t2")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, change := jobrecord.Claim(tt.r, now, tt.c)
			if got != tt.want {
				t.Errorf("result = %+v, want %+v", got, tt.want)
			}
			if change != tt.change {
				t.Errorf("change = %+v, want %+v", change, tt.change)
			}
		})
	}
}

// TestClaim_S11_RingWraps: run record JobHistoryLen+1 overwrites the
// oldest, at ring index 0.
func TestClaim_S11_RingWraps(t *testing.T) {
	r := jobrecord.Record{Slot: 1, HasSlot: true, Seq: jobrecord.JobHistoryLen}
	res, ch := jobrecord.Claim(r, now, jobrecord.SlotClaim{Slot: 2, Attempt: 1, Term: "t"})
	if res.Seq != jobrecord.JobHistoryLen+1 || ch.Entry != res.Seq || jobrecord.RingIndex(ch.Entry) != 0 {
		t.Errorf("seq %d, entry %d at index %d; want %d at index 0", res.Seq, ch.Entry, jobrecord.RingIndex(ch.Entry), jobrecord.JobHistoryLen+1)
	}
}

// TestComplete_V1_S9_S11_Rules is every rule of a completion, one row each.
func TestComplete_V1_S9_S11_Rules(t *testing.T) {
	done := func(slot int64, attempt int, term string, seq int64, ok bool) jobrecord.SlotCompletion {
		return jobrecord.SlotCompletion{Slot: slot, Attempt: attempt, Term: term, Seq: seq, Done: ok, Record: "end", TTL: time.Hour}
	}
	entry := func(r jobrecord.Record, seq int64) jobrecord.Change {
		return jobrecord.Change{Write: true, Record: r, Entry: seq, Value: "end"}
	}
	closed := with(open, func(r *jobrecord.Record) { r.Open, r.Running = 0, false })
	ended := with(open, func(r *jobrecord.Record) { r.Running = false })
	tests := []struct {
		name    string
		r       jobrecord.Record
		found   bool
		c       jobrecord.SlotCompletion
		matched bool
		change  jobrecord.Change
	}{
		{"nothing stored: nothing to complete", jobrecord.Record{}, false, done(10, 1, "t1", 4, true), false, jobrecord.Change{}},
		{"S9 done closes the slot", open, true, done(10, 1, "t1", 4, true), true, entry(closed, 4)},
		{"S9 cut short leaves it open, its attempt ended", open, true, done(10, 1, "t1", 4, false), true, entry(ended, 4)},
		{"S9 another slot does not match", open, true, done(9, 1, "t1", 3, true), false, entry(open, 3)},
		{"S9 another attempt does not match", open, true, done(10, 2, "t1", 4, true), false, entry(open, 4)},
		{"S9 another term does not match", open, true, done(10, 1, "t2", 4, true), false, entry(open, 4)},
		{"S9 nothing open does not match", closed, true, done(0, 1, "t1", 4, true), false, entry(closed, 4)},
		{"S11 no record to replace (seq 0)", open, true, done(10, 1, "t1", 0, true), true, jobrecord.Change{Write: true, Record: closed}},
		{"S11 a record not yet written", open, true, done(10, 1, "t1", 5, true), true, jobrecord.Change{Write: true, Record: closed}},
		{"S11 a record overwritten in the ring", with(open, func(r *jobrecord.Record) { r.Seq = 104 }), true, done(9, 1, "t0", 4, true),
			false, jobrecord.Change{Write: true, Record: with(open, func(r *jobrecord.Record) { r.Seq = 104 })}},
		{"S11 the oldest record in the ring", with(open, func(r *jobrecord.Record) { r.Seq = 104 }), true, done(9, 1, "t0", 5, true),
			false, entry(with(open, func(r *jobrecord.Record) { r.Seq = 104 }), 5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			matched, change := jobrecord.Complete(tt.r, tt.found, tt.c)
			if matched != tt.matched || change != tt.change {
				t.Errorf("Complete = %v, %+v; want %v, %+v", matched, change, tt.matched, tt.change)
			}
		})
	}
}

// TestPause_V1_S10_Rules: pausing writes the flag, even over nothing
// stored; resuming nothing stored writes nothing.
func TestPause_V1_S10_Rules(t *testing.T) {
	tests := []struct {
		name          string
		r             jobrecord.Record
		found, paused bool
		want          jobrecord.Change
	}{
		{"pause a job with nothing stored", jobrecord.Record{}, false, true, jobrecord.Change{Write: true, Record: jobrecord.Record{Paused: true}}},
		{"resume a job with nothing stored", jobrecord.Record{}, false, false, jobrecord.Change{}},
		{"pause", open, true, true, jobrecord.Change{Write: true, Record: with(open, func(r *jobrecord.Record) { r.Paused = true })}},
		{"resume", with(open, func(r *jobrecord.Record) { r.Paused = true }), true, false, jobrecord.Change{Write: true, Record: open}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := jobrecord.Pause(tt.r, tt.found, tt.paused); got != tt.want {
				t.Errorf("Pause = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestStatus_S9_RunningOnlyWhileOpen: the status reports an attempt
// running only while its slot is open.
func TestStatus_S9_RunningOnlyWhileOpen(t *testing.T) {
	got := jobrecord.Status(open, time.Minute)
	want := jobrecord.JobStatus{Slot: 10, HasSlot: true, Unfinished: 10, Attempt: 1, Running: true, Runs: 4, TTL: time.Minute}
	if got != want {
		t.Errorf("Status(open) = %+v, want %+v", got, want)
	}
	if st := jobrecord.Status(jobrecord.Record{Running: true, Paused: true}, time.Second); st.Running || !st.Paused {
		t.Errorf("Status(nothing open, paused) = %+v, want not running, paused", st)
	}
}

// TestHistory_S11_NewestFirstBounded: the ring indexes of the newest
// runs, newest first, at most n and at most JobHistoryLen.
func TestHistory_S11_NewestFirstBounded(t *testing.T) {
	tests := []struct {
		seq  int64
		n    int
		want []int
	}{
		{0, 10, nil},
		{3, 10, []int{2, 1, 0}},
		{3, 2, []int{2, 1}},
		{102, 3, []int{1, 0, 99}},
	}
	for _, tt := range tests {
		if got := jobrecord.History(jobrecord.Record{Seq: tt.seq}, tt.n); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("History(seq %d, n %d) = %v, want %v", tt.seq, tt.n, got, tt.want)
		}
	}
	if got := jobrecord.History(jobrecord.Record{Seq: 1000}, 1000); len(got) != jobrecord.JobHistoryLen || got[0] != 99 {
		t.Errorf("History(seq 1000, n 1000) = %d indexes from %d, want %d from 99", len(got), got[0], jobrecord.JobHistoryLen)
	}
}

// TestDecode_V2_RedisHashFields: the fields the Redis scripts wrote before
// records were decided in Go decode as the same record, and a record's
// fields decode back to it.
func TestDecode_V2_RedisHashFields(t *testing.T) {
	tests := []struct {
		name   string
		fields map[string]string
		want   jobrecord.Record
	}{
		{"nothing", map[string]string{}, jobrecord.Record{}},
		{"claimed and running", map[string]string{"slot": "10", "open": "10", "run": "1", "att": "1", "term": "t1", "until": "1700000060000", "seq": "4", "h3": "rec"},
			jobrecord.Record{Slot: 10, HasSlot: true, Open: 10, Running: true, Attempt: 1, Term: "t1", Until: 1_700_000_060_000, Seq: 4}},
		{"completed (open and run deleted), paused", map[string]string{"slot": "10", "att": "2", "term": "t1", "until": "5", "seq": "4", "paused": "1"},
			jobrecord.Record{Slot: 10, HasSlot: true, Attempt: 2, Term: "t1", Until: 5, Seq: 4, Paused: true}},
		{"cut short", map[string]string{"slot": "10", "open": "10", "run": "0", "att": "1", "term": "t1", "seq": "1"},
			jobrecord.Record{Slot: 10, HasSlot: true, Open: 10, Attempt: 1, Term: "t1", Seq: 1}},
		{"paused before any claim", map[string]string{"paused": "1"}, jobrecord.Record{Paused: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jobrecord.Decode(tt.fields)
			if err != nil || got != tt.want {
				t.Fatalf("Decode = %+v, %v; want %+v", got, err, tt.want)
			}
			again, err := jobrecord.Decode(got.Fields())
			if err != nil || again != got {
				t.Errorf("Decode(Fields()) = %+v, %v; want %+v", again, err, got)
			}
		})
	}
	for _, name := range []string{"slot", "open", "att", "until", "seq"} {
		if _, err := jobrecord.Decode(map[string]string{name: "x1"}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Decode(%s: x1) = %v, want an error naming the field", name, err)
		}
	}
}
