// Package fxhooks gives the hostloom fx modules a way to run hooks after
// every other OnStart hook of the app, whatever the order of the options
// in fx.New (O3), and to stop them all at once before any other OnStop
// hook (O2).
//
// fx runs OnStart hooks in the order they were appended and appends the
// hooks of nested fx.Module options before the top-level ones, so a hook
// appended by leadershipfx.Role would run before the app's own
// (fx.Invoke(startServer) after it in fx.New). Decorate, installed once at
// the top level (lockingfx.Module does so), wraps fx.Lifecycle: hooks
// handed to Defer start when every hook appended through it has started,
// and never if one fails. At stop, the first OnStop hook fx runs stops
// every deferred hook that started, all in parallel, before any other.
package fxhooks

import (
	"context"
	"errors"
	"sync"

	"go.uber.org/fx"
)

// Deferrer is the fx.Lifecycle Decorate returns: Defer registers a hook to
// start after every other OnStart hook.
type Deferrer interface {
	fx.Lifecycle
	// Defer registers h: its OnStart runs after every hook appended to
	// the lifecycle has started, its OnStop before any of them stops.
	Defer(h fx.Hook)
}

// Decorate wraps the app's fx.Lifecycle (use it with fx.Decorate at the
// top level of fx.New, once per app). Hooks appended through it reach fx
// unchanged, so fx's logs and errors still name them; after each one it
// appends a small marker hook of its own, and the marker that runs last
// (after the last hook) starts the deferred hooks.
func Decorate(lc fx.Lifecycle) fx.Lifecycle {
	l := &lifecycle{Lifecycle: lc}
	// Runs first: how many markers fx will run is fixed once it starts
	// (a hook appended while the app starts is not run).
	lc.Append(fx.Hook{OnStart: l.begin})
	return l
}

type lifecycle struct {
	fx.Lifecycle

	mu       sync.Mutex
	markers  int       // markers appended
	last     int       // the last marker fx runs, fixed when the app starts
	deferred []fx.Hook // Defer's hooks, in order
	running  []fx.Hook // the deferred hooks whose OnStart succeeded
	stopped  bool      // the deferred hooks have been stopped
}

// Append appends h as it is, then a marker.
func (l *lifecycle) Append(h fx.Hook) {
	l.Lifecycle.Append(h)
	l.mark()
}

// Defer registers h to start after every appended hook (see Deferrer).
func (l *lifecycle) Defer(h fx.Hook) {
	l.mu.Lock()
	l.deferred = append(l.deferred, h)
	l.mu.Unlock()
	l.mark() // so that an app whose only hooks are deferred runs them
}

// mark appends a marker: the last one to start starts the deferred hooks;
// the first to stop (the last started) stops them.
func (l *lifecycle) mark() {
	l.mu.Lock()
	l.markers++
	n := l.markers
	l.mu.Unlock()
	l.Lifecycle.Append(fx.Hook{
		OnStart: func(ctx context.Context) error { return l.marked(ctx, n) },
		OnStop:  l.stopDeferred,
	})
}

func (l *lifecycle) begin(context.Context) error {
	l.mu.Lock()
	l.last = l.markers
	l.mu.Unlock()
	return nil
}

// marked is marker n's start: the last marker starts the deferred hooks in
// order. A deferred hook that fails stops the ones started before it, and
// its error fails the start (fx then stops the hooks before the marker).
func (l *lifecycle) marked(ctx context.Context, n int) error {
	l.mu.Lock()
	last, hooks := l.last, l.deferred
	l.mu.Unlock()
	if n != last {
		return nil
	}
	for _, h := range hooks {
		if h.OnStart != nil {
			if err := h.OnStart(ctx); err != nil {
				return errors.Join(err, l.stopDeferred(ctx))
			}
		}
		l.mu.Lock()
		l.running = append(l.running, h)
		l.mu.Unlock()
	}
	return nil
}

// stopDeferred stops every deferred hook that started, in parallel, once;
// later calls return nil at once.
func (l *lifecycle) stopDeferred(ctx context.Context) error {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return nil
	}
	l.stopped = true
	running := l.running
	l.mu.Unlock()
	errs := make([]error, len(running))
	var wg sync.WaitGroup
	for i, h := range running {
		if h.OnStop != nil {
			wg.Go(func() { errs[i] = h.OnStop(ctx) })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}
