package lockingfx

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
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

	// Client is the app's own Redis client, used by provider redis instead
	// of building one from Config.Redis. The app keeps closing it, and
	// checking its credentials. Optional.
	Client redis.UniversalClient `optional:"true"`

	// Logger receives one Info line describing the lock (passwords
	// redacted), the Warn of the memory provider, the start check of a
	// client New built, and that client's go-redis log at Debug. Optional:
	// without it New logs nothing.
	Logger *zap.Logger `optional:"true"`

	// Providers are the providers of other modules (WithProvider), by
	// locking.provider name.
	Providers []NamedProvider `group:"hostloom.lock_providers"`
}

// LockResult is what New provides.
type LockResult struct {
	fx.Out

	// Lock is the lock electors and schedulers use.
	Lock locking.Lock
	// DistributedLock is the same lock with its limits, holder lookup and
	// state store.
	DistributedLock *locking.DistributedLock
	// Provider is the backend: *memlock.Provider, *redislock.Provider or
	// the provider of another module's WithProvider (pglockfx.Module's
	// for PostgreSQL); nil when coordination is disabled.
	Provider locking.Provider
}

// New builds the lock with lockbuild.Build and closes what it opened when
// the app stops.
//
// With provider memory it logs HostLoomLockMemory once at Warn: that lock
// coordinates the electors of this process only (G6).
//
// When it builds the Redis client itself (the graph has none), it routes
// go-redis's log to Logger at Debug (redis.SetLogger, process-wide) and
// checks the client with one PING at start, waiting at most dial_timeout +
// read_timeout. A refused authentication (WRONGPASS, NOAUTH) is a
// configuration error: logged once at Error (HostLoomLockAuthFailed, with
// the user, never the password) and returned, so start fails naming
// locking.redis.password and its source. Any other failure leaves the app
// running (E7): it is logged once at Warn (HostLoomLockUnreachable) and
// the electors apply their outage policy until the server answers.
func New(p LockParams) (LockResult, error) {
	cfg := p.Config
	opts := []lockbuild.Option{lockbuild.WithRedisClient(p.Client)}
	for _, np := range p.Providers {
		opts = append(opts, lockbuild.WithProvider(np.Name, np.Build))
	}
	b, err := lockbuild.Build(cfg, opts...)
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
	if b.Kind == config.ProviderRedis {
		fields = append(fields, zap.Bool("app_client", p.Client != nil))
		if p.Client == nil {
			fields = append(fields, zap.Object("redis", cfg.Redis))
		}
	}
	log.Info("HostLoomLock", fields...)
	if b.Kind == config.ProviderMemory {
		log.Warn("HostLoomLockMemory", zap.String("coordinates", "the electors of this process only"),
			zap.String("source", cfg.Source("locking.provider")))
	}
	built := b.Kind == config.ProviderRedis && p.Client == nil
	if built && p.Logger != nil {
		redis.SetLogger(NewRedisLogger(p.Logger))
	}
	if p.Lifecycle != nil {
		var start func(context.Context) error
		rp, _ := b.Provider.(*redislock.Provider)
		if built || (rp != nil && rp.MinReplicas() > 0) {
			start = func(ctx context.Context) error {
				if built {
					if err := checkClient(ctx, b.Client, cfg, log); err != nil {
						// fx runs no OnStop for a hook whose OnStart failed.
						return errors.Join(err, b.Close())
					}
				}
				if rp != nil && rp.MinReplicas() > 0 {
					checkReplicas(ctx, rp, b.Lock, cfg, log)
				}
				return nil
			}
		}
		p.Lifecycle.Append(fx.Hook{OnStart: start, OnStop: func(context.Context) error { return b.Close() }})
	}
	return LockResult{Lock: b.Lock, DistributedLock: b.Lock, Provider: b.Provider}, nil
}

// checkClient sends one PING through the client New built. Only a refused
// authentication is an error: the configuration names credentials the
// server does not accept, and retrying cannot help. An unreachable server
// is an outage the electors ride out (E7).
func checkClient(ctx context.Context, c redis.UniversalClient, cfg config.LockingConfig, log *zap.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.Redis.DialTimeout+cfg.Redis.ReadTimeout)
	defer cancel()
	err := c.Ping(ctx).Err()
	switch {
	case err == nil:
		return nil
	case redis.IsAuthError(err):
		user := cfg.Redis.Username
		if user == "" {
			user = "default"
		}
		reason := fmt.Sprintf("the server refused the credentials of user %q: %s", user, authReply(err))
		if cfg.Redis.MasterName != "" {
			reason += " (with master_name set, check sentinel_username and sentinel_password too)"
		}
		fe := &config.FieldError{Key: "locking.redis.password", Source: cfg.Source("locking.redis.password"), Reason: reason}
		log.Error("HostLoomLockAuthFailed", zap.String("user", user), zap.Strings("addrs", cfg.Redis.Addrs),
			zap.String("key", fe.Key), zap.String("source", fe.Source), zap.String("reply", authReply(err)))
		return fe
	default:
		log.Warn("HostLoomLockUnreachable", zap.Strings("addrs", cfg.Redis.Addrs), zap.Error(err))
		return nil
	}
}

// checkReplicas warns once at start when the server has fewer replicas
// than locking.redis.min_replicas (Q2): no acquisition or renewal is then
// acknowledged, so nobody can lead. On Cluster it asks the master of the
// namespace's keys (all of them with use_hash_tags). A server it cannot
// ask is left to the electors' outage log.
func checkReplicas(ctx context.Context, rp *redislock.Provider, l *locking.DistributedLock, cfg config.LockingConfig, log *zap.Logger) {
	key, err := l.ProviderKey("leader")
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Redis.DialTimeout+cfg.Redis.ReadTimeout)
	defer cancel()
	n, err := rp.ReplicasConnected(ctx, key)
	if err != nil || n >= rp.MinReplicas() {
		return
	}
	log.Warn("HostLoomMinReplicasUnmet", zap.String("key", "locking.redis.min_replicas"),
		zap.String("source", cfg.Source("locking.redis.min_replicas")),
		zap.Int("min_replicas", rp.MinReplicas()), zap.Int("replicas", n),
		zap.String("consequence", "no acquisition or renewal is acknowledged by enough replicas: nobody can lead until they connect"))
}

// authReply is the server's error code and text (WRONGPASS invalid
// username-password pair…). Redis never echoes the password in it.
func authReply(err error) string {
	var re redis.Error
	if errors.As(err, &re) {
		return strings.TrimSpace(re.Error())
	}
	return err.Error()
}

// Built is what Build returns (lockbuild.Built).
type Built = lockbuild.Built

// Build builds the lock cfg describes, without fx, over client when it is
// not nil: lockbuild.Build(cfg, lockbuild.WithRedisClient(client)).
//
// Deprecated: use lockbuild.Build, which lives in a package without fx
// and takes the providers of other modules (lockbuild.WithProvider).
func Build(cfg config.LockingConfig, client redis.UniversalClient) (*Built, error) {
	var opts []lockbuild.Option
	if client != nil {
		opts = append(opts, lockbuild.WithRedisClient(client))
	}
	return lockbuild.Build(cfg, opts...)
}

// ProviderGroup is the fx value group of the lockbuild.Provider values New
// passes to lockbuild.Build (see WithProvider).
const ProviderGroup = "hostloom.lock_providers"

// WithProvider adds to the graph the provider of another module for
// locking.provider name (lockbuild.WithProvider): New builds the lock with
// build when the configuration names it. A module with a backend of its
// own (PostgreSQL, say) exports an fx option built with it.
func WithProvider(name config.ProviderName, build lockbuild.ProviderFunc) fx.Option {
	return fx.Supply(fx.Annotated{Group: ProviderGroup, Target: NamedProvider{Name: name, Build: build}})
}

// NamedProvider is one value of ProviderGroup: a lockbuild.ProviderFunc
// and the locking.provider name it serves.
type NamedProvider struct {
	Name  config.ProviderName
	Build lockbuild.ProviderFunc
}

// RedisLogger writes go-redis's internal log (dial failures, pool and
// Sentinel messages) to a zap logger at Debug, message RedisClientLog.
// New installs one when it builds the client; for a client of the app's
// own, install it the same way:
//
//	redis.SetLogger(lockingfx.NewRedisLogger(logger))
//
// redis.SetLogger is process-wide: the last logger installed receives the
// log of every go-redis client in the process.
type RedisLogger struct {
	log *zap.Logger
}

// NewRedisLogger returns a RedisLogger writing to log (zap.NewNop when
// nil).
func NewRedisLogger(log *zap.Logger) *RedisLogger {
	if log == nil {
		log = zap.NewNop()
	}
	return &RedisLogger{log: log.WithOptions(zap.AddCallerSkip(1))}
}

// Printf implements go-redis's logging interface.
func (l *RedisLogger) Printf(_ context.Context, format string, v ...any) {
	if ce := l.log.Check(zap.DebugLevel, "RedisClientLog"); ce != nil {
		ce.Write(zap.String("message", fmt.Sprintf(format, v...)))
	}
}
