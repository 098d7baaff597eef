package leadership_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// brokenProvider is memlock behind a provider that breaks the contract on
// demand: Acquire panics, Subscribe fails, Deregister fails, Release
// blocks past its context. Each fault is switched off by clearing its flag.
type brokenProvider struct {
	mem         *memlock.Provider
	panicking   atomic.Bool
	noSubscribe atomic.Bool
	noDeregist  atomic.Bool
	hangRelease atomic.Bool
	unhang      chan struct{} // closed to let a hanging Release return
	subscribes  atomic.Int32
}

func (b *brokenProvider) Acquire(ctx context.Context, r locking.AcquireRequest) (locking.AcquireResult, error) {
	if b.panicking.Load() {
		panic("provider bug")
	}
	return b.mem.Acquire(ctx, r)
}

func (b *brokenProvider) Extend(ctx context.Context, r locking.ExtendRequest) (locking.ExtendResult, error) {
	return b.mem.Extend(ctx, r)
}

func (b *brokenProvider) Release(ctx context.Context, r locking.ReleaseRequest) (bool, error) {
	if b.hangRelease.Load() {
		<-b.unhang // ignores ctx
	}
	return b.mem.Release(ctx, r)
}

func (b *brokenProvider) Subscribe(key string, fn func(locking.Event)) (func(), error) {
	b.subscribes.Add(1)
	if b.noSubscribe.Load() {
		return nil, errors.New("broken: cannot subscribe")
	}
	return b.mem.Subscribe(key, fn)
}

func (b *brokenProvider) Participants(ctx context.Context, key string) ([]locking.Participant, error) {
	return b.mem.Participants(ctx, key)
}

func (b *brokenProvider) Deregister(ctx context.Context, key, owner string) error {
	if b.noDeregist.Load() {
		return errors.New("broken: cannot deregister")
	}
	return b.mem.Deregister(ctx, key, owner)
}

// TestElector_L9_BrokenProviderFaultsAndRetries: a provider that breaks the
// contract yields logged faults and retries, never a crash, a lost
// feature or a wedged Stop: a panicking Acquire is retried on the
// candidate cadence, a failing Subscribe is retried until the elector
// subscribes, a failing Deregister is a Warn, and a Release that never
// returns ends Stop when Stop's context ends.
func TestElector_L9_BrokenProviderFaultsAndRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &brokenProvider{mem: memlock.New(), unhang: make(chan struct{})}
		p.panicking.Store(true)
		p.noSubscribe.Store(true)
		lock, err := locking.New(p, locking.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if c := lock.Capabilities(); !c.Events || !c.Participants || c.Inspect || c.Resign || c.JobSlots {
			t.Fatalf("Capabilities = %+v, want events and participants", c)
		}
		log, logs := observed()
		e := mustElector(t, "r", lock, fastOpts(), leadership.WithLogger(log))
		mustStart(t, e)
		synctest.Wait()
		if e.IsLeader() {
			t.Fatal("leads although Acquire panics")
		}
		time.Sleep(5 * time.Second) // attempts and subscriptions at 0s, 2s, 4s
		synctest.Wait()
		if n := p.subscribes.Load(); n != 3 {
			t.Fatalf("Subscribe attempts in 5s = %d, want 3 (retried every RetryInterval)", n)
		}
		faults := logs.FilterMessage("LeadershipLoopFaulted").FilterLevelExact(zapcore.ErrorLevel).Len()
		if faults < 2 { // the acquisition's and the subscription's
			t.Fatalf("LeadershipLoopFaulted logged %d times, want the panicking Acquire and the failing Subscribe", faults)
		}
		// The provider heals: the elector leads and subscribes.
		p.panicking.Store(false)
		p.noSubscribe.Store(false)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !e.IsLeader() {
			t.Fatal("not leading after the provider healed")
		}
		if n := logs.FilterMessage("LeadershipSubscribed").Len(); n != 1 {
			t.Fatalf("LeadershipSubscribed logged %d times, want once after the failures", n)
		}
		// A candidate that subscribes now takes over at once after Stop:
		// the subscription is real, not lost to the earlier failures.
		b := mustElector(t, "r", lock, fastOpts(), leadership.WithIdentity("b"))
		mustStart(t, b)
		synctest.Wait()
		p.noDeregist.Store(true)
		stopped := time.Now()
		if err := e.Stop(context.Background()); err != nil {
			t.Fatalf("Stop with a failing Deregister = %v, want nil (the lease was released)", err)
		}
		synctest.Wait()
		if !b.IsLeader() || time.Since(stopped) != 0 {
			t.Fatalf("b leads %v, %v after Stop; want at once (woken by the release)", b.IsLeader(), time.Since(stopped))
		}
		if n := logs.FilterMessage("LeadershipDeregisterFailed").FilterLevelExact(zapcore.WarnLevel).Len(); n != 1 {
			t.Fatalf("LeadershipDeregisterFailed logged %d times at Warn, want once", n)
		}
		// A Release that never returns: Stop ends with its context.
		p.noDeregist.Store(false)
		p.hangRelease.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := b.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Stop over a Release that never returns = %v, want its context's deadline", err)
		}
		if b.IsLeader() {
			t.Fatal("IsLeader after Stop returned")
		}
		close(p.unhang) // the stuck call returns; nothing is left running
		synctest.Wait()
	})
}
