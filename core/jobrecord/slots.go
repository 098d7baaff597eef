package jobrecord

import (
	"context"
	"time"
)

// JobHistoryLen is how many run records a job store keeps per job (S11):
// the newest JobHistoryLen; older ones are overwritten.
const JobHistoryLen = 100

// MaxJobAttempts bounds SlotClaim.Attempt: a slot is started at most this
// many times (the first attempt and two recoveries, S9).
const MaxJobAttempts = 3

// ClaimStatus is what a SlotClaim achieved.
type ClaimStatus int

// Claim statuses.
const (
	// ClaimGranted: the slot is claimed; the caller runs it.
	ClaimGranted ClaimStatus = iota + 1
	// ClaimStarted: the slot (or a later one) is already recorded, or the
	// claim asked only for recovery (Slot 0) and none was due.
	ClaimStarted
	// ClaimPaused: the job is paused (S10). A first attempt's slot is
	// recorded as passed all the same, so nobody runs it later.
	ClaimPaused
	// ClaimRecoverable: the claim asked for recovery and the job has an
	// unfinished slot (SlotClaimResult.Slot, its latest attempt
	// SlotClaimResult.Attempt) started in another term. Nothing was
	// written: the caller waits SlotClaimResult.Wait and claims that slot
	// with the next attempt number.
	ClaimRecoverable
	// ClaimWait: a recovery claim came before the earlier attempt's term
	// has certainly ended; retry after SlotClaimResult.Wait.
	ClaimWait
	// ClaimRefused: a recovery claim whose slot is no longer unfinished at
	// the given attempt (someone else recovered or completed it), whose
	// attempt exceeds MaxJobAttempts, or whose earlier attempt belongs to
	// the claiming term itself.
	ClaimRefused
)

// String returns the status's lower-case name.
func (c ClaimStatus) String() string {
	switch c {
	case ClaimGranted:
		return "granted"
	case ClaimStarted:
		return "started"
	case ClaimPaused:
		return "paused"
	case ClaimRecoverable:
		return "recoverable"
	case ClaimWait:
		return "wait"
	case ClaimRefused:
		return "refused"
	default:
		return "unknown"
	}
}

// SlotClaim asks a job store to record that a run of a slot starts.
type SlotClaim struct {
	// Slot is the slot, in Unix milliseconds. With Attempt 1 it must be
	// greater than every slot recorded for the job (the monotonic rule of
	// State.Advance); 0 claims nothing and only asks for recovery.
	Slot int64
	// Attempt is 1 for a slot's first run; 2 or more re-claims Slot, which
	// must be the job's unfinished slot at attempt Attempt-1 (S9).
	Attempt int
	// Recover asks, with Attempt 1, to be told about an unfinished slot of
	// another term first (ClaimRecoverable) instead of claiming Slot.
	Recover bool
	// Term identifies the claiming leadership term (any string unique per
	// term, e.g. identity, instance and term number). A term never
	// recovers its own attempts.
	Term string
	// Hold is how long after the claim, on the store's clock, the claiming
	// term has certainly ended when it was not renewed: the term's lease.
	// A recovery of this attempt waits for it while the attempt has not
	// reported its end (CompleteSlot).
	Hold time.Duration
	// Record is the history record of the run (opaque to the store),
	// stored as the job's newest.
	Record string
	// TTL is the time to live the job's records get with this write.
	TTL time.Duration
}

// SlotClaimResult is the outcome of a ClaimSlot.
type SlotClaimResult struct {
	// Status says what happened.
	Status ClaimStatus
	// Previous is the latest slot recorded before this claim; HasPrevious
	// is false when none was.
	Previous    int64
	HasPrevious bool
	// Slot is the unfinished slot (ClaimRecoverable).
	Slot int64
	// Attempt is the granted attempt (ClaimGranted) or the unfinished
	// slot's latest attempt (ClaimRecoverable).
	Attempt int
	// Wait is how long until the earlier attempt's term has certainly
	// ended (ClaimRecoverable, ClaimWait); 0 when it has.
	Wait time.Duration
	// Seq identifies the granted run's history record for CompleteSlot.
	Seq int64
}

// SlotCompletion reports the end of a run granted by ClaimSlot.
type SlotCompletion struct {
	// Slot, Attempt and Term are those of the granted claim.
	Slot    int64
	Attempt int
	Term    string
	// Seq is SlotClaimResult.Seq of the claim.
	Seq int64
	// Done is true when the slot needs no recovery (the run finished, or
	// failed in a way a re-run would not fix); false when it was cut short
	// (its term ended), which leaves it to the next leader's recovery.
	Done bool
	// Record replaces the run's history record (its outcome and end).
	Record string
	// TTL is the time to live the job's records get with this write.
	TTL time.Duration
}

// JobStatus is a job's stored state.
type JobStatus struct {
	// Slot is the latest recorded slot (Unix milliseconds); HasSlot is
	// false when none is.
	Slot    int64
	HasSlot bool
	// Paused reports whether the job is paused (S10).
	Paused bool
	// Unfinished is the slot of the latest claim that has not completed
	// (0 when none); Attempt its attempt; Running whether that attempt
	// has not reported its end.
	Unfinished int64
	Attempt    int
	Running    bool
	// Runs is how many run records were ever written (history length is
	// min(Runs, JobHistoryLen)).
	Runs int64
	// TTL is the records' remaining time to live; 0 when nothing is stored.
	TTL time.Duration
}

// State is the small state API the scheduler uses for its slots (L8): a
// monotonic value per key. It is implemented by *locking.DistributedLock
// (consumer keys under the lock's namespace) and by the providers of this
// module (provider keys).
type State interface {
	// Advance sets key to value when value is greater than the stored value
	// (or nothing is stored), in one round trip. It reports whether it set
	// the value and the value stored afterwards.
	Advance(ctx context.Context, key string, value int64) (advanced bool, current int64, err error)
	// State reads key's value; ok is false when nothing is stored.
	State(ctx context.Context, key string) (value int64, ok bool, err error)
}

// Jobs is the job slots capability: the scheduler's job records for
// recovery, pause and history (S9–S11) besides the slot state. Store
// implements it over a RecordStore, deciding with Claim, Complete and
// Pause (V1); *locking.DistributedLock implements it with consumer keys
// under its namespace (see DistributedLock.JobKey), answering
// locking.ErrNotSupported when its provider keeps no records. A provider
// may still implement Jobs itself (the interface before RecordStore):
// locking.New takes a RecordStore first.
//
// Without it the scheduler keeps its slots with State alone when the
// store has that (at most once per slot, no Recover, Pause or History),
// or keeps no slots at all (ticks that fell due while not leading are not
// replayed).
type Jobs interface {
	State
	// ClaimSlot records the start of a run of a slot; see SlotClaim.
	ClaimSlot(ctx context.Context, key string, c SlotClaim) (SlotClaimResult, error)
	// CompleteSlot records a run's end and replaces its history record.
	// It reports whether the job's unfinished claim was this run's (false
	// when a later claim superseded it; the record is replaced anyway
	// while it is among the newest JobHistoryLen).
	CompleteSlot(ctx context.Context, key string, c SlotCompletion) (bool, error)
	// SetJobPaused pauses or resumes the job.
	SetJobPaused(ctx context.Context, key string, paused bool, ttl time.Duration) error
	// JobStatus reads the job's state.
	JobStatus(ctx context.Context, key string) (JobStatus, error)
	// JobHistory returns up to n of the job's newest run records, newest
	// first; n is at most JobHistoryLen.
	JobHistory(ctx context.Context, key string, n int) ([]string, error)
}
