package fxhooks_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/internal/fxhooks"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// trace records hook calls in order.
type trace struct {
	mu    sync.Mutex
	calls []string
}

func (tr *trace) add(s string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.calls = append(tr.calls, s)
}

func (tr *trace) all() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.calls)
}

func (tr *trace) hook(name string, startErr error) fx.Hook {
	return fx.Hook{
		OnStart: func(context.Context) error { tr.add("start " + name); return startErr },
		OnStop:  func(context.Context) error { tr.add("stop " + name); return nil },
	}
}

// deferIn is a module, like leadershipfx.Role, that defers its hook.
func deferIn(tr *trace, name string, startErr error) fx.Option {
	return fx.Module(name, fx.Invoke(func(lc fx.Lifecycle) error {
		d, ok := lc.(fxhooks.Deferrer)
		if !ok {
			return errors.New("the lifecycle is not decorated")
		}
		d.Defer(tr.hook(name, startErr))
		return nil
	}))
}

func appendAt(tr *trace, name string, startErr error) fx.Option {
	return fx.Invoke(func(lc fx.Lifecycle) { lc.Append(tr.hook(name, startErr)) })
}

// O3: a module's deferred hook starts after the top-level hooks declared
// after it; O2: it stops before any of them.
func TestDefer_O3_O2_StartsLastStopsFirst(t *testing.T) {
	tr := &trace{}
	app := fx.New(fx.NopLogger,
		fx.Decorate(fxhooks.Decorate),
		appendAt(tr, "first", nil),
		deferIn(tr, "role", nil),
		appendAt(tr, "server", nil),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := app.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"start first", "start server", "start role", "stop role", "stop server", "stop first"}
	if got := tr.all(); !slices.Equal(got, want) {
		t.Fatalf("calls %v\nwant  %v", got, want)
	}
}

// O3: when a later hook fails, the deferred hook never starts (and so
// never stops); the hooks that started stop.
func TestDefer_O3_LaterHookFailsNeverStarts(t *testing.T) {
	tr := &trace{}
	app := fx.New(fx.NopLogger,
		fx.Decorate(fxhooks.Decorate),
		appendAt(tr, "first", nil),
		deferIn(tr, "role", nil),
		appendAt(tr, "server", errors.New("port in use")),
	)
	err := app.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "port in use") {
		t.Fatalf("Start = %v", err)
	}
	want := []string{"start first", "start server", "stop first"}
	if got := tr.all(); !slices.Equal(got, want) {
		t.Fatalf("calls %v\nwant  %v", got, want)
	}
}

// A deferred hook that fails fails the start and stops the deferred hooks
// started before it.
func TestDefer_FailingDeferredHookRollsBack(t *testing.T) {
	tr := &trace{}
	app := fx.New(fx.NopLogger,
		fx.Decorate(fxhooks.Decorate),
		deferIn(tr, "a", nil),
		deferIn(tr, "b", errors.New("bad key")),
		appendAt(tr, "server", nil),
	)
	err := app.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "bad key") {
		t.Fatalf("Start = %v", err)
	}
	want := []string{"start server", "start a", "start b", "stop a", "stop server"}
	if got := tr.all(); !slices.Equal(got, want) {
		t.Fatalf("calls %v\nwant  %v", got, want)
	}
}

// An app whose only hooks are deferred ones still runs them.
func TestDefer_OnlyDeferredHooks(t *testing.T) {
	tr := &trace{}
	app := fx.New(fx.NopLogger, fx.Decorate(fxhooks.Decorate), deferIn(tr, "role", nil))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := app.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := tr.all(), []string{"start role", "stop role"}; !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
}

// O2: the deferred hooks stop in parallel: each waits until the other has
// begun stopping, which only works when they run at once.
func TestDefer_O2_DeferredHooksStopInParallel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var barrier sync.WaitGroup
		barrier.Add(2)
		stop := func(context.Context) error {
			barrier.Done()
			done := make(chan struct{})
			go func() { barrier.Wait(); close(done) }()
			select {
			case <-done:
				return nil
			case <-time.After(time.Minute):
				return errors.New("the other role did not stop meanwhile")
			}
		}
		both := func(name string) fx.Option {
			return fx.Module(name, fx.Invoke(func(lc fx.Lifecycle) {
				lc.(fxhooks.Deferrer).Defer(fx.Hook{OnStop: stop})
			}))
		}
		app := fx.New(fx.NopLogger, fx.Decorate(fxhooks.Decorate), both("a"), both("b"))
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := app.Stop(context.Background()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	})
}
