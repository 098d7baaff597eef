package leadershiptest_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

func newInner(t *testing.T) *locking.DistributedLock {
	t.Helper()
	o := locking.DefaultOptions()
	o.Namespace = "ns"
	l, err := locking.New(memlock.New(), o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestFaultLock_Faults(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(newInner(t))
		ctx := context.Background()
		lease, err := fl.TryAcquireAs(ctx, "k", 3*time.Second, "me")
		if err != nil {
			t.Fatal(err)
		}
		if g := lease.(locking.GrantedLease); g.Granted() != 3*time.Second || g.Owner() != "me" {
			t.Fatalf("granted %v owner %q", g.Granted(), g.Owner())
		}

		fl.Set(leadershiptest.OpAcquire, leadershiptest.FaultRefuse)
		_, err = fl.TryAcquire(ctx, "other", time.Second)
		var held *locking.HeldError
		if !errors.As(err, &held) || held.Key != "other" {
			t.Fatalf("refused acquire = %v", err)
		}

		fl.Set(leadershiptest.OpExtend, leadershiptest.FaultError)
		if err := lease.Extend(ctx, time.Second); !errors.Is(err, leadershiptest.ErrInjected) {
			t.Fatalf("extend = %v", err)
		}

		fl.Set(leadershiptest.OpExtend, leadershiptest.FaultHang)
		hctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
		start := time.Now()
		err = lease.Extend(hctx, time.Second)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 700*time.Millisecond {
			t.Fatalf("hang = %v after %v", err, time.Since(start))
		}

		fl.Set(leadershiptest.OpRelease, leadershiptest.FaultPanic)
		func() {
			defer func() {
				if recover() == nil {
					t.Error("FaultPanic did not panic")
				}
			}()
			_ = lease.Release(ctx)
		}()

		fl.Clear()
		fl.SetDelay(leadershiptest.OpExtend, 200*time.Millisecond)
		start = time.Now()
		if err := lease.Extend(ctx, time.Second); err != nil || time.Since(start) != 200*time.Millisecond {
			t.Fatalf("delayed extend = %v after %v", err, time.Since(start))
		}
		fl.SetDelay(leadershiptest.OpExtend, 0)

		fl.Set(leadershiptest.OpRelease, leadershiptest.FaultStall)
		done := make(chan error, 1)
		go func() { done <- lease.Release(context.Background()) }()
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("stalled release returned")
		default:
		}
		fl.Set(leadershiptest.OpRelease, leadershiptest.FaultNone)
		fl.Unstall()
		if err := <-done; !errors.Is(err, locking.ErrLeaseLost) {
			// The lease ran out during the hour-long stall.
			t.Fatalf("release after stall = %v", err)
		}
		if fl.Calls(leadershiptest.OpAcquire) != 2 || fl.Calls(leadershiptest.OpExtend) != 3 || fl.Calls(leadershiptest.OpRelease) != 2 {
			t.Fatalf("calls: acquire %d extend %d release %d", fl.Calls(leadershiptest.OpAcquire),
				fl.Calls(leadershiptest.OpExtend), fl.Calls(leadershiptest.OpRelease))
		}
	})
}

func TestFaultLock_Forwards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := newInner(t)
		fl := leadershiptest.NewFaultLock(inner)
		ctx := context.Background()
		if fl.MaxLease() != locking.DefaultMaxLease || fl.MaxKeyLength() != locking.DefaultMaxKeyLength || !fl.Coordinated() {
			t.Fatal("limits not forwarded")
		}
		if pk, err := fl.ProviderKey("k"); err != nil || pk != "ns:lock:k" {
			t.Fatalf("ProviderKey = %q, %v", pk, err)
		}
		released := make(chan struct{}, 1)
		stop, err := fl.Subscribe("k", func(e locking.Event) {
			if e.Kind == locking.EventReleased {
				released <- struct{}{}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		if c := fl.Capabilities(); !c.Events || !c.Inspect {
			t.Fatalf("Capabilities = %+v, want events and holder lookup forwarded", c)
		}
		l, err := fl.TryAcquireAs(ctx, "k", time.Second, "owner-1")
		if err != nil {
			t.Fatal(err)
		}
		h, ok, err := fl.Holder(ctx, "k")
		if err != nil || !ok || h.Owner != "owner-1" {
			t.Fatalf("Holder = %+v, %v, %v", h, ok, err)
		}
		fl.Set(leadershiptest.OpHolder, leadershiptest.FaultError)
		if _, _, err := fl.Holder(ctx, "k"); !errors.Is(err, leadershiptest.ErrInjected) {
			t.Fatalf("faulted Holder = %v", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-released:
		default:
			t.Fatal("release notification not forwarded")
		}
		if fl.Inner() != inner {
			t.Fatal("Inner")
		}

		// Over a bare lock the optional interfaces degrade.
		bare := leadershiptest.NewFaultLock(bareLock{inner})
		if bare.MaxLease() != 0 || bare.MaxKeyLength() != 0 {
			t.Fatal("bare lock reports limits")
		}
		if _, err := bare.Subscribe("k", func(locking.Event) {}); !errors.Is(err, locking.ErrNotSupported) {
			t.Fatalf("bare Subscribe = %v, want ErrNotSupported", err)
		}
		if c := bare.Capabilities(); c != (locking.Capabilities{}) {
			t.Fatalf("bare Capabilities = %+v, want none", c)
		}
		if _, _, err := bare.Holder(ctx, "k"); !errors.Is(err, locking.ErrNotSupported) {
			t.Fatalf("bare Holder = %v", err)
		}
		if pk, _ := bare.ProviderKey("k"); pk != "k" {
			t.Fatalf("bare ProviderKey = %q", pk)
		}
		bl, err := bare.TryAcquireAs(ctx, "b", time.Second, "x")
		if err != nil {
			t.Fatal(err)
		}
		// Without OwnedLock the owner is not stored: the default remains.
		if g := bl.(locking.GrantedLease); g.Granted() != time.Second || g.Owner() != locking.DefaultOwner() {
			t.Fatalf("bare lease granted %v owner %q", g.Granted(), g.Owner())
		}
	})
}

func TestFaultLock_Strings(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{leadershiptest.OpAcquire.String(), "acquire"}, {leadershiptest.OpExtend.String(), "extend"},
		{leadershiptest.OpRelease.String(), "release"}, {leadershiptest.OpHolder.String(), "holder"},
		{leadershiptest.Op(0).String(), "unknown"}, {leadershiptest.FaultNone.String(), "none"},
		{leadershiptest.FaultError.String(), "error"}, {leadershiptest.FaultRefuse.String(), "refuse"},
		{leadershiptest.FaultHang.String(), "hang"}, {leadershiptest.FaultPanic.String(), "panic"},
		{leadershiptest.FaultStall.String(), "stall"}, {leadershiptest.Fault(99).String(), "unknown"},
	} {
		if c.got != c.want {
			t.Errorf("String() = %q, want %q", c.got, c.want)
		}
	}
}

type bareLock struct{ inner locking.Lock }

func (b bareLock) TryAcquire(ctx context.Context, key string, lease time.Duration) (locking.Lease, error) {
	return b.inner.TryAcquire(ctx, key, lease)
}
func (b bareLock) Coordinated() bool { return b.inner.Coordinated() }
