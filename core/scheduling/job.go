package scheduling

import (
	"context"
	"time"
)

// Job is work run on a schedule while the scheduler's Leadership leads.
type Job struct {
	// Name identifies the job in logs, metrics, Jobs and the slot store
	// key. Required, unique per scheduler, without whitespace or control
	// characters.
	Name string

	// Schedule decides when the job falls due: Every or Cron. Required.
	Schedule Schedule

	// Run is the work. Its ctx ends when the leadership term in which the
	// run started ends, when the scheduler stops, or at Timeout; Run must
	// return promptly then. A returned error or a panic is logged and
	// counted (S3). Required.
	Run func(ctx context.Context) error

	// Timeout bounds each run: its ctx ends Timeout after the run starts.
	// Zero means no timeout. Negative is rejected by Add.
	Timeout time.Duration

	// Jitter delays each run by a random duration in [0, Jitter), so jobs
	// sharing a slot do not all hit their dependencies at once. The slot
	// stays the scheduled time; it is claimed after the delay. Zero means
	// no delay. Negative is rejected by Add.
	Jitter time.Duration

	// Overlap decides what happens to a slot that falls due while the
	// previous run is going (S7). Zero means OverlapSkip. Add rejects an
	// unknown value.
	Overlap OverlapPolicy

	// CatchUp decides which slots nobody started this instance runs when
	// it starts leading (S8). Zero means CatchUpLatest. It needs a slot
	// store (without one nobody can tell which slots were started). Add
	// rejects an unknown value.
	CatchUp CatchUpPolicy

	// Recover makes a slot whose run started but did not finish (its term
	// ended, its process died) run once more on the next leader, with
	// AttemptFrom 2 (then 3; at most slotstore.MaxJobAttempts attempts), after
	// the earlier attempt's term has certainly ended (S9): at-least-once
	// per slot instead of at-most-once. It needs a slot store that keeps
	// job records (slotstore.Jobs); Add rejects it otherwise.
	Recover bool
}

// Outcome is how a run ended.
type Outcome int

// Run outcomes (attribute outcome of MetricRuns).
const (
	// Success: Run returned nil.
	Success Outcome = iota + 1
	// Failure: Run returned an error while its ctx was still live.
	Failure
	// Panic: Run panicked; the scheduler recovered.
	Panic
	// Timeout: Run returned an error after its Timeout had expired.
	Timeout
	// Canceled: Run returned an error after its ctx was cancelled because
	// leadership ended, the scheduler stopped, or a later slot replaced
	// the run (OverlapCancelPrevious).
	Canceled

	outcomeCount
)

// String returns the outcome's lower-case name, as used in metrics.
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Panic:
		return "panic"
	case Timeout:
		return "timeout"
	case Canceled:
		return "canceled"
	default:
		return "unknown"
	}
}

// JobInfo describes a job's state, as reported by Scheduler.Jobs.
type JobInfo struct {
	// Name and Schedule (its String) of the job.
	Name     string
	Schedule string
	// Next is the next slot the scheduler will act on; zero when the
	// schedule has no further slot.
	Next time.Time
	// Running reports whether a run is going now.
	Running bool
	// LastSlot is the slot of the latest run started on this instance,
	// LastRun when it started; zero before the first run.
	LastSlot time.Time
	LastRun  time.Time
	// LastOutcome and LastError describe the latest finished run; zero and
	// nil before the first finishes. LastError is nil after a success.
	LastOutcome Outcome
	LastError   error
	// LastSuccess is when the latest successful run started.
	LastSuccess time.Time
	// Paused is the job's paused state as this instance last saw it: set
	// by Pause and Resume here and by every claim of the slot store (so a
	// follower may report a stale value).
	Paused bool
	// Upcoming are the next slots from Next on, at most UpcomingSlots of
	// them (fewer when the schedule ends); empty when Next is zero. For
	// operators' views: computed from the schedule, not stored.
	Upcoming []time.Time
	// Timeout, Jitter, Overlap, CatchUp and Recover are the job's options
	// with their defaults applied.
	Timeout time.Duration
	Jitter  time.Duration
	Overlap OverlapPolicy
	CatchUp CatchUpPolicy
	Recover bool
}

// UpcomingSlots is how many slots JobInfo.Upcoming lists.
const UpcomingSlots = 5

// RunRecord is one run in a job's history (S11).
type RunRecord struct {
	// Slot is the slot the run was for.
	Slot time.Time
	// Started and Ended are when the run started and returned; Ended is
	// zero while it runs, or when its process died before reporting.
	Started, Ended time.Time
	// Identity is the identity of the instance that ran it.
	Identity string
	// Fence is the fencing token of the term it ran in; 0 when the lock
	// issues none.
	Fence uint64
	// Outcome is how it ended; zero (String "unknown") while it runs or
	// when it never reported its end.
	Outcome Outcome
	// Attempt is 1 for a slot's first run, 2 or more for a recovery.
	Attempt int
	// Schedule is the job's schedule when the run was recorded, as
	// ScheduleSpec writes it: text Cron reads back for the schedules of
	// this package, so a tool without the job's code (the hostloom CLI)
	// can show the schedule and compute the next slot. Empty in records
	// written before it was kept.
	Schedule string
}
