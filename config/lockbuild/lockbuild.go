package lockbuild

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild/buildapi"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// Backend is a lock backend a program links: its configuration section
// (config.Backend: the locking.provider name and the section
// locking.<name>.*) and its builder. A backend's own package implements
// it; a program passes the backends it links to Build (WithBackends), to
// config.Load (config.WithBackends, or LoadOption here), and in an fx app
// through lockingfx.Backend. Nothing registers itself: what a program can
// build is what it passes.
type Backend interface {
	config.Backend
	// Build makes the provider the configuration describes (cfg is the
	// whole locking section, validated, with this backend's section in
	// cfg.Section). It must not contact the server: Build never does, so
	// that a configuration error is found before any I/O. Errors about a
	// key are *config.FieldError values naming the key and its source.
	Build(cfg config.LockingConfig) (Provided, error)
}

// Provided is what a Backend's Build returns: the provider, what closes
// what Build opened, the start check and the fields of lockingfx's
// HostLoomLock line (see buildapi.Provided for each).
type Provided = buildapi.Provided

// Option configures Build.
type Option interface {
	apply(*settings)
}

type settings struct {
	backends []Backend
}

type optionFunc func(*settings)

func (f optionFunc) apply(s *settings) { f(s) }

// WithBackends makes Build build the providers of backends, by their
// locking.provider names; several calls add up, nil backends are skipped.
// A name given twice, or one Build knows itself (memory, disabled), is
// an error. Default: none besides redis, the library module's own backend
// (redislockbuild.Backend{}: a client built from locking.redis, nothing
// logged), which a backend named redis given here replaces.
func WithBackends(backends ...Backend) Option {
	return optionFunc(func(s *settings) {
		for _, b := range backends {
			if b != nil {
				s.backends = append(s.backends, b)
			}
		}
	})
}

// LoadOption is config.WithBackends(backends...): the option that makes
// config.Load accept the backends' provider names and keys.
func LoadOption(backends ...Backend) config.LoadOption {
	cb := make([]config.Backend, 0, len(backends))
	for _, b := range backends {
		if b != nil {
			cb = append(cb, b)
		}
	}
	return config.WithBackends(cb...)
}

// Built is what Build returns.
type Built struct {
	// Kind is the provider in use: memory, the name of a backend, or
	// disabled.
	Kind config.ProviderName
	// Lock is the lock over Provider.
	Lock *locking.DistributedLock
	// Provider is nil when coordination is disabled.
	Provider locking.Provider
	// LogFields are the backend's Provided.LogFields.
	LogFields []zap.Field
	// check is the backend's Provided.Check; see Check.
	check func(ctx context.Context, l *locking.DistributedLock) error
	// closers run in reverse order by Close.
	closers []func() error
}

// HasCheck reports whether the backend contacts its server in Check.
func (b *Built) HasCheck() bool { return b.check != nil }

// Check runs the backend's start check (Provided.Check): nil when the
// backend has none.
func (b *Built) Check(ctx context.Context) error {
	if b.check == nil {
		return nil
	}
	return b.check(ctx, b.Lock)
}

// Close releases what Build opened: the lock and its provider, then what
// the backend's Provided.Close releases. It is safe to call more than
// once.
func (b *Built) Close() error {
	var errs []error
	for i := len(b.closers) - 1; i >= 0; i-- {
		errs = append(errs, b.closers[i]())
	}
	b.closers = nil
	return errors.Join(errs...)
}

// Build builds the lock cfg describes: memlock for provider memory, the
// Build of the backend given with WithBackends whose name it is (for
// redis, when none is given, redislockbuild.Backend{}), and a lock that
// grants everyone for provider disabled (L4).
// It registers the backends with cfg (cfg.WithBackends, keeping the
// sections Load decoded) and validates it first: a configuration without
// a provider is an error naming locking.provider and the choices (G6), a
// provider no backend serves one naming it and the providers linked. It
// contacts no server.
func Build(cfg config.LockingConfig, opts ...Option) (*Built, error) {
	be, cfg, err := resolve(cfg, opts)
	if err != nil {
		return nil, err
	}
	if be == nil {
		b := &Built{Kind: cfg.Provider}
		if !cfg.Coordinated() {
			b.Kind = config.ProviderDisabled
		} else {
			b.Provider = memlock.New()
		}
		return withLock(cfg, b)
	}
	p, err := be.Build(cfg)
	if err != nil {
		return nil, fmt.Errorf("lockbuild: provider %q: %w", string(cfg.Provider), err)
	}
	return built(cfg, p)
}

// built is the Built of a backend's Provided: its provider, close
// function, check and log fields, and the lock over the provider.
func built(cfg config.LockingConfig, p Provided) (*Built, error) {
	if p.Provider == nil {
		if p.Close != nil {
			_ = p.Close()
		}
		return nil, fmt.Errorf("lockbuild: provider %q: the backend built no provider", string(cfg.Provider))
	}
	b := &Built{Kind: cfg.Provider, Provider: p.Provider, check: p.Check, LogFields: p.LogFields}
	if p.Close != nil {
		b.closers = append(b.closers, p.Close)
	}
	return withLock(cfg, b)
}

// withLock makes the lock over b.Provider (none when disabled).
func withLock(cfg config.LockingConfig, b *Built) (*Built, error) {
	l, err := locking.New(b.Provider, cfg.Options())
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	b.Lock = l
	// The lock owns its provider (L10): closing it ends the provider's
	// subscriptions, before the client (or whatever the backend's close
	// function releases) closes.
	b.closers = append(b.closers, l.Close)
	return b, nil
}
