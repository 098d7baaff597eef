package main

import (
	"context"
	"fmt"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	hlconfig "github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/leadershipfx"
)

// roleHost runs a replica's electors: start contends for every role,
// leave is the process's leave (H2).
type roleHost interface {
	start(ctx context.Context) error
	leave(ctx context.Context) error
}

// processHost is one leadership.Process with an elector per role, the
// calls a service without fx makes.
type processHost struct{ p *leadership.Process }

func newProcessHost(lock locking.Lock, name string, roles int, o leadership.Options, logger *zap.Logger, onChange func(leadership.Change)) (roleHost, error) {
	proc, err := leadership.NewProcess(lock, leadership.ProcessOptions{Identity: name, Balance: o.Balance, Logger: logger})
	if err != nil {
		return nil, err
	}
	for r := range roles {
		e, err := proc.Elector(roleName(r), o)
		if err != nil {
			return nil, err
		}
		e.OnChange(onChange)
	}
	return processHost{proc}, nil
}

func (h processHost) start(ctx context.Context) error { return h.p.Start(ctx) }
func (h processHost) leave(ctx context.Context) error { return h.p.Leave(ctx) }

// fxHost is an fx app whose roles are leadershipfx's: the first declared
// with leadershipfx.Role, the others built in the app's process with
// leadershipfx.New (declaring 50,000 fx options would measure fx's graph,
// not the election). Its start is the app's Start and its leave the app's
// Stop, so the leave measured is the one a service gets.
type fxHost struct{ app *fx.App }

func newFxHost(lock locking.Lock, name string, roles int, o leadership.Options, logger *zap.Logger, onChange func(leadership.Change)) (roleHost, error) {
	lc := hlconfig.Defaults().Leadership
	lc.Identity, lc.Balance = name, o.Balance
	lc.Lease, lc.RenewInterval, lc.RetryInterval = o.Lease, o.RenewInterval, o.RetryInterval
	opts := []fx.Option{
		fx.NopLogger,
		fx.Supply(fx.Annotate(lock, fx.As(new(locking.Lock)))),
		fx.Supply(lc),
		leadershipfx.Module,
		leadershipfx.Role(roleName(0)),
		fx.Invoke(fx.Annotate(func(first *leadership.Elector) { first.OnChange(onChange) },
			fx.ParamTags(fmt.Sprintf("name:%q", roleName(0))))),
		fx.Invoke(func(p leadershipfx.RoleParams) error {
			for r := 1; r < roles; r++ {
				e, err := leadershipfx.New(roleName(r), p)
				if err != nil {
					return err
				}
				e.OnChange(onChange)
			}
			return nil
		}),
	}
	if logger != nil {
		opts = append(opts, fx.Supply(logger))
	}
	app := fx.New(opts...)
	if err := app.Err(); err != nil {
		return nil, err
	}
	return fxHost{app}, nil
}

func (h fxHost) start(ctx context.Context) error { return h.app.Start(ctx) }
func (h fxHost) leave(ctx context.Context) error { return h.app.Stop(ctx) }

func roleName(r int) string { return fmt.Sprintf("role-%04d", r) }

// peakMem keeps the highest instant of a replica's memory: goroutine
// stacks (and their count) exactly, the heap as live at the latest GC,
// read without forcing a GC.
type peakMem struct {
	stack, heap atomic.Int64
	goroutines  atomic.Int64
}

// sample reads the memory every period until the returned function is
// called.
func (pm *peakMem) sample(period time.Duration) (stop func()) {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/sched/goroutines:goroutines"},
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			metrics.Read(samples)
			stack, heap := int64(samples[0].Value.Uint64()), int64(samples[1].Value.Uint64())
			if stack+heap > pm.stack.Load()+pm.heap.Load() {
				pm.stack.Store(stack)
				pm.heap.Store(heap)
			}
			if g := int64(samples[2].Value.Uint64()); g > pm.goroutines.Load() {
				pm.goroutines.Store(g)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// fill copies the peak into m.
func (pm *peakMem) fill(m *replicaMsg) {
	m.PeakStack, m.PeakHeap, m.PeakGoroutines = pm.stack.Load(), pm.heap.Load(), int(pm.goroutines.Load())
}
