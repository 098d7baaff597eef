package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// TestQuarantine_Q3_RestartWithoutPersistence: with quarantine, a server
// that forgot a key refuses its acquisition for one lease from the moment
// the loss was first observed, for every provider (also one that never saw
// the key); without quarantine the key is free at once.
func TestQuarantine_Q3_RestartWithoutPersistence(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	const key, lease = "ns:lock:q3", time.Second
	req := func(value, owner string) locking.AcquireRequest {
		return locking.AcquireRequest{Key: key, Value: value, TTL: lease, Owner: owner, ParticipantTTL: 2 * lease}
	}
	a := mustProvider(t, srv.Client(t), redislock.Options{Quarantine: true})
	b := mustProvider(t, srv.Client(t), redislock.Options{Quarantine: true})
	plain := redislock.New(srv.Client(t))
	defer a.Close()
	defer b.Close()
	defer plain.Close()

	// A server up for less than a lease: the first acquisition waits.
	r, err := a.Acquire(ctx, req("va:1", "a"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Acquired || r.Remaining <= 0 || r.Remaining > lease {
		t.Fatalf("on a young server: %+v, want refused for up to a lease", r)
	}
	time.Sleep(r.Remaining + 10*time.Millisecond)
	if r, err = a.Acquire(ctx, req("va:1", "a")); err != nil || !r.Acquired {
		t.Fatalf("after the quarantine: %+v %v, want acquired", r, err)
	}
	if r, err = b.Acquire(ctx, req("vb:1", "b")); err != nil || r.Acquired || r.HolderValue != "va:1" {
		t.Fatalf("b while a holds: %+v %v", r, err)
	}
	if r, err := a.Extend(ctx, locking.ExtendRequest{Key: key, Value: "va:1", TTL: lease}); err != nil || !r.Extended {
		t.Fatalf("extend in steady state: %v %v", r.Extended, err)
	}

	srv.Restart(t)
	lost := time.Now()
	// The holder's renewal is refused and notes the loss.
	if r, err := a.Extend(ctx, locking.ExtendRequest{Key: key, Value: "va:1", TTL: lease}); err != nil || r.Extended {
		t.Fatalf("extend after the restart: %v %v, want refused", r.Extended, err)
	}
	for _, p := range []*redislock.Provider{a, b} {
		r, err := p.Acquire(ctx, req("v:2", "x"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Acquired || r.Remaining <= 0 || r.Remaining > lease {
			t.Fatalf("right after the loss: %+v, want refused for up to a lease", r)
		}
	}
	// A provider that never saw the key is refused too: the quarantine is
	// stored on the server.
	c := mustProvider(t, srv.Client(t), redislock.Options{Quarantine: true})
	defer c.Close()
	r, err = c.Acquire(ctx, req("vc:2", "c"))
	if err != nil || r.Acquired {
		t.Fatalf("a provider that never saw the key: %+v %v, want refused", r, err)
	}
	time.Sleep(r.Remaining + 10*time.Millisecond)
	r, err = b.Acquire(ctx, req("vb:2", "b"))
	if err != nil || !r.Acquired {
		t.Fatalf("a lease after the loss: %+v %v, want acquired", r, err)
	}
	if waited := time.Since(lost); waited < lease {
		t.Fatalf("acquired %v after the loss, want at least the lease %v", waited, lease)
	}
	// The loss quarantines once: after release the key is free at once.
	if ok, err := b.Release(ctx, locking.ReleaseRequest{Key: key, Value: "vb:2"}); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	if r, err = a.Acquire(ctx, req("va:3", "a")); err != nil || !r.Acquired {
		t.Fatalf("after a release: %+v %v, want acquired", r, err)
	}

	// Without quarantine a restart frees the key at once.
	if _, err := plain.Acquire(ctx, locking.AcquireRequest{Key: "ns:lock:plain", Value: "p:1", TTL: lease, Owner: "p", ParticipantTTL: 2 * lease}); err != nil {
		t.Fatal(err)
	}
	srv.Restart(t)
	if r, err = plain.Acquire(ctx, locking.AcquireRequest{Key: "ns:lock:plain", Value: "p:2", TTL: lease, Owner: "p", ParticipantTTL: 2 * lease}); err != nil || !r.Acquired {
		t.Fatalf("without quarantine: %+v %v, want acquired at once", r, err)
	}
}

// TestQuarantine_Q3_OffLeavesRepliesAlone: without quarantine nothing of
// it reaches the scripts' replies (a held key reports its holder only).
func TestQuarantine_Q3_OffLeavesRepliesAlone(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	p := redislock.New(srv.Client(t))
	defer p.Close()
	if r, err := p.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "v", TTL: time.Second, Owner: "o", ParticipantTTL: time.Second}); err != nil || !r.Acquired {
		t.Fatalf("%+v %v", r, err)
	}
	r, err := p.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "w", TTL: time.Second, Owner: "o2", ParticipantTTL: time.Second})
	if err != nil || r.Acquired || r.HolderValue != "v" {
		t.Fatalf("%+v %v", r, err)
	}
}

// mustProvider is redislock.NewWithOptions, failing t on an error.
func mustProvider(t *testing.T, c redis.UniversalClient, o redislock.Options) *redislock.Provider {
	t.Helper()
	p, err := redislock.NewWithOptions(c, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
