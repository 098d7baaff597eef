package leadershipfx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
)

// Module coordinates every role of the app: it provides *Roles and
// *Health and registers the hook that starts the roles. Put it last in
// fx.New, at the top level (not inside an fx.Module): its OnStart hook
// must come after every other one, because the electors begin contending
// there (O3). A Role without it fails fx.New with an error that says so.
var Module = fx.Options(
	fx.Provide(newRoles, NewHealth),
	fx.Invoke(registerStart),
)

// StopWarnAfter is how long a role's stop waits for its work (a job's
// run, a reader) after cancelling it before it names what still runs in
// a Warn log and lets the rest of the app stop. The role keeps its lease
// until that work returns or the process exits (O2, E11).
const StopWarnAfter = time.Second

// Work is leader work bound to one role: a scheduler, a channel's reader.
// Roles starts it after every OnStart hook of the app succeeded, before
// the role's elector contends, and stops it before the elector releases
// the lease (E11).
type Work interface {
	// Start starts the work and returns; ctx bounds starting only.
	Start(ctx context.Context) error
	// Stop cancels the work and returns once it has returned, or when ctx
	// ends, with ctx's error. Later calls wait again.
	Stop(ctx context.Context) error
	// Running reports what still runs (for the shutdown warning).
	Running() []Activity
}

// Activity is one running piece of a Work.
type Activity struct {
	// Kind names the activity in logs: "job" or "reader".
	Kind string
	// Name is the job's or reader's name.
	Name string
	// Since is when it started.
	Since time.Time
}

// Roles coordinates the app's roles: every Role registers its elector
// with it, and leader work (schedulingfx's schedulers, readers started
// with Go) is attached to a role with Attach. Module provides it.
//
// Start: its first hook (registered when the first role is built, after
// the lock it runs over) checks every role's composition (K5, T2); its
// last hook (Module's, after every other OnStart hook) starts the work,
// then the electors, roles in name order.
//
// Stop: the last hook's OnStop, the first to run, stops every role in
// parallel: each cancels its work, waits for it and releases its lease. A
// role whose work has not returned within StopWarnAfter is named in a
// Warn log (the job or reader, the role, how long it has run) and keeps
// its lease; the other roles are not held up, and the rest of the app
// stops. The first hook's OnStop, the last of HostLoom's to run, waits
// for those roles: each releases as soon as its work returns; if the stop
// ctx ends first, the role keeps its lease until the process exits (it
// expires then) and the error names the work.
type Roles struct {
	lc  fx.Lifecycle
	log *zap.Logger

	mu       sync.Mutex
	byName   map[string]*role
	anchored bool // the first hook is registered
	sealed   bool // Module's hook is registered: no role or work joins
}

type rolesParams struct {
	fx.In

	Lifecycle fx.Lifecycle
	Logger    *zap.Logger `optional:"true"`
}

func newRoles(p rolesParams) *Roles {
	log := p.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Roles{lc: p.Lifecycle, log: log, byName: map[string]*role{}}
}

// role is one declared role and its work.
type role struct {
	name    string
	elector *leadership.Elector
	opts    leadership.Options
	lock    locking.Lock
	work    []Work

	stopOnce sync.Once
	settled  chan struct{} // closed once released or named as stuck
	released chan struct{} // closed once the elector has stopped
	stopErr  error         // the elector's Stop error; read after released
}

// moduleLast is the advice for a role or work registered after Module's
// hook.
const moduleLast = "put leadershipfx.Module last in fx.New, at the top level"

// elector returns role name's elector, building it with build the first
// time (the role's invoke or its provider, whichever fx runs first).
func (r *Roles) elector(name string, lock locking.Lock, build func() (*leadership.Elector, leadership.Options, error)) (*leadership.Elector, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ro, ok := r.byName[name]; ok {
		return ro.elector, nil
	}
	if r.sealed {
		return nil, fmt.Errorf("leadershipfx: role %s is built after leadershipfx.Module's start hook: %s", quoteRole(name), moduleLast)
	}
	e, o, err := build()
	if err != nil {
		return nil, err
	}
	r.byName[name] = &role{name: name, elector: e, opts: o, lock: lock,
		settled: make(chan struct{}), released: make(chan struct{})}
	if !r.anchored {
		// Registered now, after the lock and the rest of the elector's
		// dependencies appended theirs: on stop it runs before they stop.
		r.anchored = true
		r.lc.Append(fx.Hook{OnStart: r.check, OnStop: r.awaitReleased})
	}
	return e, nil
}

// Attach binds w to role: w starts after every OnStart hook of the app,
// before the role's elector contends, and stops before the elector
// releases the lease. It fails for an undeclared role and after Module's
// hook is registered.
func (r *Roles) Attach(roleName string, w Work) error {
	if w == nil {
		return fmt.Errorf("leadershipfx: Attach to role %s: nil Work", quoteRole(roleName))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ro, ok := r.byName[roleName]
	switch {
	case r.sealed:
		return fmt.Errorf("leadershipfx: work for role %s is attached after leadershipfx.Module's start hook: %s", quoteRole(roleName), moduleLast)
	case !ok:
		return fmt.Errorf("leadershipfx: work for role %s: no such role (declared: %s); add leadershipfx.Role(%s)",
			quoteRole(roleName), r.declaredLocked(), quoteRole(roleName))
	}
	ro.work = append(ro.work, w)
	return nil
}

// Go attaches fn to role as a reader: fn runs on its own goroutine from
// the roles' start until the role stops, when its ctx is cancelled. Use it
// for a leader channel's reader, so that it ends before the role releases
// its lease (E11) and is named if it does not. fn must return when ctx
// ends.
func (r *Roles) Go(roleName, name string, fn func(ctx context.Context)) error {
	if fn == nil {
		return fmt.Errorf("leadershipfx: reader %q of role %s: nil func", name, quoteRole(roleName))
	}
	return r.Attach(roleName, &reader{name: name, fn: fn})
}

// Declared returns the declared roles, sorted.
func (r *Roles) Declared() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sortedLocked()
}

func (r *Roles) sortedLocked() []string {
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (r *Roles) declaredLocked() string {
	names := r.sortedLocked()
	if len(names) == 0 {
		return "none"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quoteRole(n)
	}
	return strings.Join(q, ", ")
}

// roles returns the roles in name order.
func (r *Roles) roles() []*role {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*role, 0, len(r.byName))
	for _, n := range r.sortedLocked() {
		out = append(out, r.byName[n])
	}
	return out
}

// registerStart is Module's invoke: it appends the hook that starts the
// roles. fx appends hooks while it runs invokes, the invokes of nested
// modules first, then the top-level ones in order, and runs OnStart hooks
// in that order, stopping at the first error; so with Module last this
// hook runs only after every other OnStart hook succeeded.
func registerStart(r *Roles, lc fx.Lifecycle) {
	r.mu.Lock()
	r.sealed = true
	r.mu.Unlock()
	lc.Append(fx.Hook{OnStart: r.start, OnStop: r.stopAll})
}

// check is the first hook's OnStart: every role's composition (F1: K5,
// and T2 strictly), all problems at once, before the rest of the app
// starts.
func (r *Roles) check(context.Context) error {
	var errs []error
	for _, ro := range r.roles() {
		if err := leadership.CheckComposition(ro.name, ro.opts, ro.lock); err != nil {
			errs = append(errs, roleError(ro.name, err))
		}
	}
	return errors.Join(errs...)
}

// start is the last hook's OnStart: the work of every role, then every
// elector, in role order.
func (r *Roles) start(ctx context.Context) error {
	rs := r.roles()
	for _, ro := range rs {
		for _, w := range ro.work {
			if err := w.Start(ctx); err != nil {
				return fmt.Errorf("leadershipfx: role %s: start work: %w", quoteRole(ro.name), err)
			}
		}
	}
	for _, ro := range rs {
		if err := ro.elector.Start(ctx); err != nil {
			return roleError(ro.name, err)
		}
	}
	return nil
}

// beginStop starts stopping every role, each on its own goroutine, once.
func (r *Roles) beginStop() []*role {
	rs := r.roles()
	for _, ro := range rs {
		ro.stopOnce.Do(func() { go ro.stop(r.log) })
	}
	return rs
}

// stopAll is the last hook's OnStop, the first to run: every role stops
// in parallel; it returns once each has released its lease or been named
// as stuck, so the rest of the app stops without waiting for stuck work.
func (r *Roles) stopAll(ctx context.Context) error {
	for _, ro := range r.beginStop() {
		select {
		case <-ro.settled:
		case <-ctx.Done():
			return r.stuckError(ctx)
		}
	}
	return nil
}

// awaitReleased is the first hook's OnStop, the last of HostLoom's to
// run (it also stops the roles when a failed start skipped stopAll): it
// waits until every role has released its lease, or ctx ends.
func (r *Roles) awaitReleased(ctx context.Context) error {
	var errs []error
	for _, ro := range r.beginStop() {
		select {
		case <-ro.released:
			if ro.stopErr != nil {
				errs = append(errs, roleError(ro.name, ro.stopErr))
			}
		case <-ctx.Done():
			return r.stuckError(ctx)
		}
	}
	return errors.Join(errs...)
}

// stuckError logs and returns what keeps a role's lease when the stop ctx
// has ended.
func (r *Roles) stuckError(ctx context.Context) error {
	var errs []error
	now := time.Now()
	for _, ro := range r.roles() {
		select {
		case <-ro.released:
			continue
		default:
		}
		var names []string
		for _, a := range ro.running() {
			names = append(names, fmt.Sprintf("%s %q running for %v", a.Kind, a.Name, now.Sub(a.Since).Round(time.Millisecond)))
		}
		r.log.Error("LeaseKeptForRunningWork", zap.String("role", ro.name), zap.Strings("running", names))
		errs = append(errs, fmt.Errorf("leadershipfx: role %s keeps its lease until its work returns or the process exits: %s",
			quoteRole(ro.name), strings.Join(names, ", ")))
	}
	return fmt.Errorf("%w: %w", ctx.Err(), errors.Join(errs...))
}

// running lists the role's running activities.
func (ro *role) running() []Activity {
	var out []Activity
	for _, w := range ro.work {
		out = append(out, w.Running()...)
	}
	return out
}

// stop cancels the role's work, waits for it and then stops the elector,
// which releases the lease. Work still running after StopWarnAfter is
// named at Warn; the wait goes on until it returns (E11): an unreleased
// lease then outlives the app's stop until the process exits.
func (ro *role) stop(log *zap.Logger) {
	defer close(ro.released)
	begin := time.Now()
	workDone := make(chan struct{})
	go func() {
		defer close(workDone)
		var wg sync.WaitGroup
		for _, w := range ro.work {
			wg.Go(func() {
				// No deadline: the lease is kept until the work returns.
				if err := w.Stop(context.Background()); err != nil {
					log.Warn("LeaderWorkStopFailed", zap.String("role", ro.name), zap.Error(err))
				}
			})
		}
		wg.Wait()
	}()
	warn := time.NewTimer(StopWarnAfter)
	select {
	case <-workDone:
		warn.Stop()
	case <-warn.C:
		now := time.Now()
		running := ro.running()
		for _, a := range running {
			log.Warn("LeaderWorkStillRunning", zap.String("role", ro.name), zap.String(a.Kind, a.Name),
				zap.Duration("running_for", now.Sub(a.Since)), zap.String("lease", "kept until it returns"))
		}
		if len(running) == 0 {
			log.Warn("LeaderWorkStillRunning", zap.String("role", ro.name), zap.String("lease", "kept until it returns"))
		}
		close(ro.settled)
		<-workDone
		log.Info("LeaderWorkReturned", zap.String("role", ro.name), zap.Duration("after", time.Since(begin)))
	}
	// The release is worth trying only while the lease runs.
	ctx, cancel := context.WithTimeout(context.Background(), ro.opts.Lease)
	defer cancel()
	ro.stopErr = ro.elector.Stop(ctx)
	select {
	case <-ro.settled:
	default:
		close(ro.settled)
	}
}

// reader is the Work Go attaches.
type reader struct {
	name string
	fn   func(context.Context)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	since  time.Time
}

func (rd *reader) Start(context.Context) error {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.done != nil {
		return fmt.Errorf("leadershipfx: reader %q started twice", rd.name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rd.cancel, rd.done, rd.since = cancel, make(chan struct{}), time.Now()
	go func() {
		defer close(rd.done)
		rd.fn(ctx)
	}()
	return nil
}

func (rd *reader) Stop(ctx context.Context) error {
	rd.mu.Lock()
	cancel, done := rd.cancel, rd.done
	rd.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (rd *reader) Running() []Activity {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.done == nil {
		return nil
	}
	select {
	case <-rd.done:
		return nil
	default:
		return []Activity{{Kind: "reader", Name: rd.name, Since: rd.since}}
	}
}
