package etcdlock

import (
	"context"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/locking"
)

// Inspect implements locking.Inspector: the holder, the last fence (the
// revision of the latest acquisition, kept after a release) and the live
// participants in one read-only transaction, then the holder's remaining
// time from its lease (a second request).
func (p *Provider) Inspect(ctx context.Context, key string) (locking.ProviderKeyState, error) {
	var st locking.ProviderKeyState
	if err := checkKey("inspect", key); err != nil {
		return st, err
	}
	resp, err := p.cli.Txn(ctx).Then(
		clientv3.OpGet(p.recKey(key, recLease)),
		clientv3.OpGet(p.recKey(key, recFence)),
		p.participantsOp(key),
	).Commit()
	if err != nil {
		return st, opError("inspect", key, ctx, err)
	}
	if kvs := resp.Responses[1].GetResponseRange().GetKvs(); len(kvs) > 0 {
		st.Fence = uint64(kvs[0].ModRevision)
	}
	var perr error
	st.Participants, perr = p.decodeParticipants(key, resp.Responses[2].GetResponseRange().GetKvs())
	if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
		st.Held, st.Value = true, string(kvs[0].Value)
		ttl, err := p.cli.TimeToLive(ctx, clientv3.LeaseID(kvs[0].Lease))
		if err != nil {
			return locking.ProviderKeyState{}, opError("inspect", key, ctx, err)
		}
		if rem, ok := remaining(ttl); ok {
			st.TTL = rem
		} else {
			st.Held, st.Value = false, "" // ran out between the two requests
		}
	}
	return st, perr
}

// Keys implements locking.Inspector: the keys starting with prefix that
// were ever acquired (their fence is kept) or have live participants, in
// two range reads of keys only.
func (p *Provider) Keys(ctx context.Context, prefix string) ([]string, error) {
	resp, err := p.cli.Txn(ctx).Then(
		clientv3.OpGet(p.o.Prefix+"k/"+prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(p.o.Prefix+"p/"+prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly()),
	).Commit()
	if err != nil {
		return nil, opError("keys", prefix, ctx, err)
	}
	var keys []string
	for i, base := range []string{p.o.Prefix + "k/", p.o.Prefix + "p/"} {
		for _, kv := range resp.Responses[i].GetResponseRange().GetKvs() {
			k, rec, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), base), "\x00")
			if ok && (i == 1 || rec == string(recFence)) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// RequestResign implements locking.ResignRequester: a note to key's
// watchers asking owner ("" for whoever holds key) to step down; one put.
func (p *Provider) RequestResign(ctx context.Context, key, owner string) error {
	if err := checkKey("resign", key); err != nil {
		return err
	}
	if _, err := p.cli.Put(ctx, p.recKey(key, recNote), "s"+owner); err != nil {
		return opError("resign", key, ctx, err)
	}
	return nil
}
