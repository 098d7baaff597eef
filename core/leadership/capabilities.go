package leadership

import (
	"context"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

// capabilities are the optional interfaces of a lock, resolved once when
// an elector (or a composition check) is built, so that nothing else asks
// the lock what it can do (L9). A lock that reports its capabilities
// (locking.CapabilityReporter: a *locking.DistributedLock, whose method
// set is the same whatever its provider can do) is believed over its
// method set: a capability it says is absent is left nil, so the elector
// polls instead of subscribing, does not deregister, and so on.
type capabilities struct {
	maxLease     time.Duration // 0: the lock reports no cap (locking.Limits)
	maxKeyLength int           // 0: the lock reports no limit (locking.Limits)
	providerKey  interface{ ProviderKey(string) (string, error) }
	owned        locking.OwnedLock           // stores the identity with the lease
	prioritized  locking.PriorityLock        // registers a priority too (B2)
	events       locking.Subscriber          // releases, acquisitions, resign requests (L7, P2, O1)
	holders      locking.HolderLookup        // who holds a key (L7)
	participants locking.ParticipantRegistry // who contends for a key (P1)
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
	c.events, _ = lock.(locking.Subscriber)
	c.holders, _ = lock.(locking.HolderLookup)
	c.participants, _ = lock.(locking.ParticipantRegistry)
	if d, ok := lock.(locking.Durable); ok {
		c.durable = d.Durable()
	}
	if r, ok := lock.(locking.CapabilityReporter); ok {
		has := r.Capabilities()
		c.durable = has.Durable
		if !has.Events {
			c.events = nil
		}
		if !has.Inspect {
			c.holders = nil
		}
		if !has.Participants {
			c.participants = nil
		}
	}
	return c
}

// providerKeyOf is the backend's key for key, or key when the lock does
// not say.
func (c capabilities) providerKeyOf(key string) string {
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

// leaseTerms reads what a lease says about itself: the duration the
// backend granted (GrantedLease; else asked), its fence (locking.Fenced;
// else 0) and whether its latest extension found a higher-priority
// participant (locking.Preemptible) and how many participants it counted
// (locking.ParticipantCounted; else 0). These are the only per-lease type
// assertions.
func leaseTerms(l locking.Lease, asked time.Duration) (granted time.Duration, fence uint64, preempted bool, live int) {
	granted = asked
	if g, ok := l.(locking.GrantedLease); ok {
		if v := g.Granted(); v > 0 {
			granted = v
		}
	}
	if f, ok := l.(locking.Fenced); ok {
		fence = f.Fence()
	}
	if p, ok := l.(locking.Preemptible); ok {
		preempted = p.Preempted()
	}
	if c, ok := l.(locking.ParticipantCounted); ok {
		live = c.LiveParticipants()
	}
	return granted, fence, preempted, live
}
