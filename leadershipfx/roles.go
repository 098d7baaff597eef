package leadershipfx

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/fx"

	"github.com/hostloom/hostloom/core/leadership"
)

// Module provides *Roles and *Health over the app's roles. It is
// optional and changes no start or stop order: each Role starts from a
// hook of its own (O3'), with or without Module, wherever Module stands
// in fx.New.
var Module = fx.Module("hostloom.leadership",
	fx.Provide(newRoles, NewHealth),
)

// StopWarnAfter is how long a role's stop waits for its work (a job's
// run, a reader) after cancelling it before it names what still runs in
// a Warn log and lets the rest of the app stop. The role keeps its lease
// until that work returns or the process exits (O2, E11).
const StopWarnAfter = leadership.DefaultStopWarnAfter

// Work is leader work bound to one role: a scheduler, a channel's reader
// (leadership.Work). The app's leadership.Process starts it when the role
// starts, before the role's elector contends, and stops it before the
// elector releases the lease (E11, H3).
type Work = leadership.Work

// Activity is one running piece of a Work (leadership.Activity).
type Activity = leadership.Activity

// Roles gives access to the app's roles: Attach binds leader work to a
// role and Go a reader, as each role's Handle does. Module provides it.
//
// Every role of the app belongs to one leadership.Process: the roles
// start from their own hooks (see Role), and the first role's OnStop to
// run makes the process leave, every role at once (H2): each cancels its
// work, waits for it and releases its lease. A role whose work has not
// returned within StopWarnAfter is named in a Warn log (the job or
// reader, the role, how long it has run) and keeps its lease; the other
// roles are not held up, and the rest of the app stops. The last role's
// OnStop to run waits for those roles: each releases as soon as its work
// returns; if the stop ctx ends first, the role keeps its lease until the
// process exits (it expires then) and the error names the work.
type Roles struct {
	handles []*Handle // sorted by name
	app     *app      // nil when the app declares no role
}

type rolesParams struct {
	fx.In

	Handles []*Handle `group:"hostloom.roles"`
}

func newRoles(p rolesParams) *Roles {
	r := &Roles{handles: slices.Clone(p.Handles)}
	slices.SortFunc(r.handles, func(a, b *Handle) int { return strings.Compare(a.name, b.name) })
	for _, h := range r.handles {
		if h.app != nil {
			r.app = h.app
		}
	}
	return r
}

// Attach binds w to role: w starts before the role's elector contends,
// and stops before the elector releases the lease. It fails for an
// undeclared role and once the role has started.
func (r *Roles) Attach(roleName string, w Work) error {
	if w == nil {
		return fmt.Errorf("leadershipfx: Attach to role %s: nil Work", quoteRole(roleName))
	}
	for _, h := range r.handles {
		if h.name == roleName {
			return h.Attach(w)
		}
	}
	return fmt.Errorf("leadershipfx: work for role %s: no such role (declared: %s); add leadershipfx.Role(%s)",
		quoteRole(roleName), r.declared(), quoteRole(roleName))
}

// Go attaches fn to role as a reader: fn runs on its own goroutine from
// the role's start until the role stops, when its ctx is cancelled. Use
// it for a leader channel's reader, so that it ends before the role
// releases its lease (E11) and is named if it does not. fn must return
// when ctx ends.
func (r *Roles) Go(roleName, name string, fn func(ctx context.Context)) error {
	if fn == nil {
		return fmt.Errorf("leadershipfx: reader %q of role %s: nil func", name, quoteRole(roleName))
	}
	return r.Attach(roleName, leadership.GoWork("reader", name, fn))
}

// Declared returns the declared roles, sorted.
func (r *Roles) Declared() []string {
	names := make([]string, len(r.handles))
	for i, h := range r.handles {
		names[i] = h.name
	}
	return names
}

// Process returns the app's leadership.Process (nil when the app declares
// no role).
func (r *Roles) Process() *leadership.Process {
	if r.app == nil {
		return nil
	}
	return r.app.proc
}

func (r *Roles) declared() string {
	if len(r.handles) == 0 {
		return "none"
	}
	q := make([]string, len(r.handles))
	for i, h := range r.handles {
		q[i] = quoteRole(h.name)
	}
	return strings.Join(q, ", ")
}

// running reports whether every role has started and none has begun to
// stop (Health.Ready).
func (r *Roles) running() bool { return r.app != nil && r.app.running() }
