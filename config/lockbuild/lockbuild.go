package lockbuild

import (
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/core/locking/redislock"
)

// ProviderFunc builds the locking.Provider of a backend from the locking
// section (its own keys included). closeFn, when not nil, runs once at
// Built.Close: use it to close the provider and what the function opened,
// such as a connection pool. It should not contact the server: Build
// never does, so that a configuration error is found before any I/O.
type ProviderFunc func(cfg config.LockingConfig) (p locking.Provider, closeFn func() error, err error)

// Option configures Build.
type Option interface {
	apply(*settings)
}

type settings struct {
	client    redis.UniversalClient
	providers map[config.ProviderName]ProviderFunc
	err       error
}

type optionFunc func(*settings)

func (f optionFunc) apply(s *settings) { f(s) }

// WithRedisClient makes provider redis use client instead of a client
// built from the locking.redis keys. The caller keeps closing it.
// Default: none (Build builds the client and Built.Close closes it).
func WithRedisClient(client redis.UniversalClient) Option {
	return optionFunc(func(s *settings) { s.client = client })
}

// WithProvider makes build the provider of locking.provider name: the
// hook through which a backend of its own module (PostgreSQL, say) plugs
// in without the library importing its driver. name must be a value
// config accepts for locking.provider and not one Build knows itself
// (memory, redis, disabled); a later WithProvider for the same name
// replaces an earlier one. Default: none.
func WithProvider(name config.ProviderName, build ProviderFunc) Option {
	return optionFunc(func(s *settings) {
		switch {
		case name == config.ProviderMemory || name == config.ProviderRedis || name == config.ProviderDisabled:
			s.err = errors.Join(s.err, fmt.Errorf("lockbuild: WithProvider(%q): a provider Build knows itself", string(name)))
		case build == nil:
			s.err = errors.Join(s.err, fmt.Errorf("lockbuild: WithProvider(%q): nil ProviderFunc", string(name)))
		default:
			if s.providers == nil {
				s.providers = map[config.ProviderName]ProviderFunc{}
			}
			s.providers[name] = build
		}
	})
}

// Built is what Build returns.
type Built struct {
	// Kind is the provider in use: memory, redis, one added with
	// WithProvider, or disabled (also when locking.enabled is false).
	Kind config.ProviderName
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

// Close releases what Build opened: the provider's subscriptions, the
// Redis client Build created (never one passed with WithRedisClient) and
// what a ProviderFunc asked to close. It is safe to call more than once.
func (b *Built) Close() error {
	var errs []error
	for i := len(b.closers) - 1; i >= 0; i-- {
		errs = append(errs, b.closers[i]())
	}
	b.closers = nil
	return errors.Join(errs...)
}

// Build builds the lock cfg describes: memlock for provider memory,
// redislock for provider redis, the ProviderFunc of a WithProvider option
// for its name (a name config accepts that none builds is a
// *config.FieldError naming locking.provider), and a lock that grants
// everyone for provider disabled or enabled false (L4). It validates cfg first (cfg.Validate): a
// configuration without a provider is an error naming locking.provider
// and the choices (G6). It contacts no server.
func Build(cfg config.LockingConfig, opts ...Option) (*Built, error) {
	var s settings
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &Built{Kind: cfg.Provider}
	switch {
	case !cfg.Coordinated():
		b.Kind = config.ProviderDisabled
	case cfg.Provider == config.ProviderMemory:
		b.Provider = memlock.New()
	case cfg.Provider == config.ProviderRedis:
		client := s.client
		if client == nil {
			c, err := cfg.Redis.NewClient()
			if err != nil {
				return nil, err
			}
			client = c
			b.closers = append(b.closers, c.Close)
		}
		b.Client = client
		rp, err := redislock.NewWithOptions(client, cfg.Redis.ProviderOptions())
		if err != nil {
			_ = b.Close()
			return nil, err
		}
		b.Provider = rp
	default:
		build, ok := s.providers[cfg.Provider]
		if !ok {
			return nil, &config.FieldError{Key: "locking.provider", Source: cfg.Source("locking.provider"),
				Reason: fmt.Sprintf("%q is built by a module of its own, which this program does not include (lockbuild.WithProvider, or lockingfx.WithProvider in an fx app)", string(cfg.Provider))}
		}
		p, closeFn, err := build(cfg)
		if err != nil {
			return nil, fmt.Errorf("lockbuild: provider %q: %w", string(cfg.Provider), err)
		}
		if closeFn != nil {
			b.closers = append(b.closers, closeFn)
		}
		b.Provider = p
	}
	l, err := locking.New(b.Provider, cfg.Options())
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	b.Lock = l
	// The lock owns its provider (L10): closing it ends the provider's
	// subscriptions, before the client (or whatever a ProviderFunc's close
	// function releases) closes.
	b.closers = append(b.closers, l.Close)
	return b, nil
}
