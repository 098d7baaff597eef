package leadership

import (
	"context"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

// capabilities are what an elector (or a composition check) uses of its
// lock, resolved once when it is built, so that nothing else asks the
// lock what it can do (L9). The optional ones come from
// locking.FeaturesOf (X3): a capability the lock lacks is nil, so the
// elector polls instead of subscribing, does not deregister, and so on.
type capabilities struct {
	maxLease     time.Duration // 0: the lock reports no cap (locking.Limits)
	maxKeyLength int           // 0: the lock reports no limit (locking.Limits)
	providerKey  interface{ ProviderKey(string) (string, error) }
	owned        locking.OwnedLock           // stores the identity with the lease
	prioritized  locking.PriorityLock        // registers a priority too (B2)
	events       locking.Subscriber          // releases, acquisitions, resign requests (L7, P2, O1)
	holders      locking.HolderLookup        // who holds a key (L7)
	participants locking.ParticipantRegistry // who contends for a key (P1)
	probe        locking.ParticipantProbe    // whether one owner contends, from the nearest copy (H4)
	durable      bool                        // the backend keeps leases across its restarts (Q1)
}

func resolveCapabilities(lock locking.Lock) capabilities {
	var c capabilities
	if l, ok := lock.(locking.Limits); ok {
		c.maxLease = max(l.MaxLease(), 0)
		c.maxKeyLength = max(l.MaxKeyLength(), 0)
	}
	c.providerKey, _ = lock.(interface{ ProviderKey(string) (string, error) })
	c.owned, _ = lock.(locking.OwnedLock)
	c.prioritized, _ = lock.(locking.PriorityLock)
	f := locking.FeaturesOf(lock)
	c.events, c.holders, c.participants, c.probe, c.durable = f.Events, f.Holders, f.Participants, f.Probe, f.Durable
	return c
}

// providerKeyOf is the backend's key for key, or key when the lock does
// not say.
func (c *capabilities) providerKeyOf(key string) string {
	if c.providerKey != nil {
		if k, err := c.providerKey.ProviderKey(key); err == nil {
			return k
		}
	}
	return key
}

// tryAcquire takes key for lease, storing owner and priority when the
// lock can.
func (c *capabilities) tryAcquire(ctx context.Context, lock locking.Lock, key string, lease time.Duration, owner string, priority int, yield time.Duration) (locking.Lease, error) {
	if c.prioritized != nil {
		return c.prioritized.TryAcquirePriority(ctx, key, lease, owner, priority, yield)
	}
	if c.owned != nil {
		return c.owned.TryAcquireAs(ctx, key, lease, owner)
	}
	return lock.TryAcquire(ctx, key, lease)
}

// leaseTerms reads what a lease says about itself (locking.TermsOf, one
// type assertion for the leases of *locking.DistributedLock): the
// duration the backend granted (else asked), its fence (else 0), whether
// its latest extension found a higher-priority participant and how many
// participants it counted (else 0).
func leaseTerms(l locking.Lease, asked time.Duration) (granted time.Duration, fence uint64, preempted bool, live int) {
	t := locking.TermsOf(l)
	granted = asked
	if t.Granted > 0 {
		granted = t.Granted
	}
	return granted, t.Fence, t.Preempted, max(t.Participants, 0)
}
