package etcdlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/locking"
)

// A handover in one write.
//
// etcd's own election hands over with one raft write: the leader deletes
// its key, and the next candidate, whose key was written while it waited,
// leads when the deletion reaches its watch. A release followed by an
// acquisition costs two writes, one after the other. So a holder's
// release that names its successor (balancing, a hand-over to a named
// participant) hands the key over instead: one transaction that, while
// the successor's participant record exists, stores a new ownership value naming the successor in the lease record
// (kept on the same etcd lease) and the successor's name in the fence
// record. The transaction's revision is the successor's fence (larger
// than every fence before, G1); the leaver's term ends with it, as its
// fence record changes (Term). Watchers see it as a release naming the
// successor (so the other candidates wait for it, B1) followed by its
// acquisition. When no successor's record exists any more, the same
// transaction deletes the key instead, as a plain release.
//
// The successor's provider learns the handover from its watch of the key
// and, when its elector then acquires, adopts the key with one keep-alive
// of the lease (no raft write), sent beside a read that checks the lease
// record still stores the handed-over value: the lease then lives at least
// its TTL from the acquisition, as for any acquisition, and the key stores
// that value as long as the lease lives (only its holder writes it). The
// adopter keeps the handed-over value as the key's stored value: its
// extensions and its release compare that one.
//
// A successor without a watch of the key (a lock without events) finds
// the handover when its next attempt is refused, and adopts it then. A
// successor that does not take the key at all (its process stopped after
// the handover was sent) holds it in name until the lease runs out: the
// role is then leaderless for up to a lease, as after a crash of a leader.

// offer is a handover the provider saw on a key's watch, until the
// successor adopts it or a later event of the key replaces it.
type offer struct {
	target string // the successor's owner identity
	value  string // the ownership value the handover stored
	lease  clientv3.LeaseID
	rev    int64 // the handover's revision: the successor's fence
	// session is the successor's session lease the handover was bound
	// to (0 when unbound).
	session clientv3.LeaseID
}

// offers holds the handovers seen on watches, by provider key.
type offers struct {
	mu sync.Mutex
	m  map[string]offer
}

func (o *offers) set(key string, v offer) {
	o.mu.Lock()
	if o.m == nil {
		o.m = make(map[string]offer)
	}
	o.m[key] = v
	o.mu.Unlock()
}

func (o *offers) drop(key string) {
	o.mu.Lock()
	delete(o.m, key)
	o.mu.Unlock()
}

// take returns and forgets key's offer when it names owner.
func (o *offers) take(key, owner string) (offer, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.m[key]
	if !ok || v.target != owner {
		return offer{}, false
	}
	delete(o.m, key)
	return v, true
}

// handedValue is a new ownership value for successor, in the form of
// value (a token, a colon, the owner: see locking's ownership values), so
// that readers find successor as the holder. ok is false for a value of
// another form, which is then released, not handed over.
func handedValue(value, successor string) (string, bool) {
	i := strings.IndexByte(value, ':')
	if i <= 0 {
		return "", false
	}
	b := make([]byte, (i+1)/2)
	if _, err := rand.Read(b); err != nil {
		return "", false
	}
	return hex.EncodeToString(b)[:i] + ":" + successor, true
}

// handover is one way a release may hand its key over: to target, while
// target's participant record exists, or, with session set, while that
// record is attached to the successor's session lease session. A
// handover bound to the session is announced with it (a note of the same
// revision), and the successor's provider, whose session it is, takes the
// key with a keep-alive alone (see adopt).
type handover struct {
	target  string
	session clientv3.LeaseID
}

// successors returns how a release of h hands the key to the named
// target, in order: bound to the target's session when the holder's
// latest read of the participants (at most a lease old) shows it, then
// unbound. None when the release names no successor, or names the holder
// itself: a release that names no successor is a plain one, its key free
// at once for any candidate, as over every provider (a successor chosen
// here might be a participant whose process has stopped, and would hold
// the role in name for a lease).
func (p *Provider) successors(r locking.ReleaseRequest, h heldLease) []handover {
	if r.Target == "" || r.Target == h.owner {
		return nil
	}
	pk := p.participantPrefix(r.Key) + r.Target
	for _, kv := range h.parts.kvs {
		if string(kv.Key) == pk && kv.Lease != 0 {
			return []handover{{r.Target, clientv3.LeaseID(kv.Lease)}, {target: r.Target}}
		}
	}
	return []handover{{target: r.Target}}
}

// releaseOps returns the Then branch of the release of h: each handover
// in turn, while its condition holds; else a plain release (the lease
// record deleted, with a note "r" naming r.Target, if any, in the same
// revision, by which watchers tell a release from an expiry). n is the
// number of handovers in the branch.
func (p *Provider) releaseOps(r locking.ReleaseRequest, h heldLease, hs []handover) (ops []clientv3.Op, n int) {
	lk := p.recKey(r.Key, recLease)
	ops = []clientv3.Op{clientv3.OpDelete(lk), clientv3.OpPut(p.recKey(r.Key, recNote), "r"+r.Target)}
	values := make([]string, len(hs))
	for i, ho := range hs {
		v, ok := handedValue(h.stored(r.Value), ho.target)
		if !ok {
			return ops, 0
		}
		values[i] = v
	}
	for i := len(hs) - 1; i >= 0; i-- {
		pk := p.participantPrefix(r.Key) + hs[i].target
		cmp := clientv3.Compare(clientv3.CreateRevision(pk), ">", 0)
		hand := []clientv3.Op{
			clientv3.OpPut(lk, values[i], clientv3.WithLease(h.id)),
			clientv3.OpPut(p.recKey(r.Key, recFence), hs[i].target),
		}
		if hs[i].session != 0 {
			cmp = clientv3.Compare(clientv3.LeaseValue(pk), "=", hs[i].session)
			hand = append(hand, clientv3.OpPut(p.recKey(r.Key, recNote), "h"+strconv.FormatInt(int64(hs[i].session), 16)))
		}
		ops = []clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{cmp}, hand, ops)}
	}
	return ops, len(hs)
}

// handedTo reports whether the release's transaction (committed) handed
// the key over, following its nested transactions over n successors.
func handedTo(resp *clientv3.TxnResponse, n int) bool {
	rs := resp.Responses
	for range n {
		if len(rs) == 0 {
			return false
		}
		t := rs[0].GetResponseTxn()
		if t == nil {
			return false
		}
		if t.Succeeded {
			return true
		}
		rs = t.Responses
	}
	return false
}

// isHandover reports whether ev, a put of key's lease record, is a
// handover: the record existed before (a put that did not create it) and
// the fence record was written in the same revision. Moving the key to a
// longer lease (Extend) writes the lease record alone.
func isHandover(ev *clientv3.Event, evs []*clientv3.Event) (successor string, ok bool) {
	if ev.Type != mvccpb.PUT || ev.Kv.CreateRevision == ev.Kv.ModRevision {
		return "", false
	}
	for _, n := range evs {
		k := n.Kv.Key
		if n.Type == mvccpb.PUT && n.Kv.ModRevision == ev.Kv.ModRevision && len(k) > 0 && k[len(k)-1] == recFence {
			return string(n.Kv.Value), true
		}
	}
	return "", false
}

// adopt takes a key handed over to r.Owner (o): one keep-alive of the
// lease and, beside it, one read of the lease record, of r.Owner's
// participant record and of the participants (for the extensions). done
// is false when the handover cannot be taken (the lease ran out, the
// record changed, or the handover is not this provider's to take: see
// below): the caller then acquires as usual, and is refused while the
// handed-over record lives.
//
// A handover is taken once: a second acquisition after the adopter's term
// ended (a renewal it could not confirm, say) finds the same record, and
// taking it again would give a second term the same fence (G1 wants a
// larger one). So the provider remembers the handover it took last per
// key. And it is this provider's to take only when r.Owner's participant
// record is attached to this provider's session lease and was written
// before the handover: a process that started after it with the same
// identity (a restart) registered anew, so its record is newer, and does
// not take a key its previous incarnation may have taken.
func (p *Provider) adopt(ctx context.Context, r locking.AcquireRequest, o offer) (res locking.AcquireResult, done bool, err error) {
	if r.ParticipantTTL <= 0 {
		return res, false, nil // no registration to prove whose the handover is
	}
	p.mu.Lock()
	prev, seen := p.adopted[r.Key]
	if seen && prev >= o.rev {
		p.mu.Unlock()
		return res, false, nil
	}
	p.adopted[r.Key] = o.rev
	p.mu.Unlock()
	retry := func() {
		p.mu.Lock()
		if p.adopted[r.Key] == o.rev {
			if seen {
				p.adopted[r.Key] = prev
			} else {
				delete(p.adopted, r.Key)
			}
		}
		p.mu.Unlock()
		p.offers.set(r.Key, o) // the next attempt tries again
	}
	reg, err := p.registration(ctx, r.Key, r.Owner, r.ParticipantTTL, r.Priority)
	if err != nil {
		retry()
		return res, true, err
	}
	if reg.put != nil {
		return res, false, nil // not registered through this provider
	}
	if o.session != 0 && o.session == reg.id {
		// Bound to this provider's session: a keep-alive is proof enough.
		// After the handover only a holder of the handed-over value
		// writes the lease record while the lease lives, and the only
		// provider that may hold it is the one whose session the handover
		// names, this one, which has not taken it: so while the lease
		// lives the record is as the handover wrote it, and a keep-alive
		// that finds the lease alive proves it and starts its TTL.
		sent := time.Now()
		reg.refresh(ctx)
		ka, err := keepAliveOnce(ctx, p, o.lease)
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return res, false, nil
		}
		if err != nil {
			retry()
			return res, true, err
		}
		return p.recordAdoption(ctx, r, o, heldLease{key: r.Key, id: o.lease, ttl: time.Duration(ka.TTL) * time.Second, refreshed: sent,
			owner: r.Owner, registered: true, value: o.value})
	}
	lk, pk := p.recKey(r.Key, recLease), p.participantPrefix(r.Key)+r.Owner
	var ka *clientv3.LeaseKeepAliveResponse
	var kaErr error
	var wg sync.WaitGroup
	sent := time.Now()
	wg.Go(func() { ka, kaErr = keepAliveOnce(ctx, p, o.lease) })
	reg.refresh(ctx)
	resp, err := p.cli.Txn(ctx).Then(clientv3.OpGet(lk), clientv3.OpGet(pk), p.participantsOp(r.Key)).Commit()
	wg.Wait()
	if err != nil {
		retry()
		return res, true, err
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 || string(kvs[0].Value) != o.value || clientv3.LeaseID(kvs[0].Lease) != o.lease || kvs[0].ModRevision != o.rev {
		return res, false, nil
	}
	pkv := resp.Responses[1].GetResponseRange().GetKvs()
	if len(pkv) == 0 || clientv3.LeaseID(pkv[0].Lease) != reg.id || pkv[0].ModRevision >= o.rev {
		return res, false, nil
	}
	if kaErr != nil {
		if errors.Is(kaErr, rpctypes.ErrLeaseNotFound) {
			return res, false, nil
		}
		retry()
		return res, true, kaErr
	}
	return p.recordAdoption(ctx, r, o, heldLease{key: r.Key, id: o.lease, ttl: time.Duration(ka.TTL) * time.Second, refreshed: sent,
		owner: r.Owner, registered: true, value: o.value,
		parts: participantsRead{kvs: resp.Responses[2].GetResponseRange().GetKvs(), at: sent}})
}

// recordAdoption records the adoption of o as h and returns its result, moving
// the key to a longer lease first when h's is shorter than r.TTL.
func (p *Provider) recordAdoption(ctx context.Context, r locking.AcquireRequest, o offer, h heldLease) (res locking.AcquireResult, done bool, err error) {
	p.mu.Lock()
	p.held[r.Value] = h
	p.mu.Unlock()
	if h.ttl < r.TTL {
		// The leaver's lease is shorter than this holder's: move the key
		// to a lease of its own before it counts as taken.
		ok, err := p.extendLease(ctx, locking.ExtendRequest{Key: r.Key, Value: r.Value, TTL: r.TTL}, h)
		if err != nil || !ok {
			p.forget(r.Value)
			return res, true, err
		}
	}
	p.yields.Reset(r.Key)
	if p.o.ExpiryQuarantine {
		p.tookKey(r.Key, o.rev)
	}
	res.Acquired, res.Fence = true, uint64(o.rev)
	return res, true, nil
}

// handedOver reports the handover to r.Owner that a refused acquisition
// found (the lease record kvs), reading the fence record: a lease record
// written after its creation in the same revision as the fence record
// naming r.Owner. It costs that read only when the lease record was
// written after its creation (a handover, or a move to a longer lease).
func (p *Provider) handedOver(ctx context.Context, r locking.AcquireRequest, kv *mvccpb.KeyValue) (offer, bool) {
	if kv.CreateRevision == kv.ModRevision {
		return offer{}, false
	}
	resp, err := p.cli.Get(ctx, p.recKey(r.Key, recFence))
	if err != nil || len(resp.Kvs) == 0 {
		return offer{}, false
	}
	f := resp.Kvs[0]
	if f.ModRevision != kv.ModRevision || string(f.Value) != r.Owner {
		return offer{}, false
	}
	return offer{target: r.Owner, value: string(kv.Value), lease: clientv3.LeaseID(kv.Lease), rev: kv.ModRevision}, true
}

// handoverSession is the session lease a handover at revision rev was
// bound to: its note of the same revision, 0 when none.
func handoverSession(evs []*clientv3.Event, rev int64) clientv3.LeaseID {
	for _, n := range evs {
		k, v := n.Kv.Key, n.Kv.Value
		if n.Type == mvccpb.PUT && n.Kv.ModRevision == rev && len(k) > 0 && k[len(k)-1] == recNote && len(v) > 1 && v[0] == 'h' {
			if id, err := strconv.ParseInt(string(v[1:]), 16, 64); err == nil {
				return clientv3.LeaseID(id)
			}
		}
	}
	return 0
}
