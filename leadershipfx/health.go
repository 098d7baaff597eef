package leadershipfx

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"go.uber.org/fx"

	"github.com/hostloom/hostloom/core/leadership"
)

// HealthParams are NewHealth's dependencies.
type HealthParams struct {
	fx.In

	// Roles, when set (Module provides it), makes Ready true from the
	// moment every role has started until the first role begins to stop.
	Roles *Roles `optional:"true"`

	// Lifecycle, used without Roles, makes Ready false until the app has
	// started and again from the moment it starts stopping.
	Lifecycle fx.Lifecycle `optional:"true"`

	// Electors are every role's electors (the ElectorsGroup group).
	Electors []*leadership.Elector `group:"hostloom.electors"`
}

// Health reports the electors' health for liveness and readiness
// endpoints. Leading is not part of either: a follower is as healthy and as
// ready as the leader.
type Health struct {
	electors []*leadership.Elector
	roles    *Roles
	ready    atomic.Bool
}

// NewHealth returns a Health over p.Electors, sorted by role. Without
// Roles or a Lifecycle it is ready at once.
func NewHealth(p HealthParams) *Health {
	h := &Health{electors: slices.Clone(p.Electors), roles: p.Roles}
	slices.SortFunc(h.electors, func(a, b *leadership.Elector) int { return strings.Compare(a.Role(), b.Role()) })
	if p.Roles != nil {
		return h
	}
	if p.Lifecycle == nil {
		h.ready.Store(true)
		return h
	}
	// Registered after the electors' hooks (it depends on them), so it
	// turns ready after they started and unready before they stop.
	p.Lifecycle.Append(fx.Hook{
		OnStart: func(context.Context) error { h.ready.Store(true); return nil },
		OnStop:  func(context.Context) error { h.ready.Store(false); return nil },
	})
	return h
}

// Electors returns the electors, sorted by role.
func (h *Health) Electors() []*leadership.Elector { return slices.Clone(h.electors) }

// Live reports every elector whose Check fails (loop wedged, or leading
// past its lease deadline); nil when all are healthy. No I/O.
func (h *Health) Live() error {
	var errs []error
	for _, e := range h.electors {
		errs = append(errs, e.Check())
	}
	return errors.Join(errs...)
}

// errNotReady is Ready's error outside the started phase.
var errNotReady = errors.New("leadershipfx: not started, or stopping")

// Ready is Live, and an error before the app has started and once it
// stops.
func (h *Health) Ready() error {
	ready := h.ready.Load()
	if h.roles != nil {
		ready = h.roles.running()
	}
	if !ready {
		return errNotReady
	}
	return h.Live()
}

// Livez serves Live: 200 "ok", or 503 with the errors, one per line.
func (h *Health) Livez() http.Handler { return checkHandler(h.Live) }

// Readyz serves Ready: 200 "ok", or 503 with the errors, one per line.
func (h *Health) Readyz() http.Handler { return checkHandler(h.Ready) }

func checkHandler(check func() error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := check(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(err.Error() + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
}
