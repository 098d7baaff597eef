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

	"github.com/hostloom/hostloom/core/jobrecord"
)

// Job records (jobrecord.RecordStore) and state values (L8). A state
// value is P+"s/"+K holding the decimal value. A job's record is P+"j/"+K
// (its fields, the granted lease seconds and when the lease runs out, as
// JSON) and its history ring P+"h/"+K+"\x00"+index, all attached to one
// etcd lease per job: a write refreshes it (a keep-alive) and the records
// run out together. A write commits in a transaction only if the record's
// ModRevision is the one read; the decisions are package jobrecord's.

// maxCASAttempts bounds the read-write rounds of Advance when it keeps
// losing to concurrent writers.
const maxCASAttempts = 20

// jobEnvelope is a job's record as stored.
type jobEnvelope struct {
	Fields  map[string]string `json:"fields"`
	Secs    int64             `json:"secs"`    // the granted TTL of the records' lease
	Expires int64             `json:"expires"` // Unix ms, on this provider's clock, the lease runs out
}

// jobToken is what SwapRecord needs of a read: the record's lease and
// its granted seconds.
type jobToken struct {
	lease clientv3.LeaseID
	secs  int64
}

func (p *Provider) jobKey(key string) string { return p.o.Prefix + "j/" + key }

func (p *Provider) historyKey(key string, i int) string {
	return p.o.Prefix + "h/" + key + "\x00" + strconv.Itoa(i)
}

// decodeJob parses a job's stored record read at now.
func decodeJob(key string, kv *mvccpb.KeyValue, now time.Time) (jobrecord.Stored, error) {
	var e jobEnvelope
	if err := json.Unmarshal(kv.Value, &e); err != nil {
		return jobrecord.Stored{}, fmt.Errorf("etcdlock: job records %q do not parse: %w", key, err)
	}
	ttl := time.UnixMilli(e.Expires).Sub(now)
	if ttl <= 0 { // its lease is running out: a write replaces it whole
		return jobrecord.Stored{Now: now, Version: kv.ModRevision}, nil
	}
	return jobrecord.Stored{
		Found: true, Fields: e.Fields, Version: kv.ModRevision, Now: now, TTL: ttl,
		Token: jobToken{lease: clientv3.LeaseID(kv.Lease), secs: e.Secs},
	}, nil
}

// LoadRecord implements jobrecord.RecordStore in one read. Its clock is
// this provider's (etcd has none to offer).
func (p *Provider) LoadRecord(ctx context.Context, key string) (jobrecord.Stored, error) {
	if err := checkKey("load record", key); err != nil {
		return jobrecord.Stored{}, err
	}
	resp, err := p.cli.Get(ctx, p.jobKey(key))
	if err != nil {
		return jobrecord.Stored{}, opError("load record", key, ctx, err)
	}
	if len(resp.Kvs) == 0 {
		return jobrecord.Stored{Now: time.Now()}, nil
	}
	return decodeJob(key, resp.Kvs[0], time.Now())
}

// SwapRecord implements jobrecord.RecordStore: it refreshes the record's
// lease (or grants one when there is none or it is shorter than w.TTL)
// and writes the record, and the history entry, in a transaction that
// commits only if the record's ModRevision is from.Version.
func (p *Provider) SwapRecord(ctx context.Context, key string, from jobrecord.Stored, w jobrecord.Write) (bool, error) {
	if err := checkKey("swap record", key); err != nil {
		return false, err
	}
	if err := checkTTL("swap record", w.TTL); err != nil {
		return false, err
	}
	ok, err := p.swapJob(ctx, key, from, w)
	if err != nil {
		return false, opError("swap record", key, ctx, err)
	}
	return ok, nil
}

func (p *Provider) swapJob(ctx context.Context, key string, from jobrecord.Stored, w jobrecord.Write) (bool, error) {
	secs := seconds(w.TTL)
	tok, _ := from.Token.(jobToken)
	lease, granted := tok.lease, tok.secs
	sent := time.Now()
	if lease != 0 && granted >= secs {
		r, err := keepAliveOnce(ctx, p, lease)
		if err != nil {
			if errors.Is(err, rpctypes.ErrLeaseNotFound) {
				return false, nil // ran out since the read: read again
			}
			return false, err
		}
		granted = r.TTL
	} else {
		l, err := p.grant(ctx, secs)
		if err != nil {
			return false, err
		}
		lease, granted = l.id, int64(l.ttl/time.Second)
	}
	b, err := json.Marshal(jobEnvelope{Fields: w.Fields, Secs: granted, Expires: sent.Add(time.Duration(granted) * time.Second).UnixMilli()})
	if err != nil {
		return false, err
	}
	jk := p.jobKey(key)
	ops := []clientv3.Op{clientv3.OpPut(jk, string(b), clientv3.WithLease(lease))}
	if w.HasEntry {
		ops = append(ops, clientv3.OpPut(p.historyKey(key, w.Index), w.Entry, clientv3.WithLease(lease)))
	}
	resp, err := p.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(jk), "=", from.Version)).Then(ops...).Commit()
	if err == nil && resp.Succeeded {
		return true, nil
	}
	if lease != tok.lease {
		p.revoke(lease)
	}
	if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return false, err
	}
	return false, nil
}

// LoadHistory implements jobrecord.RecordStore in one read-only
// transaction.
func (p *Provider) LoadHistory(ctx context.Context, key string) (jobrecord.Stored, map[int]string, error) {
	if err := checkKey("history", key); err != nil {
		return jobrecord.Stored{}, nil, err
	}
	resp, err := p.cli.Txn(ctx).Then(
		clientv3.OpGet(p.jobKey(key)),
		clientv3.OpGet(p.o.Prefix+"h/"+key+"\x00", clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return jobrecord.Stored{}, nil, opError("history", key, ctx, err)
	}
	now := time.Now()
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return jobrecord.Stored{Now: now}, nil, nil
	}
	st, err := decodeJob(key, kvs[0], now)
	if err != nil {
		return jobrecord.Stored{}, nil, err
	}
	entries := make(map[int]string)
	base := len(p.o.Prefix + "h/" + key + "\x00")
	for _, kv := range resp.Responses[1].GetResponseRange().GetKvs() {
		if i, err := strconv.Atoi(string(kv.Key[base:])); err == nil {
			entries[i] = string(kv.Value)
		}
	}
	return st, entries, nil
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

// Advance implements jobrecord.State: the value is written when it is
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
	return false, 0, fmt.Errorf("etcdlock: advance %q: %w %d times", key, jobrecord.ErrConflict, maxCASAttempts)
}

// State implements jobrecord.State in one read.
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
