package dashboardfx

import (
	"context"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/dashboard"
	"github.com/hostloom/hostloom/schedulingfx"
)

// Module provides *dashboard.Dashboard (an http.Handler) over the app's
// lock, electors and schedulers. The app mounts it on its own server;
// Module opens no port. Supply a Settings value to set the operator
// credential (without one the dashboard is read-only).
var Module = fx.Module("hostloom.dashboard", fx.Provide(New))

// Settings are the app's choices for its dashboard; every field is
// optional (see dashboard.Options for the defaults).
type Settings struct {
	// Credential is the operators' shared secret; empty: read-only.
	Credential string
	// Title heads every page.
	Title string
	// Refresh is how often an open page reloads its content.
	Refresh time.Duration
	// History is how many recent runs each job shows.
	History int
}

// Params are New's dependencies.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	// Lock is lockingfx's lock.
	Lock *locking.DistributedLock
	// Electors are every role's elector (leadershipfx.Role adds them).
	Electors []*leadership.Elector `group:"hostloom.electors"`
	// Schedulers are schedulingfx.Module's, when the app has jobs.
	Schedulers *schedulingfx.Schedulers `optional:"true"`
	Settings   Settings                 `optional:"true"`
	Logger     *zap.Logger              `optional:"true"`
}

// New builds the dashboard and closes it when the app stops.
func New(p Params) (*dashboard.Dashboard, error) {
	var scheds map[string]*scheduling.Scheduler
	if p.Schedulers != nil {
		scheds = map[string]*scheduling.Scheduler{}
		for _, role := range p.Schedulers.Roles() {
			scheds[role] = p.Schedulers.For(role)
		}
	}
	log := p.Logger
	if log != nil {
		log = log.Named("dashboard")
	}
	d, err := dashboard.New(dashboard.Options{
		Lock: p.Lock, Electors: p.Electors, Schedulers: scheds,
		Credential: p.Settings.Credential, Title: p.Settings.Title,
		Refresh: p.Settings.Refresh, History: p.Settings.History, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	p.Lifecycle.Append(fx.StopHook(func(context.Context) error { return d.Close() }))
	return d, nil
}
