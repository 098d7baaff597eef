package locking

import (
	"context"
	"time"
)

// Lock is what the elector and other consumers depend on, and what custom
// backends implement. *DistributedLock implements it over a Provider.
type Lock interface {
	// TryAcquire makes one attempt to take key for lease. It never waits for
	// the key to become free: a key held by someone else yields an error for
	// which errors.Is(err, ErrNotAcquired) holds; errors.As with *HeldError
	// reports the holder's remaining time to live when the backend knows it.
	TryAcquire(ctx context.Context, key string, lease time.Duration) (Lease, error)

	// Coordinated reports whether the lock excludes other callers. It is
	// false for a disabled lock, which grants every caller a placeholder.
	Coordinated() bool
}

// Lease is a held key. Its methods are safe for concurrent use.
type Lease interface {
	// Key is the consumer key the lease was acquired for (before
	// namespacing).
	Key() string

	// Extend pushes the lease's expiry to now+lease (capped like the
	// acquisition). It returns an error matching ErrLeaseLost when the
	// backend refuses because the lease expired or is held by someone else;
	// any other error means the outcome is unknown (transport failure).
	Extend(ctx context.Context, lease time.Duration) error

	// Release gives the key up so another caller can take it at once.
	// Releasing a lease that is already lost returns an error matching
	// ErrLeaseLost; it never deletes someone else's lease.
	Release(ctx context.Context) error
}

// GrantedLease is implemented by the leases of *DistributedLock: it exposes
// the duration the backend actually granted (after the MaxLease cap) and the
// owner identity stored with the lease.
type GrantedLease interface {
	Lease
	// Granted is the duration asked of the backend by the latest successful
	// acquisition or extension, after capping at MaxLease.
	Granted() time.Duration
	// Owner is the identity stored with the lease and reported by holder
	// lookups.
	Owner() string
}

// Fenced is implemented by leases that carry a fencing token (G1): a number
// the backend issued with the acquisition, strictly increasing per provider
// key across all holders, kept by extensions. A store that refuses writes
// carrying a fence lower than the highest it admitted (core/fencing) turns
// it into a guarantee that a deposed holder's late writes are refused.
type Fenced interface {
	// Fence is the lease's fencing token; never 0 for a lease that has one.
	Fence() uint64
}

// OwnedLock is implemented by locks that store an owner identity with each
// lease (reported by Holder). *DistributedLock implements it; the elector
// uses it, when present, to record its identity.
type OwnedLock interface {
	Lock
	TryAcquireAs(ctx context.Context, key string, lease time.Duration, owner string) (Lease, error)
}

// EventKind says what an Event reports.
type EventKind int

// Event kinds.
const (
	// EventReleased: the holder released the key; Owner, when set, names
	// the participant the holder handed it to (B1).
	EventReleased EventKind = iota + 1
	// EventAcquired: Owner acquired the key.
	EventAcquired
	// EventResign: an operator asked Owner (or, when Owner is "", whoever
	// holds the key) to step down (O1).
	EventResign
	// EventSubscribed: the subscription is live, the first time or again
	// after a disconnection; events published meanwhile may be lost.
	EventSubscribed
	// EventUnsubscribed: the subscription was lost; no events arrive until
	// the next EventSubscribed.
	EventUnsubscribed
	// EventExtended: Owner extended its lease, which runs Remaining from
	// the extension (P3: a candidate sleeps on until then instead of
	// trying when the previous expiry it learned comes). Only pglock
	// publishes it.
	EventExtended
)

// String returns the kind's lower-case name.
func (k EventKind) String() string {
	switch k {
	case EventReleased:
		return "released"
	case EventAcquired:
		return "acquired"
	case EventResign:
		return "resign"
	case EventSubscribed:
		return "subscribed"
	case EventUnsubscribed:
		return "unsubscribed"
	case EventExtended:
		return "extended"
	default:
		return "unknown"
	}
}

// Event is a notification about one key (L7, P2), delivered by a
// Subscriber.
type Event struct {
	Kind EventKind
	// Owner is the identity the event concerns (EventAcquired,
	// EventResign); "" otherwise.
	Owner string
	// Fence is the fence the acquisition issued (EventAcquired), 0 when
	// the lock did not say. Fences of one key grow with every
	// acquisition, so an elector that leads with a fence tells a newer
	// acquisition (a larger fence: its own lease is gone) from a late
	// delivery of an older one (Q1).
	Fence uint64
	// Remaining is the extended lease's time to live from the extension
	// (EventExtended); 0 otherwise.
	Remaining time.Duration
	// Target is the participant a resign request asks Owner to hand the
	// key to (EventResign from RequestHandOver, H4); "" for any.
	Target string
	// Expired is set on an EventReleased that the lock tells apart from a
	// release: the key went because the server ended its lease (it ran
	// out, or was revoked: an operator's forced release, an etcd member
	// that revoked live leases), not because its holder released it. The
	// holder may then still believe it holds the key, until its last
	// extension's lease runs out by its own clock: an elector that leads
	// verifies its lease at once, and its candidates give it a head start
	// before they try (Q1). Only etcdlock tells expiries apart; other
	// locks report every release without it.
	Expired bool
}

// Participant is one registered contender for a key (P1).
type Participant struct {
	// Owner is the participant's identity.
	Owner string
	// Since is when it registered.
	Since time.Time
	// Priority is the priority it registered with (B2); 0 by default.
	Priority int
	// Leader reports that it held the key's lease when the list was read,
	// in the same step (DistributedLock.Participants over a provider that
	// also implements Inspector: redislock, memlock); false otherwise.
	Leader bool
}

// PriorityLock is implemented by locks that register a priority with each
// participant (B2): among live participants a higher priority takes a
// free key first, and a holder whose extension finds a higher-priority
// participant registered for a full lease hands over (see Preemptible).
// *DistributedLock implements it.
type PriorityLock interface {
	Lock
	// TryAcquirePriority is TryAcquireAs registering priority. With yield
	// positive, a free key waits up to yield for a live participant with a
	// higher priority before this caller may take it.
	TryAcquirePriority(ctx context.Context, key string, lease time.Duration, owner string, priority int, yield time.Duration) (Lease, error)
}

// HandoverLease is implemented by leases that can be released to a named
// participant (B1): the release notification names target, which takes
// the key at once while others may hold back. *DistributedLock's leases
// implement it when the provider does (else it is a plain Release).
type HandoverLease interface {
	ReleaseTo(ctx context.Context, target string) error
}

// WithdrawingLease is implemented by *DistributedLock's leases (H2):
// ReleaseWithdraw releases the lease, naming target as ReleaseTo does,
// and withdraws its owner from the key's participants in the same step
// when the provider can (ReleaseWithdrawer); withdrawn reports that it
// did, whether the lease was released or already lost (ErrLeaseLost).
// When withdrawn is false the owner may still be registered: a caller
// that leaves deregisters it (Deregister).
type WithdrawingLease interface {
	ReleaseWithdraw(ctx context.Context, target string) (withdrawn bool, err error)
}

// ReleaseOptions say how ReleasingLease.ReleaseWith gives a lease up.
type ReleaseOptions struct {
	// Target names the participant the key is handed to (B1), as
	// ReleaseTo does.
	Target string
	// Hold, with Target, keeps the key Target's to take for that long
	// where the provider can (ReleaseReserver): another owner's attempt
	// is refused meanwhile, also one already on its way (see
	// ReleaseRequest.Hold). An elector holds a handover for its
	// RetryInterval, the time its other candidates hold back.
	Hold time.Duration
	// Withdraw also withdraws the lease's owner from the key's
	// participants in the same step, as ReleaseWithdraw does (H2).
	Withdraw bool
}

// ReleasingLease is implemented by *DistributedLock's leases: the one
// release that ReleaseTo and ReleaseWithdraw are forms of. withdrawn
// reports, with o.Withdraw, that the owner was withdrawn in the same
// step (see WithdrawingLease).
type ReleasingLease interface {
	ReleaseWith(ctx context.Context, o ReleaseOptions) (withdrawn bool, err error)
}

// Preemptible is implemented by leases of a PriorityLock: after a
// successful Extend, Preempted reports whether a higher-priority
// participant has been registered for at least a lease (B2).
type Preemptible interface {
	Preempted() bool
}

// ParticipantCounted is implemented by leases whose extensions register
// participants: after a successful Extend, LiveParticipants reports how
// many participants the key had, the holder included; 0 when unknown.
// Electors record it as the participants gauge without extra I/O (O6).
type ParticipantCounted interface {
	LiveParticipants() int
}

// Holder describes who holds a key.
type Holder struct {
	// Owner is the identity stored with the lease.
	Owner string
	// TTL is the lease's remaining time to live, as the backend sees it.
	TTL time.Duration
}

// HolderLookup is implemented by locks that can report who holds a key (L7).
type HolderLookup interface {
	// Holder returns the current holder of key; ok is false when nobody
	// holds it.
	Holder(ctx context.Context, key string) (h Holder, ok bool, err error)
}

// Limits is implemented by locks that enforce a key length and a lease cap
// (L1). The elector checks for it with a type assertion: a custom Lock
// without it is responsible for its own limits.
type Limits interface {
	MaxKeyLength() int
	MaxLease() time.Duration
}
