package locking

import (
	"context"
	"time"
)

// Provider is a lock backend: the few atomic operations DistributedLock
// builds on. Keys are provider keys (namespaced and validated by
// DistributedLock); values are opaque ownership records that embed a random
// token of at least 128 bits, so comparing a value proves ownership.
//
// Implementations: memlock (in process) and redislock (Redis, Valkey).
// Every method must be one atomic step on the backend (for Redis, one round
// trip) and safe for concurrent use.
type Provider interface {
	// Acquire stores value under key with time to live ttl when key is
	// absent. When key is held, acquired is false and remaining is the
	// holder's remaining time to live (0 when unknown), learned in the same
	// step.
	Acquire(ctx context.Context, key, value string, ttl time.Duration) (acquired bool, remaining time.Duration, err error)

	// Extend resets key's time to live to ttl when key still stores value.
	// It reports false when the key expired or belongs to someone else.
	Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error)

	// Release deletes key when it still stores value, and then notifies
	// watchers of key when the provider supports it (ProviderWatcher). It
	// reports false when the key expired or belongs to someone else.
	Release(ctx context.Context, key, value string) (bool, error)
}

// ProviderWatcher is implemented by providers that publish releases (L7).
// Watch takes a provider key; see Watcher for the semantics.
type ProviderWatcher interface {
	Watch(key string) (released <-chan struct{}, stop func())
}

// ProviderHolder is implemented by providers that can look up the value
// stored under a key and its remaining time to live in one step.
type ProviderHolder interface {
	// Get returns the value stored under key and its remaining time to
	// live; ok is false when key is absent.
	Get(ctx context.Context, key string) (value string, ttl time.Duration, ok bool, err error)
}

// ProviderState is implemented by providers that offer the monotonic state
// API (L8). Keys are provider keys.
type ProviderState interface {
	// Advance sets key to value when value is greater than the stored
	// value or nothing is stored, atomically.
	Advance(ctx context.Context, key string, value int64) (advanced bool, current int64, err error)
	// State reads the value stored under key.
	State(ctx context.Context, key string) (value int64, ok bool, err error)
}

// AcquireRequest is one acquisition attempt through a ProviderAcquirer.
type AcquireRequest struct {
	// Key is the provider key to take.
	Key string
	// Value is the ownership record to store (see Provider).
	Value string
	// TTL is the lease's time to live.
	TTL time.Duration
	// Owner is the identity stored in Value. A successful acquisition
	// announces it (EventAcquired) to key's event watchers.
	Owner string
	// ParticipantTTL, when positive, registers Owner as a participant of
	// Key for that long, whatever the outcome (P1). Its first registration
	// time is kept across refreshes.
	ParticipantTTL time.Duration
	// Priority is registered with the participant (B2).
	Priority int
	// Yield, when positive, makes a free key wait that long for a live
	// participant with a higher priority than Priority before this caller
	// may take it (B2): meanwhile the caller is refused with the wait
	// left as Remaining and no holder.
	Yield time.Duration
}

// AcquireResult is the outcome of ProviderAcquirer.AcquireWith.
type AcquireResult struct {
	// Acquired reports whether Key was taken.
	Acquired bool
	// Fence is the fencing token issued with the acquisition (G1): larger
	// than every fence issued for Key before. 0 when refused.
	Fence uint64
	// Remaining is the holder's remaining time to live when refused (0
	// when unknown).
	Remaining time.Duration
	// HolderValue is the ownership record the holder stored, when refused
	// ("" when unknown). It embeds the holder's owner identity.
	HolderValue string
	// TopPriority is the highest priority among Key's live participants
	// when refused (B2); 0 when none registered one.
	TopPriority int
}

// ExtendRequest is one extension through a ProviderAcquirer.
type ExtendRequest struct {
	// Key, Value and TTL are those of Provider.Extend.
	Key, Value string
	TTL        time.Duration
	// Owner, ParticipantTTL and Priority register Owner as a participant
	// of Key, as in AcquireRequest, whatever the outcome.
	Owner          string
	ParticipantTTL time.Duration
	Priority       int
}

// ExtendResult is the outcome of ProviderAcquirer.ExtendWith.
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

// ProviderAcquirer is implemented by providers that do more in the single
// step of an acquisition or extension: issue a fence (G1), report the
// holder's ownership record on refusal (P2), announce acquisitions to event
// watchers (P2) and register participants (P1). DistributedLock uses it
// instead of Provider.Acquire and Provider.Extend when present.
type ProviderAcquirer interface {
	// AcquireWith is Provider.Acquire with the additions above, in one
	// atomic step. A fence stored for the key that is not a number is an
	// error naming the key; nothing is written then.
	AcquireWith(ctx context.Context, r AcquireRequest) (AcquireResult, error)
	// ExtendWith is Provider.Extend registering the participant, in one
	// atomic step, and looking for a higher-priority participant (B2). An
	// extension keeps the lease's fence.
	ExtendWith(ctx context.Context, r ExtendRequest) (ExtendResult, error)
}

// ProviderEvents is implemented by providers that publish what happens to a
// key (P2, O1). Keys are provider keys; see EventWatcher for the semantics.
type ProviderEvents interface {
	// WatchEvents returns a channel of key's events and a function that
	// ends the watch.
	WatchEvents(key string) (events <-chan Event, stop func())
	// PublishResign publishes a resign request for owner ("" for whoever
	// holds key) on key's event channel.
	PublishResign(ctx context.Context, key, owner string) error
}

// ProviderParticipants is implemented by providers that keep participant
// registrations (P1). Keys are provider keys.
type ProviderParticipants interface {
	// Participants lists key's live participants in one step. Records that
	// do not parse are skipped: the others are returned together with an
	// error matching ErrBadRecord.
	Participants(ctx context.Context, key string) ([]Participant, error)
	// Deregister removes owner from key's participants.
	Deregister(ctx context.Context, key, owner string) error
}

// ProviderKeyState is what a ProviderInspector reports about a key.
type ProviderKeyState struct {
	// Held reports whether a lease is stored under the key.
	Held bool
	// Value and TTL are the stored ownership record and its remaining time
	// to live, when Held.
	Value string
	TTL   time.Duration
	// Fence is the last fence issued for the key (0 when none is stored).
	Fence uint64
	// Participants are the key's live participants.
	Participants []Participant
}

// ProviderInspector is implemented by providers that can describe a key in
// one step and list the keys they store (for operators' tools, O1).
type ProviderInspector interface {
	// Inspect reports key's holder, fence and participants in one step.
	// Participant records that do not parse are skipped, as in
	// ProviderParticipants.Participants.
	Inspect(ctx context.Context, key string) (ProviderKeyState, error)
	// Keys lists the provider keys that start with prefix and have a lease,
	// a fence or participants stored. The order is unspecified.
	Keys(ctx context.Context, prefix string) ([]string, error)
}

// EventBuffer is the capacity of the channels the providers of this module
// return from WatchEvents: a reader that falls further behind loses
// events, never the subscription state (see SendEvent).
const EventBuffer = 16

// ProviderHandover is implemented by providers whose release notification
// can name the participant meant to take the key (B1). Keys are provider
// keys.
type ProviderHandover interface {
	ReleaseTo(ctx context.Context, key, value, target string) (bool, error)
}

// ProviderEventFuncs is implemented by providers that can deliver a key's
// events by callback (see locking.EventFuncWatcher). Keys are provider
// keys.
type ProviderEventFuncs interface {
	WatchEventsFunc(key string, fn func(Event)) (stop func())
}

// SendEvent delivers e on ch without blocking, by the rules of
// EventWatcher: an ordinary event is dropped when ch is full; a
// subscription state event (EventSubscribed, EventUnsubscribed) takes the
// place of the oldest pending event instead, so a reader always learns that
// something may be missing. Callers serialise their sends to one channel.
// It is for providers implementing ProviderEvents.
func SendEvent(ch chan Event, e Event) {
	select {
	case ch <- e:
		return
	default:
	}
	if e.Kind != EventSubscribed && e.Kind != EventUnsubscribed {
		return
	}
	select {
	case <-ch:
	default:
	}
	select {
	case ch <- e:
	default:
	}
}
