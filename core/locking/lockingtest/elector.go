package lockingtest

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
)

// electorOpts are the elector timings of the elector checks: a candidate
// without events tries every second; one with events sleeps until the
// holder's lease would run out (3s), woken at once by a release.
func electorOpts() leadership.Options {
	return leadership.Options{Lease: 3 * time.Second, RenewInterval: time.Second, RetryInterval: time.Second}
}

// electorKey is the lock key of role "r" under the default format.
const electorKey = "leader:r"

// newElector builds an elector for role "r" over l and stops it when the
// check ends.
func newElector(t *testing.T, l locking.Lock, identity string, opts ...leadership.Option) *leadership.Elector {
	t.Helper()
	e, err := leadership.NewElector("r", l, electorOpts(), append(opts, leadership.WithIdentity(identity))...)
	if err != nil {
		t.Fatalf("NewElector: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), failTimeout)
		defer cancel()
		_ = e.Stop(ctx)
	})
	return e
}

// settle lets what was just started reach a steady state: on fake time
// until every goroutine of the bubble is blocked, on real time a moment
// (for a subscription to be confirmed by a network backend).
func settle(c Config) {
	if c.Synctest {
		synctest.Wait()
		return
	}
	time.Sleep(300 * time.Millisecond)
}

// lead starts a and waits until it leads, then starts the candidate b and
// lets it be refused (and subscribe, when the lock has events).
func lead(t *testing.T, c Config, a, b *leadership.Elector) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failTimeout)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatalf("Start a: %v", err)
	}
	if err := a.WaitForLeadership(ctx); err != nil {
		t.Fatalf("a did not lead: %v", err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatalf("Start b: %v", err)
	}
	settle(c)
	if b.IsLeader() {
		t.Fatal("b leads while a holds the role")
	}
}

// testElectorTakeoverAfterStop: after a graceful Stop of the leader the
// candidate takes over at once when the lock has events (it subscribed and
// is woken by the release), and by its next attempt (it polls) otherwise.
func testElectorTakeoverAfterStop(t *testing.T, c Config, b Backend) {
	la, lb := b.NewLock(t, opts("elect")), b.NewLock(t, opts("elect"))
	a, cand := newElector(t, la, "a"), newElector(t, lb, "b")
	lead(t, c, a, cand)
	retry := electorOpts().RetryInterval
	ctx, cancel := context.WithTimeout(context.Background(), failTimeout)
	defer cancel()
	stopped := time.Now()
	if err := a.Stop(ctx); err != nil {
		t.Fatalf("Stop of the leader = %v, want nil after a clean release", err)
	}
	if err := cand.WaitForLeadership(ctx); err != nil {
		t.Fatalf("the candidate did not take over after Stop: %v", err)
	}
	took := time.Since(stopped)
	events := lb.Capabilities().Events
	switch {
	case events && took >= retry/2:
		t.Fatalf("takeover %v after Stop over a lock with events, want well within the %v retry interval (woken by the release, not by its poll)", took, retry)
	case !events && c.Synctest && took == 0:
		t.Fatal("takeover at the instant of Stop over a lock without events: nothing could have woken the candidate")
	case !events && took > retry+time.Second:
		t.Fatalf("takeover %v after Stop over a lock without events, want by the next attempt (retry interval %v)", took, retry)
	}
}

// testElectorStopRunNil: Run returns nil after ctx ends and the lease is
// released (G7), and Stop of a candidate that never led returns nil, over
// every provider: a provider without participants means no
// deregistration, not an error.
func testElectorStopRunNil(t *testing.T, c Config, b Backend) {
	la, lb := b.NewLock(t, opts("run")), b.NewLock(t, opts("run"))
	a, cand := newElector(t, la, "a"), newElector(t, lb, "b")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(context.Background(), failTimeout)
	defer wcancel()
	if err := a.WaitForLeadership(wctx); err != nil {
		t.Fatalf("Run did not lead: %v", err)
	}
	if err := cand.Start(wctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	settle(c)
	if err := cand.Stop(wctx); err != nil {
		t.Fatalf("Stop of a candidate that never led = %v, want nil", err)
	}
	cancel()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("Run after its ctx ended = %v, want nil after a clean release", err)
		}
	case <-time.After(failTimeout):
		t.Fatal("Run did not return after its ctx ended")
	}
	if a.IsLeader() {
		t.Fatal("IsLeader after Run returned")
	}
	// The lease was released: a new elector leads at once.
	d := newElector(t, b.NewLock(t, opts("run")), "d")
	if err := d.Start(wctx); err != nil {
		t.Fatal(err)
	}
	settle(c)
	if !d.IsLeader() {
		t.Fatal("the lease was not released by Run")
	}
}

// testElectorResign: an operator's resign request makes the leader step
// down when the lock can deliver it; otherwise RequestResign reports
// ErrNotSupported and the leader keeps leading (never a silent nil).
func testElectorResign(t *testing.T, c Config, b Backend) {
	la, lb, op := b.NewLock(t, opts("resign")), b.NewLock(t, opts("resign")), b.NewLock(t, opts("resign"))
	a, cand := newElector(t, la, "a"), newElector(t, lb, "b")
	lead(t, c, a, cand)
	ctx, cancel := context.WithTimeout(context.Background(), failTimeout)
	defer cancel()
	err := op.RequestResign(ctx, electorKey, "a")
	if !op.Capabilities().Resign {
		if !errors.Is(err, locking.ErrNotSupported) {
			t.Fatalf("RequestResign over a lock that cannot send it = %v, want ErrNotSupported", err)
		}
		settle(c)
		if !a.IsLeader() {
			t.Fatal("the leader stepped down although no request could reach it")
		}
		return
	}
	if err != nil {
		t.Fatalf("RequestResign: %v", err)
	}
	if err := cand.WaitForLeadership(ctx); err != nil {
		t.Fatalf("the candidate did not take over after the resign request: %v", err)
	}
	if a.IsLeader() {
		t.Fatal("the resigned leader still leads")
	}
}

// testElectorStopDuringOutage: a Stop whose deregistration fails (the
// backend is down) logs a Warn and returns nil when the lease was released
// or never held; a Stop whose release fails reports it.
func testElectorStopDuringOutage(t *testing.T, c Config, b Backend) {
	r, ok := b.(restricted)
	if !ok {
		t.Skip("needs a restricted provider to inject the outage")
	}
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	la, lb := b.NewLock(t, opts("down")), b.NewLock(t, opts("down"))
	a := newElector(t, la, "a", leadership.WithLogger(log))
	cand := newElector(t, lb, "b", leadership.WithLogger(log))
	lead(t, c, a, cand)
	ctx, cancel := context.WithTimeout(context.Background(), failTimeout)
	defer cancel()

	// The leader releases, but its deregistration fails.
	r.f.deregister.Store(true)
	if err := a.Stop(ctx); err != nil {
		t.Fatalf("Stop after a clean release with a failing deregistration = %v, want nil", err)
	}
	if err := cand.WaitForLeadership(ctx); err != nil {
		t.Fatalf("the lease was not released: %v", err)
	}
	wantWarn := 0
	if r.v.caps.Participants {
		wantWarn = 1
	}
	if n := logs.FilterMessage("LeadershipDeregisterFailed").FilterLevelExact(zapcore.WarnLevel).Len(); n != wantWarn {
		t.Fatalf("LeadershipDeregisterFailed logged %d times at Warn, want %d", n, wantWarn)
	}

	// A candidate that never held the role stops cleanly in an outage.
	d := newElector(t, b.NewLock(t, opts("down")), "d", leadership.WithLogger(log))
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	settle(c)
	r.f.down.Store(true)
	defer r.f.down.Store(false)
	if err := d.Stop(ctx); err != nil {
		t.Fatalf("Stop of a candidate during an outage = %v, want nil (no lease held)", err)
	}
	// The leader's release cannot reach the backend: Stop says so.
	if err := cand.Stop(ctx); err == nil {
		t.Fatal("Stop of a leader whose release failed = nil, want the release's error")
	}
}
