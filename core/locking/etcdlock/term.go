package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"math"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/locking"
)

// ErrTermEnded is matched by the error of a term check whose key has no
// lease or a lease of another acquisition: the caller's term is over, and
// its transaction did not commit. Such errors match locking.ErrStaleFence
// (fencing.ErrStale is the same value) as well. Use errors.As with
// *TermError for the details.
var ErrTermEnded = errors.New("etcdlock: the term has ended")

// ErrNoFence is returned by LeaderTerm for a context that carries no
// term's fence (not derived from an elector's Token, or over a lock
// without fences).
var ErrNoFence = errors.New("etcdlock: the context carries no fence")

// TermError is the error of a failed term check: the caller's term has
// Fence, while Key's lease carries fence Current, or, when Held is false,
// Key has no lease and Current is the last fence issued for it (0 when
// none was).
type TermError struct {
	Key     string
	Fence   uint64
	Current uint64
	Held    bool
}

func (e *TermError) Error() string {
	if e.Held {
		return fmt.Sprintf("etcdlock: the term has ended: %q is held with fence %d, this term has fence %d", e.Key, e.Current, e.Fence)
	}
	return fmt.Sprintf("etcdlock: the term has ended: %q has no lease (its last fence is %d), this term has fence %d", e.Key, e.Current, e.Fence)
}

// Is makes errors.Is hold for ErrTermEnded and locking.ErrStaleFence
// (which is fencing.ErrStale).
func (e *TermError) Is(target error) bool {
	return target == ErrTermEnded || target == locking.ErrStaleFence
}

// Term is a leader's term for the caller's own etcd transactions (N3):
// Cmps are the comparisons that hold only while the lease of the term's
// acquisition exists, so a transaction with them commits only while the
// term holds, as decided by etcd itself, whatever the clocks: a holder
// paused past its lease finds the lease revoked by the server. Else are
// the reads that let Check report why a transaction did not commit.
//
//	resp, err := cli.Txn(ctx).
//		If(append(term.Cmps(), yourCmps...)...).
//		Then(yourOps...).
//		Else(term.Else()...). // first in Else
//		Commit()
//	if err == nil {
//		err = term.Check(ctx, resp)
//	}
//
// The transaction must go to the cluster the provider uses (any client of
// it).
type Term struct {
	p     *Provider
	key   string
	fence uint64
}

// Term returns the term of providerKey (an elector's
// leadership.Describe(e).ProviderKey, or DistributedLock.ProviderKey)
// with fence (the lease's Fence, or locking.FenceFrom of a term's
// context). Fence 0 is refused with locking.ErrZeroFence (fencing.ErrZeroFence).
func (p *Provider) Term(providerKey string, fence uint64) (Term, error) {
	if err := checkKey("term", providerKey); err != nil {
		return Term{}, err
	}
	if fence == 0 {
		return Term{}, fmt.Errorf("etcdlock: term %q: %w", providerKey, locking.ErrZeroFence)
	}
	return Term{p: p, key: providerKey, fence: fence}, nil
}

// LeaderTerm is Term with the fence of the term ctx belongs to
// (locking.FenceFrom: an elector's Token, a scheduler run's context, or
// any context derived from them). It returns ErrNoFence when ctx carries
// none.
func (p *Provider) LeaderTerm(ctx context.Context, providerKey string) (Term, error) {
	fence, ok := locking.FenceFrom(ctx)
	if !ok {
		return Term{}, fmt.Errorf("etcdlock: term %q: %w", providerKey, ErrNoFence)
	}
	return p.Term(providerKey, fence)
}

// Key is the term's provider key.
func (t Term) Key() string { return t.key }

// Fence is the term's fence.
func (t Term) Fence() uint64 { return t.fence }

// Cmps returns the comparisons a transaction adds to its If so that it
// commits only while the term holds: the key's fence record was last
// written by the term's acquisition (its ModRevision is the fence), and
// the key has a holder. A release or an expiry deletes the lease record;
// a successor's acquisition, or a handover to it, writes the fence record.
func (t Term) Cmps() []clientv3.Cmp {
	rev := int64(math.MaxInt64)
	if t.fence <= math.MaxInt64 {
		rev = int64(t.fence)
	}
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(t.p.recKey(t.key, recFence)), "=", rev),
		clientv3.Compare(clientv3.CreateRevision(t.p.recKey(t.key, recLease)), ">", 0),
	}
}

// Else returns the reads a transaction puts first in its Else branch, so
// that Check reports the current fence without another request.
func (t Term) Else() []clientv3.Op {
	return []clientv3.Op{
		clientv3.OpGet(t.p.recKey(t.key, recLease)),
		clientv3.OpGet(t.p.recKey(t.key, recFence)),
	}
}

// Check reports what a transaction with Cmps came to: nil when it
// committed, or when it did not although the term holds (the caller's own
// comparisons failed: see resp.Succeeded); a *TermError naming both fences
// when the term has ended. It reads the Else branch's first two responses
// (Else first); without them it reads the key with ctx.
func (t Term) Check(ctx context.Context, resp *clientv3.TxnResponse) error {
	if resp == nil {
		return fmt.Errorf("etcdlock: term %q: no transaction response", t.key)
	}
	if resp.Succeeded {
		return nil
	}
	lk, fk := t.p.recKey(t.key, recLease), t.p.recKey(t.key, recFence)
	var lease, fence *pb.RangeResponse
	if len(resp.Responses) >= 2 {
		l, f := resp.Responses[0].GetResponseRange(), resp.Responses[1].GetResponseRange()
		if l != nil && f != nil && keyIs(l.Kvs, lk) && keyIs(f.Kvs, fk) {
			lease, fence = l, f
		}
	}
	if lease == nil {
		r, err := t.p.cli.Txn(ctx).Then(t.Else()...).Commit()
		if err != nil {
			return opError("term", t.key, ctx, err)
		}
		lease, fence = r.Responses[0].GetResponseRange(), r.Responses[1].GetResponseRange()
	}
	e := &TermError{Key: t.key, Fence: t.fence, Held: len(lease.Kvs) > 0}
	if kvs := fence.Kvs; len(kvs) > 0 {
		e.Current = uint64(kvs[0].ModRevision)
	}
	if e.Held && e.Current == t.fence {
		return nil // the term holds: the caller's own comparisons failed
	}
	return e
}

// keyIs reports whether kvs is empty or holds key.
func keyIs(kvs []*mvccpb.KeyValue, key string) bool {
	return len(kvs) == 0 || string(kvs[0].Key) == key
}
