package locking

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hostloom/hostloom/core/jobrecord"
)

var _ jobrecord.Jobs = (*DistributedLock)(nil)

// JobKey validates key and returns the provider key of its job records:
// {namespace}:jobs:{key}, or {{namespace}}:jobs:{key} with UseHashTags
// (the state key rules of L8 with "jobs" for "state").
func (l *DistributedLock) JobKey(key string) (string, error) {
	if err := CheckKey(key, l.o.MaxKeyLength); err != nil {
		return "", err
	}
	return strings.TrimSuffix(l.state, "state:") + "jobs:" + key, nil
}

// jobs resolves key and the provider's job API.
func (l *DistributedLock) jobSlots(key string) (jobrecord.Jobs, string, error) {
	jkey, err := l.JobKey(key)
	if err != nil {
		return nil, "", err
	}
	if l.jobs == nil {
		return nil, "", fmt.Errorf("locking: job %q: %w", key, ErrNotSupported)
	}
	return l.jobs, jkey, nil
}

func checkTTL(op, key string, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("locking: %s %q: ttl %v must be at least 1ms", op, key, ttl)
	}
	return nil
}

// ClaimSlot implements jobrecord.Jobs. It returns an error matching
// ErrNotSupported when the provider keeps no job records or the lock is
// disabled, and one naming the field for an invalid claim.
func (l *DistributedLock) ClaimSlot(ctx context.Context, key string, c jobrecord.SlotClaim) (jobrecord.SlotClaimResult, error) {
	p, jkey, err := l.jobSlots(key)
	if err != nil {
		return jobrecord.SlotClaimResult{}, err
	}
	switch {
	case c.Slot < 0:
		return jobrecord.SlotClaimResult{}, fmt.Errorf("locking: claim %q: slot %d must not be negative", key, c.Slot)
	case c.Attempt < 1 || c.Attempt > jobrecord.MaxJobAttempts:
		return jobrecord.SlotClaimResult{}, fmt.Errorf("locking: claim %q: attempt %d must be in 1..%d", key, c.Attempt, jobrecord.MaxJobAttempts)
	case c.Attempt > 1 && c.Slot == 0:
		return jobrecord.SlotClaimResult{}, fmt.Errorf("locking: claim %q: attempt %d needs a slot", key, c.Attempt)
	case c.Term == "":
		return jobrecord.SlotClaimResult{}, fmt.Errorf("locking: claim %q: empty term", key)
	case c.Hold < 0:
		return jobrecord.SlotClaimResult{}, fmt.Errorf("locking: claim %q: hold %v must not be negative", key, c.Hold)
	}
	if err := checkTTL("claim", key, c.TTL); err != nil {
		return jobrecord.SlotClaimResult{}, err
	}
	r, err := p.ClaimSlot(ctx, jkey, c)
	if err != nil {
		return jobrecord.SlotClaimResult{}, fmt.Errorf("locking: claim %q: %w", key, err)
	}
	return r, nil
}

// CompleteSlot implements jobrecord.Jobs.
func (l *DistributedLock) CompleteSlot(ctx context.Context, key string, c jobrecord.SlotCompletion) (bool, error) {
	p, jkey, err := l.jobSlots(key)
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

// SetJobPaused implements jobrecord.Jobs.
func (l *DistributedLock) SetJobPaused(ctx context.Context, key string, paused bool, ttl time.Duration) error {
	p, jkey, err := l.jobSlots(key)
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

// JobStatus implements jobrecord.Jobs.
func (l *DistributedLock) JobStatus(ctx context.Context, key string) (jobrecord.JobStatus, error) {
	p, jkey, err := l.jobSlots(key)
	if err != nil {
		return jobrecord.JobStatus{}, err
	}
	st, err := p.JobStatus(ctx, jkey)
	if err != nil {
		return jobrecord.JobStatus{}, fmt.Errorf("locking: job status %q: %w", key, err)
	}
	return st, nil
}

// JobHistory implements jobrecord.Jobs; n must be in 1..JobHistoryLen.
func (l *DistributedLock) JobHistory(ctx context.Context, key string, n int) ([]string, error) {
	p, jkey, err := l.jobSlots(key)
	if err != nil {
		return nil, err
	}
	if n < 1 || n > jobrecord.JobHistoryLen {
		return nil, fmt.Errorf("locking: history %q: n %d must be in 1..%d", key, n, jobrecord.JobHistoryLen)
	}
	h, err := p.JobHistory(ctx, jkey, n)
	if err != nil {
		return nil, fmt.Errorf("locking: history %q: %w", key, err)
	}
	return h, nil
}
