package locking

import (
	"context"
	"time"

	"github.com/hostloom/hostloom/core/jobrecord"
)

// RecordStore is the job records capability (V1): one versioned record
// per key that the provider reads and writes back only if unchanged, with
// a time to live and a history ring. With jobrecord.State (Advance and
// State, L8) it gives the lock its job slots; the rules that decide the
// records are package core/jobrecord's, never the provider's. It is
// jobrecord.RecordStore (the records' package holds it so that the rules
// and the providers share one definition without a cycle).
type RecordStore = jobrecord.RecordStore

// findJobs returns p's job records: a RecordStore with State decided by
// jobrecord.Store, else a jobrecord.Jobs p implements itself, else nil.
func findJobs(p Provider) jobrecord.Jobs {
	rs, ok1 := p.(RecordStore)
	st, ok2 := p.(jobrecord.State)
	if ok1 && ok2 {
		return jobrecord.NewStore(rs, st)
	}
	j, _ := p.(jobrecord.Jobs)
	return j
}

// Provider is a lock backend: the three atomic operations DistributedLock
// builds on, and all a backend must implement (L9). Everything else a
// backend can do is an optional capability, one small interface each
// (Subscriber, ParticipantRegistry, Inspector, ResignRequester; job
// records, RecordStore with jobrecord.State; io.Closer), which locking.New
// looks for once and reports through DistributedLock.Capabilities. See
// docs/providers.md for what each capability buys and what the elector,
// the scheduler and the hostloom CLI do without it, and package lockingtest
// for the conformance suite that checks a provider.
//
// Keys are provider keys (namespaced and validated by DistributedLock);
// values are opaque ownership records that embed a random token of at
// least 128 bits and the owner's identity, so comparing a value proves
// ownership. Every method must be one atomic step on the backend (for
// Redis, one round trip), must return when ctx ends, and must be safe for
// concurrent use. A provider that queues calls on the client side (to
// coalesce them) returns an error matching ErrNotSent for a call whose
// context ended before it left the queue while the backend answered other
// calls: nothing reached the backend, and the elector then backs off
// instead of queueing the attempt again at once (E7).
type Provider interface {
	// Acquire stores r.Value under r.Key with time to live r.TTL when the
	// key is free, and issues a fence (G1). When the key is held it
	// reports, in the same step, the holder's remaining time to live and
	// its ownership record (AcquireResult). A provider that implements
	// ParticipantRegistry also registers r.Owner as a participant (P1);
	// one that implements Subscriber announces a successful acquisition
	// to the key's subscribers (EventAcquired with r.Owner).
	Acquire(ctx context.Context, r AcquireRequest) (AcquireResult, error)

	// Extend resets the key's time to live to r.TTL when the key still
	// stores r.Value, keeping its fence. Extended is false when the key
	// expired or belongs to someone else. A provider that implements
	// ParticipantRegistry also refreshes r.Owner's registration and fills
	// in ExtendResult.Preempt and ExtendResult.Participants.
	Extend(ctx context.Context, r ExtendRequest) (ExtendResult, error)

	// Release deletes the key when it still stores r.Value and reports
	// false when the key expired or belongs to someone else. A provider
	// that implements Subscriber then publishes EventReleased to the key's
	// subscribers, naming r.Target as the participant meant to take the
	// key (B1) when it is set.
	Release(ctx context.Context, r ReleaseRequest) (released bool, err error)
}

// AcquireRequest is one acquisition attempt (Provider.Acquire).
type AcquireRequest struct {
	// Key is the provider key to take.
	Key string
	// Value is the ownership record to store (see Provider).
	Value string
	// TTL is the lease's time to live; always positive.
	TTL time.Duration
	// Owner is the identity embedded in Value. A provider with a
	// Subscriber capability announces it (EventAcquired) on success, at
	// least when ParticipantTTL is positive (an elector's request; a plain
	// lock user's acquisition, with ParticipantTTL 0, need not be
	// announced).
	Owner string
	// ParticipantTTL, when positive, registers Owner as a participant of
	// Key for that long, whatever the outcome (P1), on providers that
	// implement ParticipantRegistry (others ignore it, Priority and
	// Yield). Its first registration time is kept across refreshes.
	// DistributedLock sets it for electors' requests (TryAcquireAs,
	// TryAcquirePriority), whatever the provider implements.
	ParticipantTTL time.Duration
	// Priority is registered with the participant (B2).
	Priority int
	// Yield, when positive, makes a free key wait that long for a live
	// participant with a higher priority than Priority before this caller
	// may take it (B2): meanwhile the caller is refused with the wait
	// left as Remaining and no holder.
	Yield time.Duration
}

// AcquireResult is the outcome of Provider.Acquire.
type AcquireResult struct {
	// Acquired reports whether Key was taken.
	Acquired bool
	// Fence is the fencing token issued with the acquisition (G1): larger
	// than every fence issued for Key before. 0 when refused, and 0 from a
	// provider that issues no fences (its leases then do not implement
	// Fenced).
	Fence uint64
	// Remaining is the holder's remaining time to live when refused (0
	// when unknown).
	Remaining time.Duration
	// HolderValue is the ownership record the holder stored, when refused
	// ("" when unknown). It embeds the holder's owner identity (P2).
	HolderValue string
	// TopPriority is the highest priority among Key's live participants
	// when refused (B2); 0 when none registered one.
	TopPriority int
}

// ExtendRequest is one extension (Provider.Extend).
type ExtendRequest struct {
	// Key, Value and TTL are those of the acquisition being extended (TTL
	// is the new time to live).
	Key, Value string
	TTL        time.Duration
	// Owner, ParticipantTTL and Priority refresh Owner's registration as
	// in AcquireRequest, on providers that implement ParticipantRegistry,
	// when the lease is extended, and only then: a renewal that finds the
	// lease released or taken since registers nobody. It may have been on
	// its way while its sender stopped and withdrew (H2); registering it
	// would make a stopped instance a participant again for
	// ParticipantTTL, and balancing processes would count it.
	Owner          string
	ParticipantTTL time.Duration
	Priority       int
}

// ExtendResult is the outcome of Provider.Extend.
type ExtendResult struct {
	// Extended reports whether the lease was extended.
	Extended bool
	// Preempt reports, for an extended lease, that another participant
	// with a higher priority than the request's has been registered for at
	// least the lease's TTL (B2): the holder should hand over.
	Preempt bool
	// Participants is the number of live participants of the key after
	// an extension that registered one, the caller included (O6); 0 when
	// the provider does not say.
	Participants int
}

// ReleaseRequest is one release (Provider.Release).
type ReleaseRequest struct {
	// Key and Value are those of the acquisition being released.
	Key, Value string
	// Target, when set, is the participant the holder hands the key to
	// (B1): the release notification names it. Providers without a
	// Subscriber capability ignore it.
	Target string
	// Hold, with Target, is how long the key stays Target's to take: a
	// provider that implements ReleaseReserver refuses other owners'
	// acquisitions of the released key meanwhile, as if it were held (no
	// holder value, the hold's remaining time as Remaining), and Target's
	// own acquisition, or the hold's end, lifts it. Candidates that hear
	// the release hold back as long on their own (B1); the reservation
	// also stops an attempt that was already on its way, or that did not
	// hear the release, from taking the key before its successor (which
	// would move the key twice). 0 reserves nothing.
	Hold time.Duration
	// Withdraw, when set, is an owner the release removes from the key's
	// participants in the same step, as Deregister does, whether or not
	// the key still stored Value (H2). Only providers that implement
	// ReleaseWithdrawer honour it.
	Withdraw string
	// Notify asks a provider with a Subscriber capability to publish the
	// release even when it knows of no subscriber (DistributedLock sets
	// it for electors' leases, whose candidates listen). Without it
	// redislock publishes only when the key has a subscriber or a waiter
	// (Subscribe marks the key) or Target is set.
	Notify bool
}

// Subscriber is the events capability (L7, P2, O1): a key's releases,
// acquisitions with the new holder's identity, resign requests and the
// state of the subscription itself, in one callback form. It is
// implemented by providers (provider keys) and by *DistributedLock
// (consumer keys; ErrNotSupported when its provider lacks it).
//
// Without it a waiter polls: the elector tries on its RetryInterval
// cadence and Acquire on the holder's remaining time to live.
type Subscriber interface {
	// Subscribe calls fn with key's events, in order, until stop is
	// called. fn runs on the provider's delivery goroutine (possibly while
	// it holds an internal mutex): it must return at once and must not call
	// back into the provider. The first event, once the subscription is
	// live, is EventSubscribed; EventUnsubscribed and another
	// EventSubscribed follow a lost and regained subscription (events
	// published meanwhile are lost). Delivery is best effort: a subscriber
	// must still retry on its own cadence.
	//
	// Subscribe returns promptly: it may wait a short, bounded time for
	// the backend (redislock waits up to two seconds for SUBSCRIBE), and
	// reports the subscription live with EventSubscribed, possibly later
	// from the background. An error means no subscription was made (closed
	// provider, a key without a channel); stop is then nil. stop is
	// idempotent and may do the same bounded I/O.
	Subscribe(key string, fn func(Event)) (stop func(), err error)
}

// ResignRequester is the capability to ask a key's holder to step down
// (O1): RequestResign publishes EventResign for owner ("" for whoever
// holds key) to key's subscribers. Stepping down is up to the holder; nothing
// is deleted. It is implemented by providers (provider keys) and by
// *DistributedLock (consumer keys; ErrNotSupported unless its provider
// has both ResignRequester and Subscriber, since a holder that cannot
// subscribe never hears the request).
type ResignRequester interface {
	RequestResign(ctx context.Context, key, owner string) error
}

// ParticipantRegistry is the participants capability (P1): a provider
// that implements it registers AcquireRequest.Owner and
// ExtendRequest.Owner (when it extends the lease) as participants of the
// key, in the same step, for ParticipantTTL after the latest request, and
// honours Priority and Yield (B2). It is implemented by providers (provider keys) and by
// *DistributedLock (consumer keys; ErrNotSupported when its provider
// lacks it).
//
// Without it the elector does not deregister on Stop (nothing to do, not
// an error), Elector.Participants reports ErrNotSupported, balancing and
// priorities have nobody to compare with.
type ParticipantRegistry interface {
	// Participants lists key's live participants in one step. Records that
	// do not parse are skipped: the others are returned together with an
	// error matching ErrBadRecord.
	Participants(ctx context.Context, key string) ([]Participant, error)
	// Deregister removes owner from key's participants at once. It does
	// not touch a lease owner holds.
	Deregister(ctx context.Context, key, owner string) error
}

// ReleaseWithdrawer is an optional capability of a provider with a
// ParticipantRegistry: its Release honours ReleaseRequest.Withdraw,
// removing that owner from the key's participants in the same step as
// the release (H2). An elector that stops while it leads releases this
// way, so that no balancing process elsewhere, reading the participants
// of the role it just took, counts the stopped instance and hands it
// roles it no longer takes; and the stop costs one call instead of a
// release and a deregistration. A provider without it ignores Withdraw:
// the lock then leaves the deregistration to the caller.
type ReleaseWithdrawer interface {
	// WithdrawsOnRelease reports whether Release honours
	// ReleaseRequest.Withdraw.
	WithdrawsOnRelease() bool
}

// ReleaseReserver is an optional capability: the provider's Release
// honours ReleaseRequest.Hold, keeping a key handed to a named successor
// for it (B1, H4). A provider without it ignores Hold: candidates then
// hold back on their own, which an attempt already on its way when the
// release is announced does not.
type ReleaseReserver interface {
	// ReservesOnRelease reports whether Release honours
	// ReleaseRequest.Hold.
	ReservesOnRelease() bool
}

// ParticipantProbe is an optional capability of a provider with a
// ParticipantRegistry: whether one owner is a participant of a key, read
// more cheaply than Participants, from the nearest copy of the backend's
// data (an etcd member's own state, without the round to the raft leader
// that a linearizable read costs), or, for a key the provider holds, its
// own latest read of the key's participants when that is younger than the
// lease. The copy may lag the latest writes (by a few milliseconds for a
// member's state, by up to a lease for the holder's read), so the answer
// is what the backend stored a moment ago: a registration of the last
// moments may be missing, a deregistration of the last moments may not
// show yet.
//
// Elector.HandOver asks it first whether its successor is a participant
// (H4). On a yes it hands over at once: the release itself names the
// successor only while the successor's record still exists, so a
// participant that left meanwhile gets a plain release, as one that
// leaves just after a full read would. On a no, or an error, it reads the
// participants in full, so an unknown identity is refused on the latest
// data with the list of participants. It is implemented by providers
// (provider keys) and, through Features, by *DistributedLock (consumer
// keys).
type ParticipantProbe interface {
	// IsParticipant reports whether owner is among key's live
	// participants, as the nearest copy of the backend's data (or the
	// holder's latest read of them) has it.
	IsParticipant(ctx context.Context, key, owner string) (bool, error)
}

// ProviderKeyState is what an Inspector reports about a key.
type ProviderKeyState struct {
	// Held reports whether a lease is stored under the key.
	Held bool
	// Value and TTL are the stored ownership record and its remaining time
	// to live, when Held.
	Value string
	TTL   time.Duration
	// Fence is the last fence issued for the key (0 when none is stored).
	Fence uint64
	// Participants are the key's live participants (none when the
	// provider has no ParticipantRegistry).
	Participants []Participant
}

// Inspector is the holder lookup and inspection capability of a provider
// (L7, O1): who holds a key, its last fence and its participants in one
// step, and the keys a namespace stores. DistributedLock's Holder, Inspect
// and Keys use it; without it they report ErrNotSupported, the elector's
// Holder does too, and the hostloom CLI cannot show roles.
type Inspector interface {
	// Inspect reports key's holder, fence and participants in one step.
	// Participant records that do not parse are skipped, as in
	// ParticipantRegistry.Participants.
	Inspect(ctx context.Context, key string) (ProviderKeyState, error)
	// Keys lists the provider keys that start with prefix and have a lease,
	// a fence or participants stored. The order is unspecified.
	Keys(ctx context.Context, prefix string) ([]string, error)
}

// Capabilities reports which optional capabilities a lock has, as
// resolved once by locking.New (L9): its Features as booleans, for
// display and tests. A disabled lock has none.
type Capabilities struct {
	// Events: Subscribe works (Subscriber).
	Events bool
	// Participants: acquisitions register participants; Participants and
	// Deregister work (ParticipantRegistry).
	Participants bool
	// Inspect: Holder, Inspect and Keys work (Inspector).
	Inspect bool
	// Resign: RequestResign works (ResignRequester together with Events).
	Resign bool
	// JobSlots: the provider keeps the scheduler's job records (a
	// RecordStore with jobrecord.State, or a jobrecord.Jobs of its own).
	JobSlots bool
	// Durable: the backend keeps its leases across a restart of its server
	// (Durable), so a leader need not be given the first chance to verify
	// its lease after one (Q1).
	Durable bool
}

// Durable is implemented by providers whose backend keeps every lease it
// granted across a restart of its server (a database that commits each
// acquisition before answering, as pglock's PostgreSQL does; not Redis
// without persistence). A candidate over such a backend does not hold its
// attempts back while its notification link is down (Q1): the leader's
// lease survives the restart, so there is nothing to verify first. A
// failover to a replica that missed writes is not a restart: Durable says
// nothing about it.
type Durable interface {
	// Durable reports whether the backend keeps its leases across a
	// restart of its server.
	Durable() bool
}
