package lockingfx

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/core/locking/redislock"
)

// Module provides locking.Lock, *locking.DistributedLock and
// locking.Provider, built by New from the config.Locking section.
var Module = fx.Module("hostloom.locking", fx.Provide(New))

// Params are New's dependencies. Every one is optional.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle

	// Config selects and limits the lock. Absent (the zero value), the
	// defaults apply: config.Defaults().Locking, the memory provider.
	Config config.Locking `optional:"true"`

	// Client is the app's own Redis client, used by provider redis instead
	// of building one from Config.Redis. The app keeps closing it.
	Client redis.UniversalClient `optional:"true"`

	// Logger receives one Info line describing the lock (passwords
	// redacted). Default: none.
	Logger *zap.Logger `optional:"true"`
}

// Result is what New provides.
type Result struct {
	fx.Out

	// Lock is the lock electors and schedulers use.
	Lock locking.Lock
	// DistributedLock is the same lock with its limits, holder lookup and
	// state store.
	DistributedLock *locking.DistributedLock
	// Provider is the backend: *memlock.Provider or *redislock.Provider;
	// nil when coordination is disabled.
	Provider locking.Provider
}

// New builds the lock with Build and closes what Build opened when the app
// stops. It does not contact Redis: an unreachable server at start leaves
// the app running, and the electors apply their outage policy (E7).
func New(p Params) (Result, error) {
	cfg := p.Config
	if reflect.ValueOf(cfg).IsZero() {
		cfg = config.Defaults().Locking
	}
	b, err := Build(cfg, p.Client)
	if err != nil {
		return Result{}, err
	}
	if p.Logger != nil {
		fields := []zap.Field{
			zap.String("provider", string(b.Kind)),
			zap.Bool("coordinated", b.Lock.Coordinated()),
			zap.String("namespace", cfg.Namespace),
			zap.Duration("max_lease", cfg.MaxLease),
		}
		if b.Kind == config.ProviderRedis {
			fields = append(fields, zap.Bool("app_client", p.Client != nil))
			if p.Client == nil {
				fields = append(fields, zap.Object("redis", cfg.Redis))
			}
		}
		p.Logger.Info("HostLoomLock", fields...)
	}
	if p.Lifecycle != nil {
		p.Lifecycle.Append(fx.StopHook(b.Close))
	}
	return Result{Lock: b.Lock, DistributedLock: b.Lock, Provider: b.Provider}, nil
}

// Built is what Build returns.
type Built struct {
	// Kind is the provider in use: memory, redis, or disabled (also when
	// Config.Enabled is false).
	Kind config.Provider
	// Lock is the lock over Provider.
	Lock *locking.DistributedLock
	// Provider is nil when coordination is disabled.
	Provider locking.Provider
	// Client is the Redis client in use (the caller's or one Build
	// created), nil for other providers.
	Client redis.UniversalClient
	// closers run in reverse order by Close.
	closers []func() error
}

// Close releases what Build opened: the Redis provider's subscriptions and
// the client Build created (never a client the caller passed in). It is
// safe to call more than once.
func (b *Built) Close() error {
	var errs []error
	for i := len(b.closers) - 1; i >= 0; i-- {
		errs = append(errs, b.closers[i]())
	}
	b.closers = nil
	return errors.Join(errs...)
}

// Build builds the lock cfg describes, without fx: memlock for provider
// memory, redislock over client (or, when client is nil, over a client
// built from cfg.Redis) for provider redis, and a lock that grants everyone
// for provider disabled or enabled false (L4). It validates cfg first.
func Build(cfg config.Locking, client redis.UniversalClient) (*Built, error) {
	o := cfg.Options()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	b := &Built{Kind: cfg.Provider}
	switch {
	case !cfg.Coordinated():
		b.Kind = config.ProviderDisabled
	case cfg.Provider == config.ProviderMemory:
		b.Provider = memlock.New()
	case cfg.Provider == config.ProviderRedis:
		if client == nil {
			c, err := cfg.Redis.NewClient()
			if err != nil {
				return nil, err
			}
			client = c
			b.closers = append(b.closers, c.Close)
		}
		b.Client = client
		rp := redislock.New(client)
		b.Provider = rp
		b.closers = append(b.closers, rp.Close)
	default:
		return nil, fmt.Errorf("config: locking.provider %q is not one of memory, redis, disabled", cfg.Provider)
	}
	l, err := locking.New(b.Provider, o)
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	b.Lock = l
	return b, nil
}
