package lockingfx

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/backends/redis/redislockbuild"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/core/locking"
)

// Module provides locking.Lock, *locking.DistributedLock and
// locking.Provider, built by New from the config.LockingConfig section.
// It builds the lock with the app: a configuration New refuses (no
// locking.provider, no config.LockingConfig in the graph, a bad value)
// fails fx.New with New's own error, reported by Module's invoke, rather
// than inside the chain fx wraps around the constructors that needed the
// lock (O4). Put it before the options that use the lock, as in the
// package example, so that its invoke runs first. It decorates nothing:
// the roles of leadershipfx.Role start in fx's order (O3').
var Module = fx.Module("hostloom.locking",
	fx.Provide(fx.Private, newOutcome),
	fx.Provide(func(o *outcome) (LockResult, error) { return o.res, o.err }),
	fx.Invoke(func(o *outcome) error { return o.err }),
)

// outcome is New's result, kept so that Module's invoke reports its error
// as it is.
type outcome struct {
	res LockResult
	err error
}

func newOutcome(p LockParams) *outcome {
	res, err := New(p)
	return &outcome{res: res, err: err}
}

// LockParams are New's dependencies.
type LockParams struct {
	fx.In

	Lifecycle fx.Lifecycle

	// Config selects and limits the lock. It must name a provider (G6):
	// absent (the zero value) or without locking.provider, New fails
	// naming the key and the choices.
	Config config.LockingConfig `optional:"true"`

	// Logger receives one Info line describing the lock (secrets
	// redacted) and the Warn of the memory provider. Optional: without it
	// New logs nothing.
	Logger *zap.Logger `optional:"true"`

	// Backends are the backends the app links (the value group
	// BackendGroup, filled by each backend's fx module through
	// ProvideBackend): locking.provider may name any of them, and redis,
	// the library module's own backend, which New builds with
	// redislockbuild.Backend{Client, Logger} unless one of them is named
	// redis (redislockfx.Module's).
	Backends []lockbuild.Backend `group:"hostloom.backends"`

	// Client is the app's own Redis client, used by provider redis instead
	// of building one from locking.redis when no backend named redis is
	// in Backends. The app keeps closing it, and checking its credentials.
	// Optional.
	Client redis.UniversalClient `optional:"true"`
}

// LockResult is what New provides.
type LockResult struct {
	fx.Out

	// Lock is the lock electors and schedulers use.
	Lock locking.Lock
	// DistributedLock is the same lock with its limits, holder lookup and
	// state store.
	DistributedLock *locking.DistributedLock
	// Provider is the backend's provider (*memlock.Provider for provider
	// memory); nil when coordination is disabled.
	Provider locking.Provider
}

// New builds the lock with lockbuild.Build over the graph's backends and
// closes what it opened when the app stops.
//
// With provider memory it logs HostLoomLockMemory once at Warn: that lock
// coordinates the electors of this process only (G6).
//
// When the backend has a start check (lockbuild.Provided.Check), New runs
// it at start: a *config.FieldError (credentials the server refuses, say)
// fails start, after the backend logged it; any other error is an outage
// the electors ride out (E7), so the app starts.
func New(p LockParams) (LockResult, error) {
	cfg := p.Config
	backends := p.Backends
	if !slices.ContainsFunc(backends, func(b lockbuild.Backend) bool { return b != nil && b.Provider() == config.ProviderRedis }) {
		// The library module's own backend, linked by default, with what
		// the graph has for it.
		backends = append(slices.Clip(backends), redislockbuild.Backend{Client: p.Client, Logger: p.Logger})
	}
	b, err := lockbuild.Build(cfg, lockbuild.WithBackends(backends...))
	if err != nil {
		if reflect.ValueOf(cfg).IsZero() {
			return LockResult{}, fmt.Errorf("lockingfx: the graph has no config.LockingConfig (add configfx.Module or configfx.Supply): %w", err)
		}
		return LockResult{}, err
	}
	log := p.Logger
	if log == nil {
		log = zap.NewNop()
	}
	fields := []zap.Field{
		zap.String("provider", string(b.Kind)),
		zap.Bool("coordinated", b.Lock.Coordinated()),
		zap.String("namespace", cfg.Namespace),
		zap.Duration("max_lease", cfg.MaxLease),
	}
	log.Info("HostLoomLock", append(fields, b.LogFields...)...)
	if b.Kind == config.ProviderMemory {
		log.Warn("HostLoomLockMemory", zap.String("coordinates", "the electors of this process only"),
			zap.String("source", cfg.Source("locking.provider")))
	}
	if p.Lifecycle != nil {
		var start func(context.Context) error
		if b.HasCheck() {
			start = func(ctx context.Context) error {
				var fe *config.FieldError
				if err := b.Check(ctx); errors.As(err, &fe) {
					// fx runs no OnStop for a hook whose OnStart failed.
					return errors.Join(err, b.Close())
				}
				return nil
			}
		}
		p.Lifecycle.Append(fx.Hook{OnStart: start, OnStop: func(context.Context) error { return b.Close() }})
	}
	return LockResult{Lock: b.Lock, DistributedLock: b.Lock, Provider: b.Provider}, nil
}

// BackendGroup is the fx value group of the lockbuild.Backend values New
// builds from (see ProvideBackend).
const BackendGroup = "hostloom.backends"

// BackendResult puts one backend in the graph: in BackendGroup, for New,
// and in configfx.BackendGroup, so that configfx.Module's config.Load
// accepts its provider name and decodes its section. A backend's fx
// module returns it from a constructor (ProvideBackend), so the backend
// can take what it needs from the graph (an app's client, the logger).
type BackendResult struct {
	fx.Out

	Config config.Backend    `group:"hostloom.config_backends"`
	Build  lockbuild.Backend `group:"hostloom.backends"`
}

// ProvideBackend returns the BackendResult of b.
func ProvideBackend(b lockbuild.Backend) BackendResult {
	return BackendResult{Config: b, Build: b}
}

// Backend adds b, a backend that needs nothing from the graph, to the app
// (ProvideBackend): locking.provider may then name it.
func Backend(b lockbuild.Backend) fx.Option {
	return fx.Provide(func() BackendResult { return ProvideBackend(b) })
}
