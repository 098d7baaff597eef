package leadershipfx

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/internal/fxhooks"
)

// Handle is one role declared with Role: its elector and the leader work
// attached to it. Role provides it named after the role
// (`name:"billing"`) and in the RolesGroup value group, with or without
// Module: attach work through it and the role starts that work before its
// elector contends and stops it before the elector releases the lease
// (E11).
type Handle struct {
	name  string
	ro    *role
	roles *Roles // nil: the role runs from a hook of its own
	err   error  // the role could not be built: reported by Role's invoke
	cfg   config.LeadershipConfig
	log   *zap.Logger

	mu       sync.Mutex
	once     map[string]*onceWork
	started  bool // the own hook's OnStart has begun (no Module)
	deferred bool // the own hook runs after every other one (lockingfx.Module's lifecycle)
	announce bool // log LeadershipModuleAbsent at start (no Module, no deferred start)
	peers    []string
}

type onceWork struct {
	w   Work
	err error
}

// newHandle builds role name's elector: with p.Roles it joins the app's
// roles, else it registers the role's own start and stop hook.
func newHandle(name string, p RoleParams, s roleSettings) *Handle {
	log := p.Logger
	if log == nil {
		log = zap.NewNop()
	}
	h := &Handle{name: name, roles: p.Roles, cfg: p.Config, log: log, once: map[string]*onceWork{}}
	build := func() (*leadership.Elector, leadership.Options, error) { return newElector(name, p, s) }
	if p.Roles != nil {
		h.ro, h.err = p.Roles.join(name, p.Lock, build)
		if h.ro != nil {
			h.ro.cfg, h.ro.lcfg = p.Config, p.Locking
		}
		return h
	}
	e, o, err := build()
	if err != nil {
		h.err = err
		return h
	}
	h.ro = newRole(name, e, o, p.Lock)
	h.ro.cfg, h.ro.lcfg = p.Config, p.Locking
	hook := fx.Hook{OnStart: h.startAlone, OnStop: h.stopAlone}
	if d, ok := p.Lifecycle.(fxhooks.Deferrer); ok {
		// lockingfx.Module's lifecycle: the role starts after every other
		// OnStart hook of the app (O3) and all such roles stop together,
		// before any other OnStop hook (O2).
		d.Defer(hook)
		h.deferred = true
	} else if p.Lifecycle != nil {
		// Registered now, after the lock and the rest of the elector's
		// dependencies appended theirs: the role stops before they do.
		p.Lifecycle.Append(hook)
	}
	return h
}

// declare is Role's invoke: it reports the role's build error and, when
// the role runs without Module, checks the config's per-role overrides
// against every declared role (O4) and picks the role that logs that
// Module is absent.
func (h *Handle) declare(all []*Handle) error {
	if h.err != nil {
		return h.err
	}
	if h.roles != nil {
		return nil // Module's invoke checks the overrides
	}
	var names []string
	for _, o := range all {
		if o.roles == nil {
			names = append(names, o.name)
		}
	}
	slices.Sort(names)
	if !reflect.ValueOf(h.cfg).IsZero() {
		if err := h.cfg.CheckRoles(names...); err != nil {
			return err
		}
	}
	h.mu.Lock()
	h.announce = len(names) > 0 && names[0] == h.name && !h.deferred
	h.peers = names
	h.mu.Unlock()
	return nil
}

// Err returns the error that kept the role from being built (it fails
// fx.New), nil for a built role.
func (h *Handle) Err() error { return h.err }

// Name returns the role's name.
func (h *Handle) Name() string { return h.name }

// Elector returns the role's elector (nil when the role failed to build,
// which fails fx.New).
func (h *Handle) Elector() *leadership.Elector {
	if h.ro == nil {
		return nil
	}
	return h.ro.elector
}

// Attach binds w to the role: w starts before the role's elector contends
// and stops before the elector releases the lease (E11). With Module it
// fails after Module's hook is registered; without, once the role has
// started.
func (h *Handle) Attach(w Work) error {
	if w == nil {
		return fmt.Errorf("leadershipfx: Attach to role %s: nil Work", quoteRole(h.name))
	}
	if h.err != nil {
		return h.err
	}
	if h.roles != nil {
		return h.roles.Attach(h.name, w)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started {
		return fmt.Errorf("leadershipfx: work for role %s is attached after the role started", quoteRole(h.name))
	}
	h.ro.attach(w)
	return nil
}

// AttachOnce returns the Work attached to the role under key, building it
// with build and attaching it on the first call; a failed build's error
// is returned by every call for key. schedulingfx uses it to give each
// role one scheduler, whichever job option asks first.
func (h *Handle) AttachOnce(key string, build func() (Work, error)) (Work, error) {
	h.mu.Lock()
	if ow, ok := h.once[key]; ok {
		h.mu.Unlock()
		return ow.w, ow.err
	}
	ow := &onceWork{}
	h.once[key] = ow
	h.mu.Unlock()
	ow.w, ow.err = build()
	if ow.err == nil && ow.w == nil {
		ow.err = fmt.Errorf("leadershipfx: role %s: %s built no Work", quoteRole(h.name), key)
	}
	if ow.err == nil {
		ow.err = h.Attach(ow.w)
	}
	if ow.err != nil {
		ow.w = nil
	}
	return ow.w, ow.err
}

// Go attaches fn to the role as a reader, like Roles.Go: fn runs from the
// role's start until its stop, when its ctx is cancelled, and must then
// return.
func (h *Handle) Go(name string, fn func(ctx context.Context)) error {
	if fn == nil {
		return fmt.Errorf("leadershipfx: reader %q of role %s: nil func", name, quoteRole(h.name))
	}
	return h.Attach(&reader{name: name, fn: fn})
}

// startAlone is the OnStart of a role without Module: the composition
// check (K5, T2), the attached work, then the elector.
func (h *Handle) startAlone(ctx context.Context) error {
	h.mu.Lock()
	h.started = true
	announce, peers := h.announce, h.peers
	h.mu.Unlock()
	if announce {
		h.log.Info("LeadershipModuleAbsent", zap.Strings("roles", peers),
			zap.String("start", "each role starts its election at its own OnStart hook"),
			zap.String("advice", "build the lock with lockingfx.Module, or put leadershipfx.Module last in fx.New, so elections begin after every OnStart hook"))
	}
	ro := h.ro
	if err := ro.check(); err != nil {
		return err
	}
	work := ro.works()
	for i, w := range work {
		if err := w.Start(ctx); err != nil {
			stopWork(work[:i], h.log, ro.name)
			return fmt.Errorf("leadershipfx: role %s: start work: %w", quoteRole(ro.name), err)
		}
	}
	if err := ro.elector.Start(ctx); err != nil {
		stopWork(work, h.log, ro.name)
		return roleError(ro.name, err)
	}
	return nil
}

// stopAlone is the OnStop of a role without Module: the role's stop (its
// work, then its elector), waiting until the lease is released or ctx
// ends.
func (h *Handle) stopAlone(ctx context.Context) error {
	ro := h.ro
	ro.stopOnce.Do(func() { go ro.stop(h.log) })
	select {
	case <-ro.released:
		if ro.stopErr != nil {
			return roleError(ro.name, ro.stopErr)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ctx.Err(), ro.stuck(h.log))
	}
}

// stopWork stops work that started before a later start failed.
func stopWork(work []Work, log *zap.Logger, role string) {
	for _, w := range work {
		if err := w.Stop(context.Background()); err != nil {
			log.Warn("LeaderWorkStopFailed", zap.String("role", role), zap.Error(err))
		}
	}
}

// errStillReleasing is a role whose work has returned but whose release
// has not finished when the stop ctx ends.
var errStillReleasing = errors.New("releasing its lease")
