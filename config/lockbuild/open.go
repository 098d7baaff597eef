package lockbuild

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hostloom/hostloom/backends/redis/redislockbuild"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild/buildapi"
)

// DefaultOpenTimeout bounds Open's first contact when neither
// OpenOptions.Timeout nor the backend names a bound.
const DefaultOpenTimeout = buildapi.DefaultOpenTimeout

// OpenOptions configure Open and an Opener's Open (see
// buildapi.OpenOptions for each field).
type OpenOptions = buildapi.OpenOptions

// Opened is what an Opener returns (see buildapi.Opened for each field).
type Opened = buildapi.Opened

// Target describes where a lock lives, without a secret
// (buildapi.Target).
type Target = buildapi.Target

// Notes keeps short-lived notes beside a lock's keys (buildapi.Notes).
type Notes = buildapi.Notes

// UnreachableError is a first contact that failed for a cause other than
// the configuration (buildapi.UnreachableError).
type UnreachableError = buildapi.UnreachableError

// Unreachable words a failed first contact (buildapi.Unreachable).
func Unreachable(where string, timeout time.Duration, bound string, err error) *UnreachableError {
	return buildapi.Unreachable(where, timeout, bound, err)
}

// Bound is the timeout an Opener uses for its first contact and how an
// error names it (buildapi.Bound).
func Bound(o OpenOptions, own time.Duration, ownKey string) (time.Duration, string) {
	return buildapi.Bound(o, own, ownKey)
}

// Opener is implemented by a Backend that opens its lock for a
// short-lived command, such as a verb of the hostloom CLI: what it builds
// suits a few requests and an exit (a small pool, no retries of a refused
// dial), and it contacts the server once. Open uses it when the backend
// has it, and the backend's Build and start check otherwise.
type Opener interface {
	// Open builds what Build builds and contacts the server once within
	// o.Timeout (0: the backend's own connect timeout, else
	// DefaultOpenTimeout). A server that refuses the configuration
	// (credentials) is a *config.FieldError naming the key and its
	// source; one that does not answer is an *UnreachableError naming
	// where (addresses, never a secret) and the cause. On error nothing
	// stays open.
	Open(ctx context.Context, cfg config.LockingConfig, o OpenOptions) (Opened, error)
}

// Session is a lock Open opened for a short-lived command.
type Session struct {
	*Built
	// Timeout, Target, JobKeys and Notes are the Opened's.
	Timeout time.Duration
	Target  Target
	JobKeys func(ctx context.Context, prefix string) ([]string, error)
	Notes   Notes
}

// Open builds the lock cfg describes for a short-lived command and
// contacts its server once: through the backend's Opener when it has one,
// else through its Build and start check, bounded by o.Timeout (else
// DefaultOpenTimeout). Backends are given as for Build (WithBackends;
// redis by default). Provider memory and disabled have no server: Open
// builds them as Build does. Errors are Build's, a *config.FieldError for
// a configuration the server refuses, or an *UnreachableError.
func Open(ctx context.Context, cfg config.LockingConfig, o OpenOptions, opts ...Option) (*Session, error) {
	be, cfg, err := resolve(cfg, opts)
	if err != nil {
		return nil, err
	}
	op, ok := be.(Opener)
	if !ok {
		b, err := Build(cfg, opts...)
		if err != nil {
			return nil, err
		}
		timeout, from := Bound(o, 0, "")
		if b.HasCheck() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			err := b.Check(cctx)
			cancel()
			if err != nil {
				_ = b.Close()
				var fe *config.FieldError
				if errors.As(err, &fe) {
					return nil, err
				}
				return nil, Unreachable(string(cfg.Provider), timeout, from, err)
			}
		}
		return &Session{Built: b, Timeout: timeout}, nil
	}
	p, err := op.Open(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	b, err := built(cfg, p.Provided)
	if err != nil {
		return nil, err
	}
	return &Session{Built: b, Timeout: p.Timeout, Target: p.Target, JobKeys: p.JobKeys, Notes: p.Notes}, nil
}

// resolve registers the backends of opts with cfg, validates it and
// returns the backend of its provider (nil for memory and disabled).
func resolve(cfg config.LockingConfig, opts []Option) (Backend, config.LockingConfig, error) {
	var s settings
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	byName := map[config.ProviderName]Backend{}
	for _, be := range s.backends {
		name := be.Provider()
		if name == config.ProviderMemory || name == config.ProviderDisabled {
			return nil, cfg, fmt.Errorf("lockbuild: backend %q (%T): a provider Build knows itself", string(name), be)
		}
		if _, dup := byName[name]; dup {
			return nil, cfg, fmt.Errorf("lockbuild: backend %q given twice", string(name))
		}
		byName[name] = be
		cfg = cfg.WithBackends(be)
	}
	if _, given := byName[config.ProviderRedis]; !given {
		// The library module's own backend, linked by default: a client
		// built from locking.redis, nothing logged.
		byName[config.ProviderRedis] = redislockbuild.Backend{}
	}
	if err := cfg.Validate(); err != nil {
		return nil, cfg, err
	}
	if !cfg.Coordinated() || cfg.Provider == config.ProviderMemory {
		return nil, cfg, nil
	}
	be, ok := byName[cfg.Provider]
	if !ok {
		// Load knew the backend, but Build was not given it.
		return nil, cfg, &config.FieldError{Key: "locking.provider", Source: cfg.Source("locking.provider"),
			Reason: fmt.Sprintf("%q was loaded with its backend, which Build was not given (lockbuild.WithBackends)", string(cfg.Provider))}
	}
	return be, cfg, nil
}

// The library module's own backend opens for commands.
var _ Opener = redislockbuild.Backend{}
