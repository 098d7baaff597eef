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
