//go:build unix

package chaos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
	"github.com/hostloom/hostloom/core/locking/redislock"
)

// operatorKey is role's key as the replicas' lock names it.
func operatorKey(role string) string { return "leader:" + role }

// operator returns a lock over the run's backend in the replicas'
// namespace, for the operator's requests (built once, closed by close).
func (r *run) operator() (*locking.DistributedLock, error) {
	if r.opLock != nil {
		return r.opLock, nil
	}
	var p locking.Provider
	switch {
	case r.etcd != nil:
		r.opLock = r.etcd.lock
		return r.opLock, nil
	case r.pg != nil:
		pp, err := pglock.New(r.pg.pool, pglock.Options{})
		if err != nil {
			return nil, err
		}
		p = pp
	case r.redis != nil:
		p = redislock.New(r.client)
	default:
		return nil, errors.New("hand-over requests need a standalone Redis, PostgreSQL or etcd run")
	}
	lo := locking.DefaultOptions()
	lo.Namespace = Namespace
	l, err := locking.New(p, lo)
	if err != nil {
		return nil, err
	}
	if k, kerr := l.ProviderKey(operatorKey(RoleName(0))); kerr != nil || k != LockKey(RoleName(0)) {
		_ = l.Close()
		return nil, fmt.Errorf("chaos: the operator's lock maps %q to %q, not the replicas' %q (%v)", operatorKey(RoleName(0)), k, LockKey(RoleName(0)), kerr)
	}
	r.opLock, r.ownsOpLock = l, true
	return l, nil
}

// handOverFault asks the leaders of a third of the roles (at least one)
// to hand each role to another live participant, picked at random, all
// at once (FaultHandOver). Requests that cannot be sent (no holder, no
// other participant, the backend unreachable) are counted in the detail;
// the fault fails when none was sent.
func (r *run) handOverFault(ctx context.Context, f *Fault) error {
	l, err := r.operator()
	if err != nil {
		return err
	}
	n := max(1, r.cfg.Roles/3)
	f.Start = time.Now()
	sent, skipped := 0, 0
	for _, k := range r.rng.Perm(r.cfg.Roles)[:n] {
		role := RoleName(k)
		_, owner, ok := r.holder(ctx, role)
		if !ok {
			skipped++
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		ps, err := l.Participants(cctx, operatorKey(role))
		var others []string
		for _, p := range ps {
			if i, ok := replicaOf(p.Owner); ok && i < r.cfg.Replicas && p.Owner != owner {
				others = append(others, p.Owner)
			}
		}
		if err != nil || len(others) == 0 {
			cancel()
			skipped++
			continue
		}
		to := others[r.rng.IntN(len(others))]
		err = l.RequestHandOver(cctx, operatorKey(role), owner, to)
		cancel()
		if err != nil {
			skipped++
			continue
		}
		sent++
	}
	f.Heal = time.Now()
	f.Detail = fmt.Sprintf("%d roles asked to hand over, %d skipped", sent, skipped)
	if sent == 0 {
		return fmt.Errorf("no hand-over request sent (%d skipped)", skipped)
	}
	return nil
}
