package locking

import (
	"context"
	"fmt"
	"strings"
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
	// StateStore.Advance); 0 claims nothing and only asks for recovery.
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

// ProviderJobs is implemented by providers that keep the scheduler's job
// records (S9–S11): one record set per key, every method one atomic step
// (for Redis, one round trip on one key, so it works on Redis Cluster with
// or without hash tags), every write setting the key's time to live.
// Keys are provider keys.
type ProviderJobs interface {
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

// JobStore is the job store the scheduler uses for recovery, pause and
// history (S9–S11), with consumer keys under the lock's namespace (see
// DistributedLock.JobKey). *DistributedLock implements it over memlock and
// redislock; SupportsJobs reports whether its provider does.
type JobStore interface {
	StateStore
	// SupportsJobs reports whether the methods below work (the provider
	// implements ProviderJobs and the lock is enabled).
	SupportsJobs() bool
	ClaimSlot(ctx context.Context, key string, c SlotClaim) (SlotClaimResult, error)
	CompleteSlot(ctx context.Context, key string, c SlotCompletion) (bool, error)
	SetJobPaused(ctx context.Context, key string, paused bool, ttl time.Duration) error
	JobStatus(ctx context.Context, key string) (JobStatus, error)
	JobHistory(ctx context.Context, key string, n int) ([]string, error)
}

var _ JobStore = (*DistributedLock)(nil)

// JobKey validates key and returns the provider key of its job records:
// {namespace}:jobs:{key}, or {{namespace}}:jobs:{key} with UseHashTags
// (the state key rules of L8 with "jobs" for "state").
func (l *DistributedLock) JobKey(key string) (string, error) {
	if err := CheckKey(key, l.o.MaxKeyLength); err != nil {
		return "", err
	}
	return strings.TrimSuffix(l.state, "state:") + "jobs:" + key, nil
}

// SupportsJobs implements JobStore.
func (l *DistributedLock) SupportsJobs() bool {
	_, ok := l.p.(ProviderJobs)
	return ok && l.o.Enabled
}

// jobs resolves key and the provider's job API.
func (l *DistributedLock) jobs(key string) (ProviderJobs, string, error) {
	jkey, err := l.JobKey(key)
	if err != nil {
		return nil, "", err
	}
	p, ok := l.p.(ProviderJobs)
	if !ok || !l.o.Enabled {
		return nil, "", ErrNotSupported
	}
	return p, jkey, nil
}

func checkTTL(op, key string, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("locking: %s %q: ttl %v must be at least 1ms", op, key, ttl)
	}
	return nil
}

// ClaimSlot implements JobStore. It returns an error matching
// ErrNotSupported when the provider keeps no job records or the lock is
// disabled, and one naming the field for an invalid claim.
func (l *DistributedLock) ClaimSlot(ctx context.Context, key string, c SlotClaim) (SlotClaimResult, error) {
	p, jkey, err := l.jobs(key)
	if err != nil {
		return SlotClaimResult{}, err
	}
	switch {
	case c.Slot < 0:
		return SlotClaimResult{}, fmt.Errorf("locking: claim %q: slot %d must not be negative", key, c.Slot)
	case c.Attempt < 1 || c.Attempt > MaxJobAttempts:
		return SlotClaimResult{}, fmt.Errorf("locking: claim %q: attempt %d must be in 1..%d", key, c.Attempt, MaxJobAttempts)
	case c.Attempt > 1 && c.Slot == 0:
		return SlotClaimResult{}, fmt.Errorf("locking: claim %q: attempt %d needs a slot", key, c.Attempt)
	case c.Term == "":
		return SlotClaimResult{}, fmt.Errorf("locking: claim %q: empty term", key)
	case c.Hold < 0:
		return SlotClaimResult{}, fmt.Errorf("locking: claim %q: hold %v must not be negative", key, c.Hold)
	}
	if err := checkTTL("claim", key, c.TTL); err != nil {
		return SlotClaimResult{}, err
	}
	r, err := p.ClaimSlot(ctx, jkey, c)
	if err != nil {
		return SlotClaimResult{}, fmt.Errorf("locking: claim %q: %w", key, err)
	}
	return r, nil
}

// CompleteSlot implements JobStore.
func (l *DistributedLock) CompleteSlot(ctx context.Context, key string, c SlotCompletion) (bool, error) {
	p, jkey, err := l.jobs(key)
	if err != nil {
		return false, err
	}
	if err := checkTTL("complete", key, c.TTL); err != nil {
		return false, err
	}
	ok, err := p.CompleteSlot(ctx, jkey, c)
	if err != nil {
		return false, fmt.Errorf("locking: complete %q: %w", key, err)
	}
	return ok, nil
}

// SetJobPaused implements JobStore.
func (l *DistributedLock) SetJobPaused(ctx context.Context, key string, paused bool, ttl time.Duration) error {
	p, jkey, err := l.jobs(key)
	if err != nil {
		return err
	}
	if err := checkTTL("pause", key, ttl); err != nil {
		return err
	}
	if err := p.SetJobPaused(ctx, jkey, paused, ttl); err != nil {
		return fmt.Errorf("locking: pause %q: %w", key, err)
	}
	return nil
}

// JobStatus implements JobStore.
func (l *DistributedLock) JobStatus(ctx context.Context, key string) (JobStatus, error) {
	p, jkey, err := l.jobs(key)
	if err != nil {
		return JobStatus{}, err
	}
	st, err := p.JobStatus(ctx, jkey)
	if err != nil {
		return JobStatus{}, fmt.Errorf("locking: job status %q: %w", key, err)
	}
	return st, nil
}

// JobHistory implements JobStore; n must be in 1..JobHistoryLen.
func (l *DistributedLock) JobHistory(ctx context.Context, key string, n int) ([]string, error) {
	p, jkey, err := l.jobs(key)
	if err != nil {
		return nil, err
	}
	if n < 1 || n > JobHistoryLen {
		return nil, fmt.Errorf("locking: history %q: n %d must be in 1..%d", key, n, JobHistoryLen)
	}
	h, err := p.JobHistory(ctx, jkey, n)
	if err != nil {
		return nil, fmt.Errorf("locking: history %q: %w", key, err)
	}
	return h, nil
}
