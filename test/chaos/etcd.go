//go:build unix

package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
	"github.com/hostloom/hostloom/core/locking/etcdlock/etcdtest"
)

// Fault kinds of an etcd run (Config.Etcd), each on the three-member
// cluster the replicas elect over. etcd commits every acquisition and
// renewal to a majority before it answers and keeps every lease across a
// change of its own leader, so none of them may let two replicas work for
// one role at once: an overlap that begins during one of them (or within
// a lease of its heal) fails the run, unless the replica's own pause
// explains it.
const (
	// FaultEtcdMemberKill kills a member that is not the raft leader
	// (SIGKILL) and restarts it on its data after longer than a lease.
	FaultEtcdMemberKill FaultKind = "etcd-member-kill"
	// FaultEtcdMemberPause stops a member (SIGSTOP; the leader or not)
	// for longer than a lease, then continues it (SIGCONT).
	FaultEtcdMemberPause FaultKind = "etcd-member-pause"
	// FaultEtcdPartition cuts a member (the leader or not) off from the
	// other two, both ways, for longer than a lease; the replicas' clients
	// still reach it.
	FaultEtcdPartition FaultKind = "etcd-partition"
	// FaultEtcdLeaderKill kills the raft leader (SIGKILL), so the others
	// elect another, and restarts it after a recovery bound.
	FaultEtcdLeaderKill FaultKind = "etcd-leader-kill"
	// FaultEtcdRestart kills every member at once and starts them again
	// on their data.
	FaultEtcdRestart FaultKind = "etcd-restart"
)

// EtcdExpiryLag is how late etcd may end an expired lease: its lessor
// revokes expired leases on a 500 ms tick. A role whose holder died is
// free up to that long after the lease ran out (Limits.ExpiryLag).
const EtcdExpiryLag = 500 * time.Millisecond

// etcdElectionTimeout is the members' election timeout (etcdtest's
// default): a new raft leader restarts every lease's TTL plus it.
const etcdElectionTimeout = 500 * time.Millisecond

// promoteExtension is Fault.Extended for a fault that can elect a new raft
// leader: every lease's TTL (the lease in whole seconds, rounded up, as
// etcdlock grants it) plus the election timeout.
func (r *run) promoteExtension() time.Duration {
	ttl := (r.cfg.Lease + time.Second - 1).Truncate(time.Second)
	return ttl + etcdElectionTimeout
}

// EtcdFaults are the fault kinds of a run over etcd: the member faults,
// the replica faults and the link faults through each replica's proxies.
var EtcdFaults = []FaultKind{
	FaultEtcdMemberKill, FaultEtcdMemberPause, FaultEtcdPartition, FaultEtcdLeaderKill, FaultEtcdRestart,
	FaultKill, FaultPause, FaultBlackhole, FaultDelay, FaultReset, FaultLoad, FaultHandOver, FaultRestart,
}

// ErrNoEtcd is wrapped by Run's error when an etcd run cannot start its
// cluster (no server binary: it also matches etcdtest.ErrNoServer).
var ErrNoEtcd = errors.New("chaos: etcd did not start")

// etcdBackend is the cluster of an etcd run (peer traffic through
// proxies, so a member can be cut off), a client of the harness's own
// straight to every member and a provider over it for holder lookups.
type etcdBackend struct {
	cluster  *etcdtest.Cluster
	client   *clientv3.Client
	provider *etcdlock.Provider
	lock     *locking.DistributedLock // over provider, in the replicas' namespace: the operator's requests
}

func startEtcd() (*etcdBackend, error) {
	c, err := etcdtest.Launch(etcdtest.Options{Members: 3, PeerProxy: true})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoEtcd, err)
	}
	cl, err := c.Client()
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("chaos: etcd client: %w", err)
	}
	p, err := etcdlock.New(cl, etcdlock.Options{})
	if err != nil {
		_ = cl.Close()
		c.Stop()
		return nil, err
	}
	lo := locking.DefaultOptions()
	lo.Namespace = Namespace
	l, err := locking.New(p, lo)
	if err == nil {
		if k, kerr := l.ProviderKey(operatorKey(RoleName(0))); kerr != nil || k != LockKey(RoleName(0)) {
			_ = l.Close()
			err = fmt.Errorf("chaos: the operator's lock maps %q to %q, not the replicas' %q (%v)", operatorKey(RoleName(0)), k, LockKey(RoleName(0)), kerr)
		}
	}
	if err != nil {
		_ = p.Close()
		_ = cl.Close()
		c.Stop()
		return nil, err
	}
	return &etcdBackend{cluster: c, client: cl, provider: p, lock: l}, nil
}

// holderValue reads the ownership value of a live lease on key.
func (b *etcdBackend) holderValue(ctx context.Context, key string) (string, bool) {
	st, err := b.provider.Inspect(ctx, key)
	return st.Value, err == nil && st.Held
}

func (b *etcdBackend) stop() {
	_ = b.lock.Close() // closes the provider
	_ = b.client.Close()
	b.cluster.Stop()
}

// startEtcdProxies starts, per replica, one proxy in front of each
// member's client address: a link fault sets every proxy of the replica.
func (r *run) startEtcdProxies() error {
	for range r.cfg.Replicas {
		var ps []*Proxy
		for _, m := range r.etcd.cluster.Members() {
			p, err := NewProxy(strings.TrimPrefix(m.Endpoint(), "http://"))
			if err != nil {
				return err
			}
			ps = append(ps, p)
			r.allProxies = append(r.allProxies, p)
		}
		r.links = append(r.links, ps)
	}
	return nil
}

// etcdEndpoints is replica i's endpoints: its proxies.
func (r *run) etcdEndpoints(i int) string {
	var eps []string
	for _, p := range r.links[i] {
		eps = append(eps, "http://"+p.Addr())
	}
	return strings.Join(eps, ",")
}

// pickMember returns a random member; with follower set, one that is not
// the raft leader.
func (r *run) pickMember(ctx context.Context, follower bool) (*etcdtest.Member, error) {
	ms := r.etcd.cluster.Members()
	if !follower {
		return ms[r.rng.IntN(len(ms))], nil
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	leader, err := r.etcd.cluster.Leader(lctx)
	if err != nil {
		return nil, err
	}
	var fs []*etcdtest.Member
	for _, m := range ms {
		if m != leader {
			fs = append(fs, m)
		}
	}
	return fs[r.rng.IntN(len(fs))], nil
}

// etcdFault injects one of the member faults. Each is marked Member (the
// checker fails any overlap it leaves) and Unavailable: a replica whose
// client was attached to the member, or every replica while the cluster
// elects a leader, may not renew for a while, so leaderless time counts
// from the heal.
func (r *run) etcdFault(ctx context.Context, f *Fault) error {
	f.Member, f.Unavailable = true, true
	c := r.etcd.cluster
	var err error
	switch f.Kind {
	case FaultEtcdMemberKill:
		var m *etcdtest.Member
		if m, err = r.pickMember(ctx, true); err != nil {
			return err
		}
		d := r.longerThanLease()
		f.Detail = fmt.Sprintf("follower %s down %v", m.Name(), d.Round(time.Millisecond))
		f.Start = time.Now()
		m.Kill()
		sleep(ctx, d)
		err = m.Restart()
	case FaultEtcdMemberPause:
		var m *etcdtest.Member
		if m, err = r.pickMember(ctx, false); err != nil {
			return err
		}
		d := r.longerThanLease()
		note := r.leaderNote(ctx, m)
		if note != "" {
			f.Extended = r.promoteExtension()
		}
		f.Detail = fmt.Sprintf("member %s%s paused %v", m.Name(), note, d.Round(time.Millisecond))
		f.Start = time.Now()
		if err = m.Pause(); err != nil {
			return err
		}
		sleep(ctx, d)
		err = m.Resume()
	case FaultEtcdPartition:
		var m *etcdtest.Member
		if m, err = r.pickMember(ctx, false); err != nil {
			return err
		}
		d := r.longerThanLease()
		note := r.leaderNote(ctx, m)
		if note != "" {
			f.Extended = r.promoteExtension()
		}
		f.Detail = fmt.Sprintf("member %s%s cut off %v", m.Name(), note, d.Round(time.Millisecond))
		f.Start = time.Now()
		if err = m.Isolate(); err != nil {
			return err
		}
		sleep(ctx, d)
		err = m.Rejoin()
	case FaultEtcdLeaderKill:
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		m, lerr := c.Leader(lctx)
		cancel()
		if lerr != nil {
			return lerr
		}
		f.Detail = "leader " + m.Name()
		f.Extended = r.promoteExtension()
		f.Start = time.Now()
		m.Kill()
		sleep(ctx, r.cfg.Limits().RecoveryBound())
		err = m.Restart()
	case FaultEtcdRestart:
		f.Detail = "every member killed and started again"
		f.Extended = r.promoteExtension()
		f.Start = time.Now()
		var wg sync.WaitGroup
		for _, m := range c.Members() {
			wg.Go(m.Kill)
		}
		wg.Wait()
		for _, m := range c.Members() {
			if err = m.Restart(); err != nil {
				break
			}
		}
	default:
		return fmt.Errorf("not an etcd fault: %q", f.Kind)
	}
	if err == nil {
		// Healed once the cluster serves linearizable reads through every
		// member again.
		err = c.WaitReady(30 * time.Second)
	}
	f.Heal = time.Now()
	if err != nil {
		return fmt.Errorf("%s: %w", f.Kind, err)
	}
	return nil
}

// leaderNote is " (leader)" when m is the raft leader now.
func (r *run) leaderNote(ctx context.Context, m *etcdtest.Member) string {
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if l, err := r.etcd.cluster.Leader(lctx); err == nil && l == m {
		return " (leader)"
	}
	return ""
}
