package jobrecord

import "time"

// Change is what a decision writes: nothing (Write false), or the new
// record and, when Entry is not 0, the history record Value as run record
// Entry (at ring index RingIndex(Entry)), in one atomic step with the
// record.
type Change struct {
	Write  bool
	Record Record
	Entry  int64
	Value  string
}

// Claim decides claim c over the job's record r, read at now on the
// store's clock (S8–S10):
//
//   - A paused job refuses every claim (ClaimPaused); a first attempt's
//     slot later than the recorded one is recorded all the same, so that
//     nobody runs it after the resume.
//   - A recovery (Attempt 2 or more) is refused unless Slot is the open
//     slot at Attempt-1, Attempt is within MaxJobAttempts and the open
//     attempt is another term's; it waits (ClaimWait) while that attempt
//     has neither reported its end nor passed its hold.
//   - A first attempt asking to Recover is told about another term's open
//     slot whose attempts are not exhausted (ClaimRecoverable), writing
//     nothing; otherwise Slot 0, or a slot not later than the recorded one,
//     is ClaimStarted.
//   - A granted claim records its slot (first attempts), opens it at its
//     attempt and term, holds it until now+Hold, and writes its history
//     record as run Seq+1.
func Claim(r Record, now time.Time, c SlotClaim) (SlotClaimResult, Change) {
	res := SlotClaimResult{Previous: r.Slot, HasPrevious: r.HasSlot}
	if r.Paused {
		res.Status = ClaimPaused
		if c.Attempt == 1 && c.Slot != 0 && (!r.HasSlot || r.Slot < c.Slot) {
			r.Slot, r.HasSlot = c.Slot, true
			return res, Change{Write: true, Record: r}
		}
		return res, Change{}
	}
	if c.Attempt > 1 {
		switch {
		case r.Open == 0 || r.Open != c.Slot || r.Attempt != c.Attempt-1 || c.Attempt > MaxJobAttempts || r.Term == c.Term:
			res.Status = ClaimRefused
			return res, Change{}
		case r.waitFor(now) > 0:
			res.Status, res.Wait, res.Attempt = ClaimWait, r.waitFor(now), r.Attempt
			return res, Change{}
		}
	} else {
		if c.Recover && r.Open != 0 && r.Term != c.Term && r.Attempt < MaxJobAttempts {
			res.Status, res.Slot, res.Attempt, res.Wait = ClaimRecoverable, r.Open, r.Attempt, r.waitFor(now)
			return res, Change{}
		}
		if c.Slot == 0 || (r.HasSlot && r.Slot >= c.Slot) {
			res.Status = ClaimStarted
			return res, Change{}
		}
		r.Slot, r.HasSlot = c.Slot, true
	}
	r.Open, r.Running, r.Attempt, r.Term = c.Slot, true, c.Attempt, c.Term
	r.Until = untilMillis(now, c.Hold)
	r.Seq++
	res.Status, res.Attempt, res.Seq = ClaimGranted, c.Attempt, r.Seq
	return res, Change{Write: true, Record: r, Entry: r.Seq, Value: c.Record}
}

// Complete decides completion c over the job's record r; found is false
// when nothing is stored (then nothing is written). It reports whether
// the open claim was c's: then a Done run closes the slot and a run cut
// short leaves it open for recovery with its attempt ended. The run's
// history record is replaced while it is among the newest JobHistoryLen,
// whether or not the claim was still open.
func Complete(r Record, found bool, c SlotCompletion) (bool, Change) {
	if !found {
		return false, Change{}
	}
	matched := r.Open != 0 && r.Open == c.Slot && r.Attempt == c.Attempt && r.Term == c.Term
	if matched {
		r.Running = false
		if c.Done {
			r.Open = 0
		}
	}
	ch := Change{Write: true, Record: r}
	if c.Seq > 0 && c.Seq <= r.Seq && c.Seq > r.Seq-JobHistoryLen {
		ch.Entry, ch.Value = c.Seq, c.Record
	}
	return matched, ch
}

// Pause decides pausing (paused true) or resuming the job; found is false
// when nothing is stored, and resuming that writes nothing.
func Pause(r Record, found, paused bool) Change {
	if !found && !paused {
		return Change{}
	}
	r.Paused = paused
	return Change{Write: true, Record: r}
}

// Status returns the job's status from its record r with the records'
// remaining time to live ttl.
func Status(r Record, ttl time.Duration) JobStatus {
	return JobStatus{
		Slot: r.Slot, HasSlot: r.HasSlot, Paused: r.Paused,
		Unfinished: r.Open, Attempt: r.Attempt, Running: r.Open != 0 && r.Running,
		Runs: r.Seq, TTL: ttl,
	}
}

// History returns the ring indexes of up to n of the job's newest run
// records, newest first (S11).
func History(r Record, n int) []int {
	n = min(n, JobHistoryLen)
	var out []int
	for s := r.Seq; s > 0 && s > r.Seq-int64(n); s-- {
		out = append(out, RingIndex(s))
	}
	return out
}
