package redislockbuild

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild/buildapi"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
)

// Backend is provider redis as a lockbuild.Backend (and config.Backend):
// the section locking.redis (Config) and a builder over a client built
// from it, or over Client. Its zero value builds its own client and logs
// nothing; it is what lockbuild.Build uses when it is given no backend
// named redis, and lockingfx.Module builds one with the graph's logger
// and client. Passing it explicitly replaces that default (it is not
// registered twice).
type Backend struct {
	// Client, when not nil, is used instead of a client built from
	// locking.redis; the caller keeps closing it and checking its
	// credentials (there is no start check for it). Default nil.
	Client redis.UniversalClient
	// Logger, when not nil, receives the start check's findings, and
	// go-redis's own log at Debug for a client the backend builds (through
	// redis.SetLogger, which is process-wide). Default nil: nothing is
	// logged.
	Logger *zap.Logger
}

// Provider returns Name, "redis".
func (Backend) Provider() config.ProviderName { return Name }

// Section returns the defaults of locking.redis, for config.Load to
// decode into.
func (Backend) Section() config.Section {
	d := Defaults()
	return &d
}

// Build makes the redislock provider over b.Client or a client built
// from the section (closed by Provided.Close). The start check
// (Provided.Check) of a client it built sends one PING, waiting at most
// dial_timeout + read_timeout: a refused authentication (WRONGPASS,
// NOAUTH) is a *config.FieldError naming locking.redis.password, logged
// once at Error (HostLoomLockAuthFailed, with the user, never the
// password); any other failure is an outage, logged once at Warn
// (HostLoomLockUnreachable). With min_replicas, the check also warns
// (HostLoomMinReplicasUnmet) when the server has fewer replicas.
func (b Backend) Build(cfg config.LockingConfig) (buildapi.Provided, error) {
	r := SectionOf(cfg)
	log := b.Logger
	if log == nil {
		log = zap.NewNop()
	}
	client := b.Client
	var closeFn func() error
	if client == nil {
		c, err := r.NewClient()
		if err != nil {
			return buildapi.Provided{}, err
		}
		client, closeFn = c, c.Close
		if b.Logger != nil {
			redis.SetLogger(NewRedisLogger(b.Logger))
		}
	}
	rp, err := redislock.NewWithOptions(client, r.ProviderOptions())
	if err != nil {
		if closeFn != nil {
			_ = closeFn()
		}
		return buildapi.Provided{}, err
	}
	fields := []zap.Field{zap.Bool("app_client", b.Client != nil)}
	if b.Client == nil {
		fields = append(fields, zap.Object("redis", r))
	}
	p := buildapi.Provided{Provider: rp, Close: closeFn, LogFields: fields}
	built := b.Client == nil
	if built || rp.MinReplicas() > 0 {
		p.Check = func(ctx context.Context, l *locking.DistributedLock) error {
			if built {
				if err := checkClient(ctx, client, r, cfg, log); err != nil {
					return err
				}
			}
			if rp.MinReplicas() > 0 {
				checkReplicas(ctx, rp, l, r, cfg, log)
			}
			return nil
		}
	}
	return p, nil
}

// checkClient sends one PING through the client Build built. A refused
// authentication is a *config.FieldError: the configuration names
// credentials the server does not accept, and retrying cannot help. Any
// other failure is an outage the electors ride out (E7), returned as it
// is after a Warn.
func checkClient(ctx context.Context, c redis.UniversalClient, r Config, cfg config.LockingConfig, log *zap.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, r.DialTimeout+r.ReadTimeout)
	defer cancel()
	err := c.Ping(ctx).Err()
	switch {
	case err == nil:
		return nil
	case redis.IsAuthError(err):
		user := r.Username
		if user == "" {
			user = "default"
		}
		reason := fmt.Sprintf("the server refused the credentials of user %q: %s", user, authReply(err))
		if r.MasterName != "" {
			reason += " (with master_name set, check sentinel_username and sentinel_password too)"
		}
		fe := &config.FieldError{Key: "locking.redis.password", Source: cfg.Source("locking.redis.password"), Reason: reason}
		log.Error("HostLoomLockAuthFailed", zap.String("user", user), zap.Strings("addrs", r.Addrs),
			zap.String("key", fe.Key), zap.String("source", fe.Source), zap.String("reply", authReply(err)))
		return fe
	default:
		log.Warn("HostLoomLockUnreachable", zap.Strings("addrs", r.Addrs), zap.Error(err))
		return err
	}
}

// checkReplicas warns once at start when the server has fewer replicas
// than locking.redis.min_replicas (Q2): no acquisition or renewal is then
// acknowledged, so nobody can lead. On Cluster it asks the master of the
// namespace's keys (all of them with use_hash_tags). A server it cannot
// ask is left to the electors' outage log.
func checkReplicas(ctx context.Context, rp *redislock.Provider, l *locking.DistributedLock, r Config, cfg config.LockingConfig, log *zap.Logger) {
	key, err := l.ProviderKey("leader")
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.DialTimeout+r.ReadTimeout)
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

// RedisLogger writes go-redis's internal log (dial failures, pool and
// Sentinel messages) to a zap logger at Debug, message RedisClientLog.
// Build installs one when it builds the client and has a Logger; for a
// client of the app's own, install it the same way:
//
//	redis.SetLogger(redislockbuild.NewRedisLogger(logger))
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
