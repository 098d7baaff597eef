package etcdlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// Job records (slotstore.Jobs) and state values (L8). A state value is
// P+"s/"+K holding the decimal value. A job's records are P+"j/"+K (the
// state below, as JSON) and its history ring P+"h/"+K+"\x00"+index, all
// attached to one etcd lease per job: a write refreshes it (a keep-alive)
// and the records run out together. Each operation reads the record and
// writes it back in a transaction that commits only if the record is
// unchanged since the read (its ModRevision), trying again otherwise:
// the decisions are taken in Go between the two.

// maxCASAttempts bounds the read-decide-write rounds of one operation
// that keeps losing to concurrent writers.
const maxCASAttempts = 20

// jobState is one job's records.
type jobState struct {
	Slot    int64  `json:"slot"`
	HasSlot bool   `json:"has_slot"`
	Open    int64  `json:"open"` // unfinished slot; 0 when none
	Running bool   `json:"running"`
	Attempt int    `json:"attempt"`
	Until   int64  `json:"until"` // Unix ms: the claiming term certainly ended
	Paused  bool   `json:"paused"`
	Seq     int64  `json:"seq"`
	Term    string `json:"term"`
	Secs    int64  `json:"secs"` // the granted TTL of the records' lease
}

// jobRead is a job's records as read: st (zero when absent), the lease
// they are attached to and the revision to compare with.
type jobRead struct {
	st    jobState
	lease clientv3.LeaseID
	rev   int64 // ModRevision; 0 when absent
}

func (p *Provider) jobKey(key string) string { return p.o.Prefix + "j/" + key }

func (p *Provider) historyKey(key string, seq int64) string {
	return p.o.Prefix + "h/" + key + "\x00" + strconv.FormatInt((seq-1)%slotstore.JobHistoryLen, 10)
}

func (p *Provider) readJob(ctx context.Context, key string) (jobRead, error) {
	resp, err := p.cli.Get(ctx, p.jobKey(key))
	if err != nil {
		return jobRead{}, err
	}
	if len(resp.Kvs) == 0 {
		return jobRead{}, nil
	}
	kv := resp.Kvs[0]
	var st jobState
	if err := json.Unmarshal(kv.Value, &st); err != nil {
		return jobRead{}, fmt.Errorf("job records %q do not parse: %w", key, err)
	}
	return jobRead{st: st, lease: clientv3.LeaseID(kv.Lease), rev: kv.ModRevision}, nil
}

// errConflict is a write that lost to a concurrent one.
var errConflict = errors.New("etcdlock: concurrent job write")

// writeJob writes st (and history record rec at seq, when seq > 0) with
// time to live ttl, when key's record is still as r read it.
func (p *Provider) writeJob(ctx context.Context, key string, r jobRead, st jobState, seq int64, rec string, ttl time.Duration) error {
	secs := seconds(ttl)
	lease := r.lease
	if lease != 0 && r.st.Secs >= secs {
		if _, err := p.cli.KeepAliveOnce(ctx, lease); err != nil {
			if !errors.Is(err, rpctypes.ErrLeaseNotFound) {
				return err
			}
			return errConflict // ran out since the read: read again
		}
		st.Secs = r.st.Secs
	} else {
		l, err := p.grant(ctx, secs)
		if err != nil {
			return err
		}
		lease, st.Secs = l.id, int64(l.ttl/time.Second)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	jk := p.jobKey(key)
	ops := []clientv3.Op{clientv3.OpPut(jk, string(b), clientv3.WithLease(lease))}
	// A new record set has no history to drop: an earlier set's ran out
	// with its lease.
	if seq > 0 {
		ops = append(ops, clientv3.OpPut(p.historyKey(key, seq), rec, clientv3.WithLease(lease)))
	}
	resp, err := p.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(jk), "=", r.rev)).Then(ops...).Commit()
	if err != nil {
		if lease != r.lease {
			p.revoke(lease)
		}
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return errConflict
		}
		return err
	}
	if !resp.Succeeded {
		if lease != r.lease {
			p.revoke(lease)
		}
		return errConflict
	}
	return nil
}

// inJob runs decide on key's records until its write commits; decide
// returns what to write (write false: nothing).
func (p *Provider) inJob(ctx context.Context, op, key string, ttl time.Duration, decide func(st jobState, found bool, now time.Time) (n jobState, write bool, seq int64, rec string)) error {
	if err := checkKey(op, key); err != nil {
		return err
	}
	if err := checkTTL(op, ttl); err != nil {
		return err
	}
	for range maxCASAttempts {
		r, err := p.readJob(ctx, key)
		if err != nil {
			return opError(op, key, ctx, err)
		}
		n, write, seq, rec := decide(r.st, r.rev != 0, time.Now())
		if !write {
			return nil
		}
		err = p.writeJob(ctx, key, r, n, seq, rec, ttl)
		if errors.Is(err, errConflict) {
			continue
		}
		if err != nil {
			return opError(op, key, ctx, err)
		}
		return nil
	}
	return fmt.Errorf("etcdlock: %s %q: %w %d times", op, key, errConflict, maxCASAttempts)
}

// waitFor is how long until the unfinished attempt's term certainly ended.
func (st *jobState) waitFor(now time.Time) time.Duration {
	if !st.Running {
		return 0
	}
	return max(time.UnixMilli(st.Until).Sub(now), 0)
}

// ClaimSlot implements slotstore.Jobs (the rules of the other providers'
// job records, on the provider's clock).
func (p *Provider) ClaimSlot(ctx context.Context, key string, c slotstore.SlotClaim) (slotstore.SlotClaimResult, error) {
	var res slotstore.SlotClaimResult
	err := p.inJob(ctx, "claim", key, c.TTL, func(st jobState, _ bool, now time.Time) (jobState, bool, int64, string) {
		res = slotstore.SlotClaimResult{Previous: st.Slot, HasPrevious: st.HasSlot}
		if st.Paused {
			res.Status = slotstore.ClaimPaused
			if c.Attempt == 1 && c.Slot > 0 && (!st.HasSlot || st.Slot < c.Slot) {
				st.Slot, st.HasSlot = c.Slot, true
				return st, true, 0, ""
			}
			return st, false, 0, ""
		}
		if c.Attempt > 1 {
			switch {
			case st.Open != c.Slot || st.Attempt != c.Attempt-1 || c.Attempt > slotstore.MaxJobAttempts || st.Term == c.Term:
				res.Status = slotstore.ClaimRefused
				return st, false, 0, ""
			case st.waitFor(now) > 0:
				res.Status, res.Wait, res.Attempt = slotstore.ClaimWait, st.waitFor(now), st.Attempt
				return st, false, 0, ""
			}
		} else {
			if c.Recover && st.Open != 0 && st.Term != c.Term && st.Attempt < slotstore.MaxJobAttempts {
				res.Status, res.Slot, res.Attempt, res.Wait = slotstore.ClaimRecoverable, st.Open, st.Attempt, st.waitFor(now)
				return st, false, 0, ""
			}
			if c.Slot == 0 || (st.HasSlot && st.Slot >= c.Slot) {
				res.Status = slotstore.ClaimStarted
				return st, false, 0, ""
			}
			st.Slot, st.HasSlot = c.Slot, true
		}
		st.Open, st.Running, st.Attempt, st.Term = c.Slot, true, c.Attempt, c.Term
		st.Until = now.Add(c.Hold).UnixMilli()
		st.Seq++
		res.Status, res.Attempt, res.Seq = slotstore.ClaimGranted, c.Attempt, st.Seq
		return st, true, st.Seq, c.Record
	})
	if err != nil {
		return slotstore.SlotClaimResult{}, err
	}
	return res, nil
}

// CompleteSlot implements slotstore.Jobs.
func (p *Provider) CompleteSlot(ctx context.Context, key string, c slotstore.SlotCompletion) (bool, error) {
	var matched bool
	err := p.inJob(ctx, "complete", key, c.TTL, func(st jobState, found bool, _ time.Time) (jobState, bool, int64, string) {
		matched = false
		if !found {
			return st, false, 0, "" // nothing stored: nothing to complete
		}
		if st.Open != 0 && st.Open == c.Slot && st.Attempt == c.Attempt && st.Term == c.Term {
			matched = true
			if c.Done {
				st.Open, st.Running = 0, false
			} else {
				st.Running = false
			}
		}
		var seq int64
		if c.Seq > 0 && c.Seq <= st.Seq && c.Seq > st.Seq-slotstore.JobHistoryLen {
			seq = c.Seq
		}
		return st, true, seq, c.Record
	})
	return matched, err
}

// SetJobPaused implements slotstore.Jobs.
func (p *Provider) SetJobPaused(ctx context.Context, key string, paused bool, ttl time.Duration) error {
	return p.inJob(ctx, "pause", key, ttl, func(st jobState, _ bool, _ time.Time) (jobState, bool, int64, string) {
		st.Paused = paused
		return st, true, 0, ""
	})
}

// JobStatus implements slotstore.Jobs: one read, and the records' lease's
// remaining time (a second request).
func (p *Provider) JobStatus(ctx context.Context, key string) (slotstore.JobStatus, error) {
	if err := checkKey("job status", key); err != nil {
		return slotstore.JobStatus{}, err
	}
	r, err := p.readJob(ctx, key)
	if err != nil {
		return slotstore.JobStatus{}, opError("job status", key, ctx, err)
	}
	if r.rev == 0 {
		return slotstore.JobStatus{}, nil
	}
	st := r.st
	js := slotstore.JobStatus{
		Slot: st.Slot, HasSlot: st.HasSlot, Paused: st.Paused,
		Unfinished: st.Open, Attempt: st.Attempt, Running: st.Open != 0 && st.Running, Runs: st.Seq,
	}
	ttl, err := p.cli.TimeToLive(ctx, r.lease)
	if err != nil {
		return slotstore.JobStatus{}, opError("job status", key, ctx, err)
	}
	rem, ok := remaining(ttl)
	if !ok {
		return slotstore.JobStatus{}, nil
	}
	js.TTL = rem
	return js, nil
}

// JobHistory implements slotstore.Jobs in one read-only transaction.
func (p *Provider) JobHistory(ctx context.Context, key string, n int) ([]string, error) {
	if err := checkKey("history", key); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("etcdlock: history %q: n %d must be positive", key, n)
	}
	resp, err := p.cli.Txn(ctx).Then(
		clientv3.OpGet(p.jobKey(key)),
		clientv3.OpGet(p.o.Prefix+"h/"+key+"\x00", clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return nil, opError("history", key, ctx, err)
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return nil, nil
	}
	var st jobState
	if err := json.Unmarshal(kvs[0].Value, &st); err != nil {
		return nil, fmt.Errorf("etcdlock: history %q: job records do not parse: %w", key, err)
	}
	recs := make(map[string]*mvccpb.KeyValue)
	for _, kv := range resp.Responses[1].GetResponseRange().GetKvs() {
		recs[string(kv.Key)] = kv
	}
	var out []string
	for seq := st.Seq; seq > 0 && seq > st.Seq-int64(min(n, slotstore.JobHistoryLen)); seq-- {
		if kv, ok := recs[p.historyKey(key, seq)]; ok {
			out = append(out, string(kv.Value))
		}
	}
	return out, nil
}

// JobKeys lists the keys starting with prefix (provider keys, as
// locking.DistributedLock.JobKey returns them) that have live job
// records, sorted: for operators' tools such as the hostloom CLI's jobs
// verb. One range read of keys only.
func (p *Provider) JobKeys(ctx context.Context, prefix string) ([]string, error) {
	base := p.o.Prefix + "j/"
	resp, err := p.cli.Get(ctx, base+prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, opError("job keys", prefix, ctx, err)
	}
	keys := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key[len(base):]))
	}
	return keys, nil
}

// Advance implements slotstore.State: the value is written when it is
// greater than the stored one, in a transaction that compares the stored
// revision (read first; tried again after a concurrent write).
func (p *Provider) Advance(ctx context.Context, key string, value int64) (bool, int64, error) {
	if err := checkKey("advance", key); err != nil {
		return false, 0, err
	}
	sk := p.o.Prefix + "s/" + key
	for range maxCASAttempts {
		resp, err := p.cli.Get(ctx, sk)
		if err != nil {
			return false, 0, opError("advance", key, ctx, err)
		}
		var rev int64
		if len(resp.Kvs) > 0 {
			cur, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
			if err != nil {
				return false, 0, fmt.Errorf("etcdlock: advance %q: stored value %q: %w", key, resp.Kvs[0].Value, err)
			}
			if cur >= value {
				return false, cur, nil
			}
			rev = resp.Kvs[0].ModRevision
		}
		t, err := p.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(sk), "=", rev)).
			Then(clientv3.OpPut(sk, strconv.FormatInt(value, 10))).Commit()
		if err != nil {
			return false, 0, opError("advance", key, ctx, err)
		}
		if t.Succeeded {
			return true, value, nil
		}
	}
	return false, 0, fmt.Errorf("etcdlock: advance %q: %w %d times", key, errConflict, maxCASAttempts)
}

// State implements slotstore.State in one read.
func (p *Provider) State(ctx context.Context, key string) (int64, bool, error) {
	if err := checkKey("state", key); err != nil {
		return 0, false, err
	}
	resp, err := p.cli.Get(ctx, p.o.Prefix+"s/"+key)
	if err != nil {
		return 0, false, opError("state", key, ctx, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, false, nil
	}
	v, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("etcdlock: state %q: stored value %q: %w", key, resp.Kvs[0].Value, err)
	}
	return v, true, nil
}
