package leadershipfx

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"go.uber.org/fx"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
)

// Handle is one role declared with Role: its elector and the leader work
// attached to it. Role provides it named after the role
// (`name:"billing"`) and in the RolesGroup value group, with or without
// Module: attach work through it and the role starts that work before its
// elector contends and stops it before the elector releases the lease
// (E11, H3).
type Handle struct {
	name string
	app  *app // the app's process; nil when the role could not be built
	e    *leadership.Elector
	err  error // the role could not be built: reported by Role's invoke
	lock locking.Lock
	// opts and in are what the role was built from, shared with the
	// app's other roles built from equal values (see app.intern): the
	// options for the composition check, the config sections to name the
	// keys and sources behind its error (O4).
	opts *leadership.Options
	in   *roleInputs

	mu   sync.Mutex
	once map[string]*onceWork // nil until AttachOnce
}

type onceWork struct {
	w   Work
	err error
}

// newHandle builds role name's elector in the app's process.
func newHandle(name string, p RoleParams, slots []*processSlot, s roleSettings) *Handle {
	h := &Handle{name: name, lock: p.Lock}
	a, err := appFor(slots, p)
	if err != nil {
		h.err = roleError(name, err)
		return h
	}
	o, eo := electorOptions(name, p, s)
	h.opts, h.in = a.intern(o, p)
	if h.e, err = a.proc.Elector(name, o, eo...); err != nil {
		h.err = roleError(name, err)
		return h
	}
	h.app = a
	a.built()
	return h
}

// declare is Role's invoke inside the role's module: it reports the
// role's build error and checks the config's per-role overrides against
// every declared role (O4).
func (h *Handle) declare(all []*Handle) error {
	if h.err != nil {
		return h.err
	}
	names := make([]string, 0, len(all))
	for _, o := range all {
		names = append(names, o.name)
	}
	slices.Sort(names)
	if !reflect.ValueOf(h.in.cfg).IsZero() {
		if err := h.in.cfg.CheckRoles(names...); err != nil {
			return err
		}
	}
	return nil
}

// register appends the role's hook to lc (O3'): its OnStart checks the
// composition (F1: K5, T2) and starts the role's work and then its
// elector; its OnStop makes the app's process leave (see app.stop).
func (h *Handle) register(lc fx.Lifecycle) {
	lc.Append(fx.Hook{OnStart: h.start, OnStop: h.app.stopHook})
}

// start is the role's OnStart.
func (h *Handle) start(ctx context.Context) error {
	if err := h.check(); err != nil {
		return err
	}
	if err := h.app.proc.StartRole(ctx, h.name); err != nil {
		return roleError(h.name, err)
	}
	h.app.startedRole()
	return nil
}

// Err returns the error that kept the role from being built (it fails
// fx.New), nil for a built role.
func (h *Handle) Err() error { return h.err }

// Name returns the role's name.
func (h *Handle) Name() string { return h.name }

// Elector returns the role's elector (nil when the role failed to build,
// which fails fx.New).
func (h *Handle) Elector() *leadership.Elector { return h.e }

// Attach binds w to the role: w starts before the role's elector contends
// and stops before the elector releases the lease (E11). It fails once
// the role has started.
func (h *Handle) Attach(w Work) error {
	if w == nil {
		return fmt.Errorf("leadershipfx: Attach to role %s: nil Work", quoteRole(h.name))
	}
	if h.err != nil {
		return h.err
	}
	if err := h.app.proc.Attach(h.name, w); err != nil {
		return fmt.Errorf("leadershipfx: work for role %s is attached after the role started", quoteRole(h.name))
	}
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
	if h.once == nil {
		h.once = map[string]*onceWork{}
	}
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
	return h.Attach(leadership.GoWork("reader", name, fn))
}
