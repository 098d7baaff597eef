package memlock

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

var _ slotstore.Jobs = (*Provider)(nil)

// jobState is one job's records (slotstore.Jobs). It is kept,
// encoded, in the provider's expiring entries under the job key, so job
// records expire like the Redis ones and need no map of their own.
type jobState struct {
	Slot    int64
	HasSlot bool
	Open    int64 // unfinished slot; 0 when none
	Running bool
	Attempt int
	Until   int64 // Unix ns: the claiming term certainly ended
	Paused  bool
	Seq     int64
	Term    string
}

// stateFields is how many '|'-separated fields an encoded jobState has; the
// term is last, so it may contain anything.
const stateFields = 9

func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// encode returns st as stored: decimal fields separated by '|', the term
// last.
func (st *jobState) encode() string {
	b := make([]byte, 0, 64+len(st.Term))
	for _, n := range [...]int64{st.Slot, flag(st.HasSlot), st.Open, flag(st.Running), int64(st.Attempt), st.Until, flag(st.Paused), st.Seq} {
		b = strconv.AppendInt(b, n, 10)
		b = append(b, '|')
	}
	return string(append(b, st.Term...))
}

// decodeState parses what encode stored.
func decodeState(v string) (jobState, error) {
	f := strings.SplitN(v, "|", stateFields)
	if len(f) != stateFields {
		return jobState{}, fmt.Errorf("%d fields, want %d", len(f), stateFields)
	}
	var n [stateFields - 1]int64
	for i := range n {
		x, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return jobState{}, err
		}
		n[i] = x
	}
	return jobState{
		Slot: n[0], HasSlot: n[1] == 1, Open: n[2], Running: n[3] == 1, Attempt: int(n[4]),
		Until: n[5], Paused: n[6] == 1, Seq: n[7], Term: f[stateFields-1],
	}, nil
}

// historyKey is the entry of the history record at ring index i of key:
// record seq lives at index (seq-1) % JobHistoryLen. The NUL cannot occur
// in a provider key (locking.CheckKey refuses control characters).
func historyKey(key string, i int64) string {
	return key + "\x00h" + strconv.FormatInt(i, 10)
}

// ringIndex is where record seq lives.
func ringIndex(seq int64) int64 { return (seq - 1) % slotstore.JobHistoryLen }

// loadJob reads key's job state; p.mu must be held.
func (p *Provider) loadJob(key string, now time.Time) (jobState, time.Duration, error) {
	e, ok := p.live(key, now)
	if !ok {
		return jobState{}, 0, nil
	}
	st, err := decodeState(e.value)
	if err != nil {
		return jobState{}, 0, fmt.Errorf("memlock: job records %q do not parse: %w", key, err)
	}
	return st, e.expires.Sub(now), nil
}

// storeJob writes key's job state with time to live ttl; p.mu must be
// held.
func (p *Provider) storeJob(key string, st jobState, ttl time.Duration, now time.Time) error {
	p.entries[key] = entry{value: st.encode(), expires: now.Add(ttl)}
	p.wrote(now)
	return nil
}

// setRecord stores history record seq of key with time to live ttl; p.mu
// must be held. Unlike the fields of a Redis hash, each record expires ttl
// after its own latest write (refreshing a hundred entries on every claim
// would cost more than the claim); JobHistory reads records only while the
// job's state lives, and a state that expired restarts at seq 1, so a
// record of an earlier life is never read.
func (p *Provider) setRecord(key string, seq int64, rec string, ttl time.Duration, now time.Time) {
	p.entries[historyKey(key, ringIndex(seq))] = entry{value: rec, expires: now.Add(ttl)}
}

// waitFor is how long until the unfinished attempt's term certainly ended.
func (st *jobState) waitFor(now time.Time) time.Duration {
	if !st.Running {
		return 0
	}
	return max(time.Unix(0, st.Until).Sub(now), 0)
}

// ClaimSlot implements slotstore.Jobs.
func (p *Provider) ClaimSlot(ctx context.Context, key string, c slotstore.SlotClaim) (slotstore.SlotClaimResult, error) {
	if err := ctx.Err(); err != nil {
		return slotstore.SlotClaimResult{}, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	st, _, err := p.loadJob(key, now)
	if err != nil {
		return slotstore.SlotClaimResult{}, err
	}
	r := slotstore.SlotClaimResult{Previous: st.Slot, HasPrevious: st.HasSlot}
	if st.Paused {
		r.Status = slotstore.ClaimPaused
		if c.Attempt == 1 && c.Slot > 0 && (!st.HasSlot || st.Slot < c.Slot) {
			st.Slot, st.HasSlot = c.Slot, true
			return r, p.storeJob(key, st, c.TTL, now)
		}
		return r, nil
	}
	if c.Attempt > 1 {
		switch {
		case st.Open != c.Slot || st.Attempt != c.Attempt-1 || c.Attempt > slotstore.MaxJobAttempts || st.Term == c.Term:
			r.Status = slotstore.ClaimRefused
			return r, nil
		case st.waitFor(now) > 0:
			r.Status, r.Wait, r.Attempt = slotstore.ClaimWait, st.waitFor(now), st.Attempt
			return r, nil
		}
	} else {
		if c.Recover && st.Open != 0 && st.Term != c.Term && st.Attempt < slotstore.MaxJobAttempts {
			r.Status, r.Slot, r.Attempt, r.Wait = slotstore.ClaimRecoverable, st.Open, st.Attempt, st.waitFor(now)
			return r, nil
		}
		if c.Slot == 0 || (st.HasSlot && st.Slot >= c.Slot) {
			r.Status = slotstore.ClaimStarted
			return r, nil
		}
		st.Slot, st.HasSlot = c.Slot, true
	}
	st.Open, st.Running, st.Attempt, st.Term = c.Slot, true, c.Attempt, c.Term
	st.Until = now.Add(c.Hold).UnixNano()
	st.Seq++
	p.setRecord(key, st.Seq, c.Record, c.TTL, now)
	r.Status, r.Attempt, r.Seq = slotstore.ClaimGranted, c.Attempt, st.Seq
	return r, p.storeJob(key, st, c.TTL, now)
}

// CompleteSlot implements slotstore.Jobs.
func (p *Provider) CompleteSlot(ctx context.Context, key string, c slotstore.SlotCompletion) (bool, error) {
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
	if c.Seq > 0 && c.Seq <= st.Seq && c.Seq > st.Seq-slotstore.JobHistoryLen {
		p.setRecord(key, c.Seq, c.Record, c.TTL, now)
	}
	return matched, p.storeJob(key, st, c.TTL, now)
}

// SetJobPaused implements slotstore.Jobs.
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

// JobStatus implements slotstore.Jobs.
func (p *Provider) JobStatus(ctx context.Context, key string) (slotstore.JobStatus, error) {
	if err := ctx.Err(); err != nil {
		return slotstore.JobStatus{}, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ttl, err := p.loadJob(key, now)
	if err != nil {
		return slotstore.JobStatus{}, err
	}
	return slotstore.JobStatus{
		Slot: st.Slot, HasSlot: st.HasSlot, Paused: st.Paused,
		Unfinished: st.Open, Attempt: st.Attempt, Running: st.Open != 0 && st.Running,
		Runs: st.Seq, TTL: ttl,
	}, nil
}

// JobHistory implements slotstore.Jobs.
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
	for seq := st.Seq; seq > 0 && seq > st.Seq-int64(min(n, slotstore.JobHistoryLen)); seq-- {
		if e, ok := p.live(historyKey(key, ringIndex(seq)), now); ok {
			out = append(out, e.value)
		}
	}
	return out, nil
}
