package memlock

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

var _ locking.ProviderJobs = (*Provider)(nil)

// jobState is one job's records (locking.ProviderJobs). It is kept, as
// JSON, in the provider's expiring entries under the job key, so job
// records expire like the Redis ones and need no map of their own.
type jobState struct {
	Slot    int64    `json:"slot"`
	HasSlot bool     `json:"has_slot,omitempty"`
	Open    int64    `json:"open,omitempty"` // unfinished slot; 0 when none
	Running bool     `json:"running,omitempty"`
	Attempt int      `json:"attempt,omitempty"`
	Term    string   `json:"term,omitempty"`
	Until   int64    `json:"until,omitempty"` // Unix ns: the claiming term certainly ended
	Paused  bool     `json:"paused,omitempty"`
	Seq     int64    `json:"seq,omitempty"`
	History []string `json:"history,omitempty"` // ring: record seq at (seq-1) % JobHistoryLen
}

// loadJob reads key's job state; p.mu must be held.
func (p *Provider) loadJob(key string, now time.Time) (jobState, time.Duration, error) {
	e, ok := p.live(key, now)
	if !ok {
		return jobState{}, 0, nil
	}
	var st jobState
	if err := json.Unmarshal([]byte(e.value), &st); err != nil {
		return jobState{}, 0, fmt.Errorf("memlock: job records %q do not parse: %w", key, err)
	}
	return st, e.expires.Sub(now), nil
}

// storeJob writes key's job state with time to live ttl; p.mu must be held.
func (p *Provider) storeJob(key string, st jobState, ttl time.Duration, now time.Time) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("memlock: job records %q: %w", key, err)
	}
	p.entries[key] = entry{value: string(b), expires: now.Add(ttl)}
	p.wrote(now)
	return nil
}

// waitFor is how long until the unfinished attempt's term certainly ended.
func (st *jobState) waitFor(now time.Time) time.Duration {
	if !st.Running {
		return 0
	}
	return max(time.Unix(0, st.Until).Sub(now), 0)
}

// ClaimSlot implements locking.ProviderJobs.
func (p *Provider) ClaimSlot(ctx context.Context, key string, c locking.SlotClaim) (locking.SlotClaimResult, error) {
	if err := ctx.Err(); err != nil {
		return locking.SlotClaimResult{}, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	st, _, err := p.loadJob(key, now)
	if err != nil {
		return locking.SlotClaimResult{}, err
	}
	r := locking.SlotClaimResult{Previous: st.Slot, HasPrevious: st.HasSlot}
	if st.Paused {
		r.Status = locking.ClaimPaused
		if c.Attempt == 1 && c.Slot > 0 && (!st.HasSlot || st.Slot < c.Slot) {
			st.Slot, st.HasSlot = c.Slot, true
			return r, p.storeJob(key, st, c.TTL, now)
		}
		return r, nil
	}
	if c.Attempt > 1 {
		switch {
		case st.Open != c.Slot || st.Attempt != c.Attempt-1 || c.Attempt > locking.MaxJobAttempts || st.Term == c.Term:
			r.Status = locking.ClaimRefused
			return r, nil
		case st.waitFor(now) > 0:
			r.Status, r.Wait, r.Attempt = locking.ClaimWait, st.waitFor(now), st.Attempt
			return r, nil
		}
	} else {
		if c.Recover && st.Open != 0 && st.Term != c.Term && st.Attempt < locking.MaxJobAttempts {
			r.Status, r.Slot, r.Attempt, r.Wait = locking.ClaimRecoverable, st.Open, st.Attempt, st.waitFor(now)
			return r, nil
		}
		if c.Slot == 0 || (st.HasSlot && st.Slot >= c.Slot) {
			r.Status = locking.ClaimStarted
			return r, nil
		}
		st.Slot, st.HasSlot = c.Slot, true
	}
	st.Open, st.Running, st.Attempt, st.Term = c.Slot, true, c.Attempt, c.Term
	st.Until = now.Add(c.Hold).UnixNano()
	st.Seq++
	i := int((st.Seq - 1) % locking.JobHistoryLen)
	if i < len(st.History) {
		st.History[i] = c.Record
	} else {
		st.History = append(st.History, c.Record)
	}
	r.Status, r.Attempt, r.Seq = locking.ClaimGranted, c.Attempt, st.Seq
	return r, p.storeJob(key, st, c.TTL, now)
}

// CompleteSlot implements locking.ProviderJobs.
func (p *Provider) CompleteSlot(ctx context.Context, key string, c locking.SlotCompletion) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ttl, err := p.loadJob(key, now)
	if err != nil || ttl == 0 {
		return false, err
	}
	matched := st.Open != 0 && st.Open == c.Slot && st.Attempt == c.Attempt && st.Term == c.Term
	if matched {
		if c.Done {
			st.Open, st.Running = 0, false
		} else {
			st.Running = false
		}
	}
	if c.Seq > 0 && c.Seq <= st.Seq && c.Seq > st.Seq-locking.JobHistoryLen {
		if i := int((c.Seq - 1) % locking.JobHistoryLen); i < len(st.History) {
			st.History[i] = c.Record
		}
	}
	return matched, p.storeJob(key, st, c.TTL, now)
}

// SetJobPaused implements locking.ProviderJobs.
func (p *Provider) SetJobPaused(ctx context.Context, key string, paused bool, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	st, _, err := p.loadJob(key, now)
	if err != nil {
		return err
	}
	st.Paused = paused
	return p.storeJob(key, st, ttl, now)
}

// JobStatus implements locking.ProviderJobs.
func (p *Provider) JobStatus(ctx context.Context, key string) (locking.JobStatus, error) {
	if err := ctx.Err(); err != nil {
		return locking.JobStatus{}, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ttl, err := p.loadJob(key, now)
	if err != nil {
		return locking.JobStatus{}, err
	}
	return locking.JobStatus{
		Slot: st.Slot, HasSlot: st.HasSlot, Paused: st.Paused,
		Unfinished: st.Open, Attempt: st.Attempt, Running: st.Open != 0 && st.Running,
		Runs: st.Seq, TTL: ttl,
	}, nil
}

// JobHistory implements locking.ProviderJobs.
func (p *Provider) JobHistory(ctx context.Context, key string, n int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	st, _, err := p.loadJob(key, now)
	if err != nil {
		return nil, err
	}
	var out []string
	for seq := st.Seq; seq > 0 && seq > st.Seq-int64(min(n, locking.JobHistoryLen)); seq-- {
		if i := int((seq - 1) % locking.JobHistoryLen); i < len(st.History) {
			out = append(out, st.History[i])
		}
	}
	return out, nil
}
