package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/lockingtest"
)

// acquireRaw, extendRaw and releaseRaw call a provider's required methods
// with the plain arguments the tests read best: the provider key, the
// stored value, the time to live.
func acquireRaw(p locking.Provider, ctx context.Context, key, value string, ttl time.Duration) (bool, time.Duration, error) {
	r, err := p.Acquire(ctx, locking.AcquireRequest{Key: key, Value: value, TTL: ttl})
	return r.Acquired, r.Remaining, err
}

func extendRaw(p locking.Provider, ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	r, err := p.Extend(ctx, locking.ExtendRequest{Key: key, Value: value, TTL: ttl})
	return r.Extended, err
}

func releaseRaw(p locking.Provider, ctx context.Context, key, value string) (bool, error) {
	return p.Release(ctx, locking.ReleaseRequest{Key: key, Value: value})
}

// watchReleases subscribes to key's events through l and returns a
// channel that receives (coalesced) after each release.
func watchReleases(t testing.TB, l *locking.DistributedLock, key string) (<-chan struct{}, func()) {
	t.Helper()
	ch := make(chan struct{}, 1)
	stop, err := l.Subscribe(key, func(e locking.Event) {
		if e.Kind == locking.EventReleased {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		t.Fatalf("Subscribe(%q): %v", key, err)
	}
	return ch, stop
}

// providerEvents subscribes to key's events on p directly (provider key)
// and returns them on a buffered channel (dropped when it is full) with
// the stop function.
func providerEvents(t testing.TB, p locking.Subscriber, key string) (<-chan locking.Event, func()) {
	t.Helper()
	ch := make(chan locking.Event, 64)
	stop, err := p.Subscribe(key, func(e locking.Event) {
		select {
		case ch <- e:
		default:
		}
	})
	if err != nil {
		t.Fatalf("Subscribe(%q): %v", key, err)
	}
	return ch, stop
}

// waitEvent reads ch until an event of kind k arrives, failing t after 10s.
func waitEvent(t testing.TB, ch <-chan locking.Event, k locking.EventKind) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-ch:
			if e.Kind == k {
				return
			}
		case <-deadline:
			t.Fatalf("no %v event within 10s", k)
		}
	}
}

// fullOnly hides a backend's NewProvider, so lockingtest.Run checks the
// full provider only.
type fullOnly struct{ lockingtest.Backend }
