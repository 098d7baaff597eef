package leadershipfx

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
)

// Module coordinates every role of the app: it provides *Roles and
// *Health and registers the hook that starts the roles. Put it last in
// fx.New, at the top level (not inside an fx.Module): its OnStart hook
// must come after every other one, because the electors begin contending
// there (O3). It is optional: without it each Role starts and stops its
// elector from a hook of its own (see Role), which lockingfx.Module's
// lifecycle runs after every other OnStart hook and stops first (O3, O2).
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
	cfg config.LeadershipConfig

	mu       sync.Mutex
	byName   map[string]*role
	anchored bool // the first hook is registered
	sealed   bool // Module's hook is registered: no role or work joins

	running atomic.Bool // started, and not yet stopping (Health.Ready)
}

type rolesParams struct {
	fx.In

	Lifecycle fx.Lifecycle
	Logger    *zap.Logger             `optional:"true"`
	Config    config.LeadershipConfig `optional:"true"`
}

func newRoles(p rolesParams) *Roles {
	log := p.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Roles{lc: p.Lifecycle, log: log, cfg: p.Config, byName: map[string]*role{}}
}

// role is one declared role and its work.
type role struct {
	name    string
	elector *leadership.Elector
	opts    leadership.Options
	lock    locking.Lock
	// The config sections the role was built from, to name the keys and
	// sources behind a composition error (O4); zero without config.
	cfg  config.LeadershipConfig
	lcfg config.LockingConfig

	mu   sync.Mutex
	work []Work

	stopOnce sync.Once
	settled  chan struct{} // closed once released or named as stuck
	released chan struct{} // closed once the elector has stopped
	stopErr  error         // the elector's Stop error; read after released
}

func newRole(name string, e *leadership.Elector, o leadership.Options, lock locking.Lock) *role {
	return &role{name: name, elector: e, opts: o, lock: lock,
		settled: make(chan struct{}), released: make(chan struct{})}
}

// attach adds w to the role's work.
func (ro *role) attach(w Work) {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	ro.work = append(ro.work, w)
}

// works returns the role's work.
func (ro *role) works() []Work {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	return slices.Clone(ro.work)
}

// moduleLast is the advice for a role or work registered after Module's
// hook.
const moduleLast = "put leadershipfx.Module last in fx.New, at the top level"

// join returns role name, building its elector with build the first
// time.
func (r *Roles) join(name string, lock locking.Lock, build func() (*leadership.Elector, leadership.Options, error)) (*role, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ro, ok := r.byName[name]; ok {
		return ro, nil
	}
	if r.sealed {
		return nil, fmt.Errorf("leadershipfx: role %s is built after leadershipfx.Module's start hook: %s", quoteRole(name), moduleLast)
	}
	e, o, err := build()
	if err != nil {
		return nil, err
	}
	ro := newRole(name, e, o, lock)
	r.byName[name] = ro
	if !r.anchored {
		// Registered now, after the lock and the rest of the elector's
		// dependencies appended theirs: on stop it runs before they stop.
		r.anchored = true
		r.lc.Append(fx.Hook{OnStart: r.check, OnStop: r.awaitReleased})
	}
	return ro, nil
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
	ro.attach(w)
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

// registerStart is Module's invoke: it checks the config's per-role
// overrides against the declared roles (O4) and appends the hook that
// starts the roles. fx appends hooks while it runs invokes, the invokes
// of nested modules first, then the top-level ones in order, and runs
// OnStart hooks in that order, stopping at the first error; so with
// Module last this hook runs only after every other OnStart hook
// succeeded.
func registerStart(r *Roles, lc fx.Lifecycle) error {
	r.mu.Lock()
	r.sealed = true
	declared := r.sortedLocked()
	r.mu.Unlock()
	if !reflect.ValueOf(r.cfg).IsZero() {
		if err := r.cfg.CheckRoles(declared...); err != nil {
			return err
		}
	}
	lc.Append(fx.Hook{OnStart: r.start, OnStop: r.stopAll})
	return nil
}

// check is the first hook's OnStart: every role's composition (F1: K5,
// and T2 strictly), all problems at once, before the rest of the app
// starts.
func (r *Roles) check(context.Context) error {
	var errs []error
	for _, ro := range r.roles() {
		if err := ro.check(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// start is the last hook's OnStart: the work of every role, then every
// elector, in role order.
func (r *Roles) start(ctx context.Context) error {
	rs := r.roles()
	for _, ro := range rs {
		for _, w := range ro.works() {
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
	r.running.Store(true)
	return nil
}
