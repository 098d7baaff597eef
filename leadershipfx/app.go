package leadershipfx

import (
	"context"
	"reflect"
	"sync"

	"go.uber.org/zap"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
)

// processGroup is the value group of processSlot values, one per Role.
const processGroup = "hostloom.process"

// processSlot is where the roles of one app find their one app: every
// Role provides an empty slot, and the first role built (fx builds one at
// a time) creates the app and records it in every slot, so the roles
// share one leadership.Process without a provider of their own, which
// two Roles would provide twice.
type processSlot struct {
	app *app
}

// app is the app's roles as one leadership.Process (H1) and where their
// hooks are in the app's start and stop.
type app struct {
	proc     *leadership.Process
	log      *zap.Logger
	stopHook func(context.Context) error // a.stop, one value for every role's hook

	mu       sync.Mutex
	opts     *leadership.Options // the latest role's, see intern
	in       *roleInputs         // the latest role's, see intern
	declared int                 // roles built
	started  int                 // roles whose OnStart succeeded
	stops    int                 // role OnStops run
}

// appFor returns the app recorded in slots, creating it (and the process,
// over p.Lock, with the identity leadership.identity sets) the first time.
func appFor(slots []*processSlot, p RoleParams) (*app, error) {
	for _, s := range slots {
		if s.app != nil {
			return s.app, nil
		}
	}
	log := p.Logger
	if log == nil {
		log = zap.NewNop()
	}
	proc, err := leadership.NewProcess(p.Lock, leadership.ProcessOptions{
		Identity: p.Config.Identity,
		Logger:   p.Logger,
	})
	if err != nil {
		return nil, err
	}
	if p.Locking.Provider == config.ProviderMemory && balanceAsked(p.Config) {
		log.Warn("HostLoomBalanceMemoryLock",
			zap.String("reason", "leadership.balance with locking.provider memory: the in-process lock cannot see other processes, so roles are balanced within this process only"))
	}
	a := &app{proc: proc, log: log}
	a.stopHook = a.stop
	for _, s := range slots {
		s.app = a
	}
	return a, nil
}

// balanceAsked reports whether the section or any role override sets
// leadership.balance.
func balanceAsked(c config.LeadershipConfig) bool {
	if c.Balance {
		return true
	}
	for _, r := range c.Roles {
		if r.Balance != nil && *r.Balance {
			return true
		}
	}
	return false
}

// roleInputs are the config sections a role was built from (zero
// without config).
type roleInputs struct {
	cfg  config.LeadershipConfig
	lcfg config.LockingConfig
}

// intern returns o and p's config sections as values shared with the
// role built before this one when they are equal, so an app of 50,000
// roles built from one config keeps one copy of each instead of one per
// role. Equal sections hold the same maps, which reflect.DeepEqual
// compares by address.
func (a *app) intern(o leadership.Options, p RoleParams) (*leadership.Options, *roleInputs) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.opts == nil || *a.opts != o {
		a.opts = &o
	}
	if a.in == nil || !reflect.DeepEqual(a.in.cfg, p.Config) || !reflect.DeepEqual(a.in.lcfg, p.Locking) {
		a.in = &roleInputs{cfg: p.Config, lcfg: p.Locking}
	}
	return a.opts, a.in
}

// built counts a role built in the app.
func (a *app) built() {
	a.mu.Lock()
	a.declared++
	a.mu.Unlock()
}

// startedRole counts a role whose OnStart succeeded.
func (a *app) startedRole() {
	a.mu.Lock()
	a.started++
	a.mu.Unlock()
}

// running reports whether every role has started and none has begun to
// stop.
func (a *app) running() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.declared > 0 && a.started == a.declared && a.stops == 0
}

// stop is a role's OnStop (O3', H2): the first to run makes the process
// leave, every role at once. Each but the last to run returns once every
// role has released its lease or been named as stuck, so the hooks
// between the roles stop without waiting for stuck work; the last one
// (the role whose OnStart ran first) waits until every lease is released
// or ctx ends.
func (a *app) stop(ctx context.Context) error {
	a.mu.Lock()
	a.stops++
	last := a.stops >= a.started
	a.mu.Unlock()
	if last {
		return a.proc.Leave(ctx)
	}
	return a.proc.LeaveSettled(ctx)
}
