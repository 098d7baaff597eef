package etcdlock

import (
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// With Options.ExpiryQuarantine, a key freed by the end of its lease (it
// ran out, or etcd revoked it) waits one lease before anyone takes it,
// while a key freed by a release is taken at once. An acquisition's
// transaction tells the two apart by the key's records: a release writes
// the note record ("r" and the successor) in the same revision as the
// deletion, after the fence record the acquisition wrote; an expiry
// writes nothing. The transaction takes the key only under a guard built
// from what this provider last read of those records (quarantineGuard):
//
//   - the key was never held: the fence record does not exist;
//   - the key was held at fence F and released since: the fence record
//     is still F's and a release note is newer;
//   - the key was freed by an expiry at fence F and this provider has
//     seen it free for a lease: the fence record is still F's.
//
// Otherwise the transaction's Else branch reads the records, and the
// provider classifies what it finds (quarantine): held, released (try
// again at once), never held (again at once), or expired (refused until a
// lease after this provider first saw it so). A holder whose lease etcd
// revoked while it still counted on it (see the README: a paused raft
// leader) believes it leads for at most its lease after its last
// acknowledged keep-alive, which came before the revocation, so it has
// stopped before any provider's lease-long wait ends, whatever it heard.

// expiryState is what a provider last read of a key's records.
type expiryState struct {
	fence     int64         // the fence record's ModRevision (0: none: never held)
	freedAt   time.Time     // when this provider first found the key free after an expiry at fence (zero: not seen so)
	holderTTL time.Duration // the longest granted TTL of a holder's lease this provider saw
}

// quarantines holds the expiryStates by provider key.
type quarantines struct {
	mu sync.Mutex
	m  map[string]expiryState
}

func (q *quarantines) get(key string) (expiryState, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	s, ok := q.m[key]
	return s, ok
}

func (q *quarantines) set(key string, s expiryState) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.m == nil {
		q.m = make(map[string]expiryState)
	}
	s.holderTTL = max(s.holderTTL, q.m[key].holderTTL)
	q.m[key] = s
}

// sawHolder records the granted TTL of the lease of key's holder, which
// bounds how long that holder believes it holds the key.
func (q *quarantines) sawHolder(key string, ttl time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.m == nil {
		q.m = make(map[string]expiryState)
	}
	s := q.m[key]
	s.holderTTL = max(s.holderTTL, ttl)
	q.m[key] = s
}

// wait is how long a key freed by an expiry waits: the longer of the
// caller's lease and the last holder's granted lease this provider saw,
// in whole seconds as etcd grants them.
func (s expiryState) wait(ttl time.Duration) time.Duration {
	return max(time.Duration(seconds(ttl))*time.Second, s.holderTTL)
}

// quarantineGuard returns the comparisons an acquisition of key adds to
// its transaction (see above).
func (p *Provider) quarantineGuard(key string, ttl time.Duration, now time.Time) []clientv3.Cmp {
	fk, nk := p.recKey(key, recFence), p.recKey(key, recNote)
	s, ok := p.quar.get(key)
	switch {
	case !ok || s.fence == 0:
		// Unknown, or never held when last read: take it only if it
		// still never was; the Else branch tells otherwise.
		return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(fk), "=", 0)}
	case !s.freedAt.IsZero() && !now.Before(s.freedAt.Add(s.wait(ttl))):
		return []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(fk), "=", s.fence)}
	default:
		// Released after fence: a note newer than the fence record whose
		// value is a release's ("r…"), not a resign request's ("s…").
		return []clientv3.Cmp{
			clientv3.Compare(clientv3.ModRevision(fk), "=", s.fence),
			clientv3.Compare(clientv3.ModRevision(nk), ">", s.fence),
			clientv3.Compare(clientv3.Value(nk), "<", "s"),
		}
	}
}

// quarantineOps are the reads an acquisition's Else branch adds: the
// fence record, then the note record.
func (p *Provider) quarantineOps(key string) []clientv3.Op {
	return []clientv3.Op{clientv3.OpGet(p.recKey(key, recFence)), clientv3.OpGet(p.recKey(key, recNote))}
}

// quarantine classifies a refused acquisition of key from its Else
// branch: held (the lease record exists), and the fence and note records
// read. again reports that the key is free to take now (released, or
// never held, or its expiry's wait is over): the caller tries again at
// once, under the new guard. wait, when positive, is how long the key
// still waits after an expiry.
func (p *Provider) quarantine(key string, held bool, fence, note []*mvccpb.KeyValue, ttl time.Duration, now time.Time) (wait time.Duration, again bool) {
	var f int64
	if len(fence) > 0 {
		f = fence[0].ModRevision
	}
	released := len(note) > 0 && note[0].ModRevision > f && string(note[0].Value) < "s"
	prev, _ := p.quar.get(key)
	s := expiryState{fence: f, holderTTL: prev.holderTTL}
	switch {
	case held:
		p.quar.set(key, s)
		return 0, false
	case f == 0 || released:
		p.quar.set(key, s)
		return 0, true
	}
	s.freedAt = now
	if prev.fence == f && !prev.freedAt.IsZero() {
		s.freedAt = prev.freedAt
	}
	p.quar.set(key, s)
	if left := s.freedAt.Add(s.wait(ttl)).Sub(now); left > 0 {
		return left, false
	}
	return 0, true
}

// tookKey records this provider's own acquisition of key at fence: its
// release will write a note newer than that.
func (p *Provider) tookKey(key string, fence int64) {
	p.quar.set(key, expiryState{fence: fence})
}
