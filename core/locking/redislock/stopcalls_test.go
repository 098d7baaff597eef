package redislock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// blockHook holds every command whose last argument is arg until release
// is closed, and reports on held when one is held.
type blockHook struct {
	arg     string
	held    chan struct{}
	release chan struct{}
	once    sync.Once
}

func (h *blockHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *blockHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 0 && fmt.Sprint(args[len(args)-1]) == h.arg {
			h.once.Do(func() { close(h.held) })
			<-h.release
		}
		return next(ctx, cmd)
	}
}

func (h *blockHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Releases and deregistrations are coalesced each in a queue of their
// own, so a release goes out at once even while a deregistration (another
// elector's, stopping at the same time) is on the wire: a graceful
// handover never waits for a deregistration (L7, P1).
func TestProvider_L7_P1_ReleaseDoesNotWaitForADeregistrationOnTheWire(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	h := &blockHook{arg: "p:blocked-owner", held: make(chan struct{}), release: make(chan struct{})}
	c.AddHook(h)
	p := redislock.New(c)
	t.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()
	r, err := p.Acquire(ctx, locking.AcquireRequest{Key: "role", Value: "v1", TTL: time.Minute})
	if err != nil || !r.Acquired {
		t.Fatalf("Acquire = %+v, %v", r, err)
	}
	dereg := make(chan error, 1)
	go func() { dereg <- p.Deregister(ctx, "other", "blocked-owner") }()
	<-h.held // the deregistration is on the wire, held there
	released := make(chan error, 1)
	go func() {
		ok, err := p.Release(ctx, locking.ReleaseRequest{Key: "role", Value: "v1"})
		if err == nil && !ok {
			err = fmt.Errorf("release found the key not held")
		}
		released <- err
	}()
	select {
	case err := <-released:
		if err != nil {
			t.Fatalf("Release: %v", err)
		}
	case <-time.After(10 * time.Second):
		close(h.release)
		t.Fatal("Release waited for a deregistration on the wire")
	}
	close(h.release)
	if err := <-dereg; err != nil {
		t.Fatalf("Deregister: %v", err)
	}
}

// holdKey holds every command whose fourth argument (a script's first key)
// is key until release is closed, and reports on held when one is held.
type holdKey struct {
	key     string
	held    chan struct{}
	release chan struct{}
	once    sync.Once
}

func (h *holdKey) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdKey) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 3 && fmt.Sprint(args[3]) == h.key {
			h.once.Do(func() { close(h.held) })
			<-h.release
		}
		return next(ctx, cmd)
	}
}

func (h *holdKey) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Renewals are coalesced in a queue of their own: a leader's renewal goes
// out at once even while candidates' tries are on the wire. Queued behind
// tens of thousands of tries on a saturated machine, renewals came back
// after their leases had run out, and each lost lease brought more tries:
// three processes of 50,000 electors never settled (L2, L7).
func TestProvider_L2_L7_RenewalDoesNotWaitForAnAcquisitionOnTheWire(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	h := &holdKey{key: "tried", held: make(chan struct{}), release: make(chan struct{})}
	c.AddHook(h)
	p := redislock.New(c)
	t.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()
	r, err := p.Acquire(ctx, locking.AcquireRequest{Key: "role", Value: "v1", TTL: time.Minute, Owner: "a", ParticipantTTL: 2 * time.Minute})
	if err != nil || !r.Acquired {
		t.Fatalf("Acquire = %+v, %v", r, err)
	}
	tried := make(chan error, 1)
	go func() {
		_, err := p.Acquire(ctx, locking.AcquireRequest{Key: "tried", Value: "v2", TTL: time.Minute, Owner: "b", ParticipantTTL: 2 * time.Minute})
		tried <- err
	}()
	<-h.held // the try is on the wire, held there
	extended := make(chan error, 1)
	go func() {
		r, err := p.Extend(ctx, locking.ExtendRequest{Key: "role", Value: "v1", TTL: time.Minute, Owner: "a", ParticipantTTL: 2 * time.Minute})
		if err == nil && !r.Extended {
			err = fmt.Errorf("extend found the key not held")
		}
		extended <- err
	}()
	select {
	case err := <-extended:
		if err != nil {
			t.Fatalf("Extend: %v", err)
		}
	case <-time.After(10 * time.Second):
		close(h.release)
		t.Fatal("the renewal waited for a candidate's try on the wire")
	}
	close(h.release)
	if err := <-tried; err != nil {
		t.Fatalf("Acquire: %v", err)
	}
}
