package leadership_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
)

// fencedLock hands out leases carrying fences from a counter, like a
// provider that issues them (G1), over any lock.
type fencedLock struct {
	locking.Lock
	next atomic.Uint64
}

type fencedLease struct {
	locking.Lease
	fence uint64
}

func (f *fencedLease) Fence() uint64 { return f.fence }

func (l *fencedLock) TryAcquire(ctx context.Context, key string, d time.Duration) (locking.Lease, error) {
	lease, err := l.Lock.TryAcquire(ctx, key, d)
	if err != nil {
		return nil, err
	}
	return &fencedLease{Lease: lease, fence: l.next.Add(1) + 100}, nil
}

func TestElector_G2_FenceEverywhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := &fencedLock{Lock: bareLock{memLock(t)}}
		e := mustElector(t, "r", lock, fastOpts())
		changes := subscribe(e)
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		if got := e.Fence(); got != 101 {
			t.Fatalf("Fence = %d, want 101", got)
		}
		if d := leadership.Describe(e); d.Fence != 101 || !d.IsLeader || d.Term != 1 {
			t.Fatalf("Describe: fence %d leader %v term %d", d.Fence, d.IsLeader, d.Term)
		}
		work, cancel := context.WithTimeout(e.Token(), time.Minute)
		defer cancel()
		if f, ok := leadership.FenceFrom(work); !ok || f != 101 {
			t.Fatalf("FenceFrom(work) = %d, %v", f, ok)
		}
		if err := e.Resign(bg); err != nil {
			t.Fatal(err)
		}
		if e.Fence() != 0 {
			t.Fatalf("Fence = %d after resigning, want 0", e.Fence())
		}
		if !errors.Is(leadership.Assert(work), leadership.ErrNotLeader) {
			t.Fatal("Assert(work) nil after resigning")
		}
		time.Sleep(3 * time.Second) // sit out, then lead again
		synctest.Wait()
		if got := e.Fence(); got != 102 {
			t.Fatalf("second term's fence = %d, want 102", got)
		}
		var fences []uint64
		for _, c := range changes.all() {
			fences = append(fences, c.Fence)
		}
		if want := []uint64{101, 101, 102}; !equalU64(fences, want) {
			t.Fatalf("Change fences = %v, want %v (the loss carries the ended term's)", fences, want)
		}
	})
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestElector_G2_NoFencesFromAPlainLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := mustElector(t, "r", bareLock{memLock(t)}, fastOpts())
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		if !e.IsLeader() || e.Fence() != 0 {
			t.Fatalf("leader %v fence %d; want a leader without a fence", e.IsLeader(), e.Fence())
		}
		if f, ok := leadership.FenceFrom(e.Token()); ok || f != 0 {
			t.Fatalf("FenceFrom = %d, %v; want 0, false", f, ok)
		}
		if err := leadership.Assert(e.Token()); err != nil {
			t.Fatalf("Assert on a live term: %v", err)
		}
	})
}

func TestOptions_G4_SafetyMargin(t *testing.T) {
	o := leadership.DefaultOptions()
	if got, want := o.EffectiveSafetyMargin(), o.Lease/100+2*time.Millisecond; got != want {
		t.Fatalf("default margin %v, want %v", got, want)
	}
	small := leadership.Options{Lease: 40 * time.Millisecond, RenewInterval: 4 * time.Millisecond}
	if got := small.EffectiveSafetyMargin(); got >= small.RenewInterval/2 {
		t.Fatalf("default margin %v not clamped below RenewInterval/2 %v", got, small.RenewInterval/2)
	}
	o.SafetyMargin = 300 * time.Millisecond
	if got := o.EffectiveSafetyMargin(); got != 300*time.Millisecond {
		t.Fatalf("a positive margin is used as given: %v", got)
	}
	for _, m := range []time.Duration{-time.Millisecond, o.RenewInterval, o.RenewInterval + time.Second} {
		o.SafetyMargin = m
		err := o.Validate()
		if err == nil {
			t.Fatalf("SafetyMargin %v accepted", m)
		}
		for _, want := range []string{"Options.SafetyMargin", m.String(), "Options.RenewInterval", o.RenewInterval.String()} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not name %q", err, want)
			}
		}
	}
}

func TestElector_G4_TermEndsMarginBeforeTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := fastOpts()
		o.SafetyMargin = 100 * time.Millisecond
		fl := leadershiptest.NewFaultLock(memLock(t))
		fl.Set(leadershiptest.OpExtend, leadershiptest.FaultError) // renewals fail: the term runs out
		e := mustElector(t, "r", fl, o)
		start := time.Now()
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		if d := leadership.Describe(e); d.SafetyMargin != 100*time.Millisecond {
			t.Fatalf("Describe.SafetyMargin = %v", d.SafetyMargin)
		}
		<-e.Token().Done()
		if got, want := time.Since(start), 3*time.Second-100*time.Millisecond; got != want {
			t.Fatalf("term ended after %v, want %v: sent + granted - margin", got, want)
		}
		fl.Clear()
	})
}

func TestElector_G7_Run(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		a := mustElector(t, "r", lock, fastOpts())
		b := mustElector(t, "r", lock, fastOpts())
		ctx, cancel := context.WithCancel(bg)
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		synctest.Wait()
		if !a.IsLeader() {
			t.Fatal("Run did not lead")
		}
		mustStart(t, b)
		defer mustStop(t, b)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v after a clean handover, want nil", err)
		}
		if a.IsLeader() {
			t.Fatal("leading after Run returned")
		}
		synctest.Wait()
		if !b.IsLeader() {
			t.Fatal("the successor did not take over at once: Run did not release")
		}
		if err := a.Run(bg); err == nil || !strings.Contains(err.Error(), "stopped") {
			t.Fatalf("Run on a stopped elector = %v, want the start error", err)
		}
	})
}

// G7: when the release fails, Run returns its error.
func TestElector_G7_RunReturnsTheReleaseError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		e := mustElector(t, "r", fl, fastOpts())
		ctx, cancel := context.WithCancel(bg)
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		synctest.Wait()
		if !e.IsLeader() {
			t.Fatal("Run did not lead")
		}
		fl.Set(leadershiptest.OpRelease, leadershiptest.FaultError)
		cancel()
		err := <-done
		if err == nil || !strings.Contains(err.Error(), "release") {
			t.Fatalf("Run = %v, want the release's error", err)
		}
		if e.IsLeader() {
			t.Fatal("leading after Run returned")
		}
	})
}

func TestNewElector_IdentityRejected(t *testing.T) {
	lock := memLock(t)
	for _, id := range []string{strings.Repeat("x", 257), "a\nb", "tab\there", "del\x7f"} {
		_, err := leadership.NewElector("r", lock, leadership.DefaultOptions(), leadership.WithIdentity(id))
		if err == nil || !strings.Contains(err.Error(), "identity") {
			t.Fatalf("identity %q: err = %v, want an error naming the identity", id, err)
		}
	}
	if _, err := leadership.NewElector("r", lock, leadership.DefaultOptions(), leadership.WithIdentity(strings.Repeat("x", 256))); err != nil {
		t.Fatalf("a 256-byte identity: %v", err)
	}
}

// A lock call that never returns must not wedge Stop: Stop is bounded by
// its ctx, and the stuck call is logged once as LeadershipLoopFaulted (E10).
func TestElector_E10_StuckLockCallDoesNotWedgeStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, logs := observed()
		lock := memLock(t)
		fl := leadershiptest.NewFaultLock(lock)
		fl.Set(leadershiptest.OpAcquire, leadershiptest.FaultStall) // ignores its context
		e := mustElector(t, "r", fl, fastOpts(), leadership.WithLogger(log))
		mustStart(t, e)
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := countLogs(logs, zapcore.ErrorLevel, "LeadershipLoopFaulted"); n != 1 {
			t.Fatalf("LeadershipLoopFaulted logged %d times for one stuck call, want 1", n)
		}
		if err := e.Check(); err == nil {
			t.Fatal("Check reports a healthy elector while its lock call is stuck")
		}
		ctx, cancel := context.WithTimeout(bg, time.Second)
		defer cancel()
		start := time.Now()
		err := e.Stop(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Fatalf("Stop = %v after %v; want the ctx's error after 1s", err, time.Since(start))
		}
		if e.IsLeader() {
			t.Fatal("leading after Stop")
		}
		fl.Clear()
		fl.Unstall() // the stuck call returns now: its lease goes back
		synctest.Wait()
		if _, ok, _ := lock.Holder(bg, "leader:r"); ok {
			t.Fatal("the lease a stuck acquisition brought after Stop was kept")
		}
	})
}
