package redislock

import (
	"context"
	_ "embed" // the Lua scripts
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// The job record scripts (slotstore.Jobs). Each touches one hash, the
// job's key, so a call is one round trip routed by that key on Cluster.
var (
	//go:embed jobs_claim.lua
	jobsClaimLua string
	//go:embed jobs_complete.lua
	jobsCompleteLua string
	//go:embed jobs_pause.lua
	jobsPauseLua string
	//go:embed jobs_history.lua
	jobsHistoryLua string

	jobsClaim    = newScript(jobsClaimLua)
	jobsComplete = newScript(jobsCompleteLua)
	jobsPause    = newScript(jobsPauseLua)
	jobsHistory  = newScript(jobsHistoryLua)
)

var _ slotstore.Jobs = (*Provider)(nil)

// ClaimSlot implements slotstore.Jobs with one script (jobs_claim.lua).
// The hold is measured on the server's clock (TIME), so replicas' clocks
// do not matter to when a recovery may start.
func (p *Provider) ClaimSlot(ctx context.Context, key string, c slotstore.SlotClaim) (slotstore.SlotClaimResult, error) {
	if err := p.ready(); err != nil {
		return slotstore.SlotClaimResult{}, err
	}
	ttl, err := millis(c.TTL)
	if err != nil {
		return slotstore.SlotClaimResult{}, err
	}
	rec := "0"
	if c.Recover {
		rec = "1"
	}
	r, err := p.run(ctx, jobsClaim, []any{nil, nil, "1", key,
		strconv.FormatInt(c.Slot, 10), c.Attempt, rec, c.Term, c.Hold.Milliseconds(),
		slotstore.MaxJobAttempts, c.Record, ttl, slotstore.JobHistoryLen}).Slice()
	if err != nil {
		return slotstore.SlotClaimResult{}, opError("claim", ctx, err)
	}
	bad := func() (slotstore.SlotClaimResult, error) {
		return slotstore.SlotClaimResult{}, fmt.Errorf("redislock: claim %q: unexpected reply %v", key, r)
	}
	if len(r) != 5 {
		return bad()
	}
	status, ok := r[0].(string)
	wait, ok2 := r[2].(int64)
	attempt, ok3 := r[3].(int64)
	if !ok || !ok2 || !ok3 {
		return bad()
	}
	out := slotstore.SlotClaimResult{Wait: time.Duration(wait) * time.Millisecond, Attempt: int(attempt)}
	if prev, ok := r[1].(string); ok {
		if out.Previous, err = strconv.ParseInt(prev, 10, 64); err != nil {
			return bad()
		}
		out.HasPrevious = true
	}
	switch status {
	case "granted":
		out.Status = slotstore.ClaimGranted
		if out.Seq, ok = r[4].(int64); !ok {
			return bad()
		}
	case "recoverable":
		out.Status = slotstore.ClaimRecoverable
		s, ok := r[4].(string)
		if !ok {
			return bad()
		}
		if out.Slot, err = strconv.ParseInt(s, 10, 64); err != nil {
			return bad()
		}
	case "started":
		out.Status = slotstore.ClaimStarted
	case "paused":
		out.Status = slotstore.ClaimPaused
	case "wait":
		out.Status = slotstore.ClaimWait
	case "refused":
		out.Status = slotstore.ClaimRefused
	default:
		return bad()
	}
	return out, nil
}

// CompleteSlot implements slotstore.Jobs with one script
// (jobs_complete.lua).
func (p *Provider) CompleteSlot(ctx context.Context, key string, c slotstore.SlotCompletion) (bool, error) {
	if err := p.ready(); err != nil {
		return false, err
	}
	ttl, err := millis(c.TTL)
	if err != nil {
		return false, err
	}
	done := "0"
	if c.Done {
		done = "1"
	}
	n, err := p.run(ctx, jobsComplete, []any{nil, nil, "1", key,
		strconv.FormatInt(c.Slot, 10), c.Attempt, c.Term, done, c.Seq, c.Record, ttl, slotstore.JobHistoryLen}).Int64()
	if err != nil {
		return false, opError("complete", ctx, err)
	}
	return n == 1, nil
}

// SetJobPaused implements slotstore.Jobs with one script
// (jobs_pause.lua).
func (p *Provider) SetJobPaused(ctx context.Context, key string, paused bool, ttl time.Duration) error {
	if err := p.ready(); err != nil {
		return err
	}
	ms, err := millis(ttl)
	if err != nil {
		return err
	}
	flag := "0"
	if paused {
		flag = "1"
	}
	if err := p.run(ctx, jobsPause, []any{nil, nil, "1", key, flag, ms}).Err(); err != nil {
		return opError("pause", ctx, err)
	}
	return nil
}

// JobStatus implements slotstore.Jobs: HMGET and PTTL in one
// pipeline (one round trip; both read the same key).
func (p *Provider) JobStatus(ctx context.Context, key string) (slotstore.JobStatus, error) {
	if err := p.ready(); err != nil {
		return slotstore.JobStatus{}, err
	}
	var get *redis.SliceCmd
	var pttl *redis.DurationCmd
	_, err := p.c.Pipelined(ctx, func(pl redis.Pipeliner) error {
		get = pl.HMGet(ctx, key, "slot", "open", "run", "att", "paused", "seq")
		pttl = pl.PTTL(ctx, key)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return slotstore.JobStatus{}, opError("job status", ctx, err)
	}
	f := get.Val()
	if len(f) != 6 {
		return slotstore.JobStatus{}, fmt.Errorf("redislock: job status %q: unexpected reply %v", key, f)
	}
	num := func(name string, v any) (int64, error) {
		s, ok := v.(string)
		if !ok {
			return 0, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("redislock: job status %q: field %s %q is not an integer", key, name, s)
		}
		return n, nil
	}
	var st slotstore.JobStatus
	if _, ok := f[0].(string); ok {
		st.HasSlot = true
	}
	if st.Slot, err = num("slot", f[0]); err != nil {
		return slotstore.JobStatus{}, err
	}
	if st.Unfinished, err = num("open", f[1]); err != nil {
		return slotstore.JobStatus{}, err
	}
	att, err := num("att", f[3])
	if err != nil {
		return slotstore.JobStatus{}, err
	}
	if st.Runs, err = num("seq", f[5]); err != nil {
		return slotstore.JobStatus{}, err
	}
	st.Attempt = int(att)
	st.Running = st.Unfinished != 0 && f[2] == "1"
	st.Paused = f[4] == "1"
	if d := pttl.Val(); d > 0 {
		st.TTL = d
	}
	return st, nil
}

// JobHistory implements slotstore.Jobs with one script
// (jobs_history.lua).
func (p *Provider) JobHistory(ctx context.Context, key string, n int) ([]string, error) {
	if err := p.ready(); err != nil {
		return nil, err
	}
	r, err := p.run(ctx, jobsHistory, []any{nil, nil, "1", key, n, slotstore.JobHistoryLen}).Slice()
	if err != nil {
		return nil, opError("history", ctx, err)
	}
	out := make([]string, 0, len(r))
	for _, v := range r {
		if s, ok := v.(string); ok { // a missing field (nil) is skipped
			out = append(out, s)
		}
	}
	return out, nil
}
