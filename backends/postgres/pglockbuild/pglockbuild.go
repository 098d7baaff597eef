package pglockbuild

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

// DefaultConnectTimeout bounds Check when the DSN sets no
// connect_timeout.
const DefaultConnectTimeout = 10 * time.Second

// Options returns the pglock options the section describes.
func Options(c Config) pglock.Options {
	return pglock.Options{
		Table:                c.Table,
		Schema:               c.Schema,
		ExternalSchema:       c.ExternalSchema,
		DisableNotifications: !c.Notifications,
	}
}

// PoolConfig parses locking.postgres.dsn and applies max_conns. An
// unset or unparsable DSN is a *config.FieldError naming
// locking.postgres.dsn and its source; the reason never quotes the DSN.
func PoolConfig(cfg config.LockingConfig) (*pgxpool.Config, error) {
	pg := SectionOf(cfg)
	src := cfg.Source("locking.postgres.dsn")
	if !pg.DSN.IsSet() {
		return nil, &config.FieldError{Key: "locking.postgres.dsn", Source: src,
			Reason: "provider postgres needs a connection string (or a *pgxpool.Pool from the app)"}
	}
	pc, err := pgxpool.ParseConfig(pg.DSN.Value())
	if err != nil {
		return nil, &config.FieldError{Key: "locking.postgres.dsn", Source: src,
			Reason: "does not parse as a postgres:// URL or key=value connection string: " + parseReason(err, pg.DSN.Value())}
	}
	if pg.MaxConns > 0 {
		pc.MaxConns = int32(min(pg.MaxConns, 1<<31-1))
	}
	return pc, nil
}

// parseReason is what pgx says is wrong with a DSN, without the DSN: pgx
// quotes it (its password masked on a best-effort basis), and its inner
// errors (net/url's) may quote it whole. It keeps pgx's reason and, when
// it quotes nothing of the string, the inner error.
func parseReason(err error, dsn string) string {
	msg := err.Error()
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		// "cannot parse `<dsn>`: <reason> (<inner error>)"
		if i := strings.LastIndex(msg, "`: "); i >= 0 {
			msg = msg[i+len("`: "):]
		}
	}
	safe := func(s string) bool {
		return s != "" && !strings.Contains(s, dsn) && !strings.ContainsAny(s, "`@") &&
			!strings.Contains(s, "://") && !strings.Contains(s, "password")
	}
	if safe(msg) {
		return msg
	}
	if i := strings.Index(msg, " ("); i >= 0 && safe(msg[:i]) {
		return msg[:i]
	}
	return "check its syntax"
}

// NewPool makes the pool locking.postgres describes (PoolConfig) and the
// provider over it (its ForLock view, so the lock reports what the
// configuration enables), and the function that closes the pool. It does
// not connect.
func NewPool(cfg config.LockingConfig) (*pgxpool.Pool, locking.Provider, func() error, error) {
	pc, err := PoolConfig(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pglockbuild: pool: %w", err)
	}
	prov, err := pglock.New(pool, Options(SectionOf(cfg)))
	if err != nil {
		pool.Close()
		return nil, nil, nil, &config.FieldError{Key: "locking.postgres", Source: cfg.Source("locking.postgres"), Reason: err.Error()}
	}
	return pool, prov.ForLock(), func() error { pool.Close(); return nil }, nil
}

// Backend is provider postgres as a lockbuild.Backend (and
// config.Backend): the section locking.postgres (Config) and a builder
// over a pool built from locking.postgres.dsn, or over Pool. Its zero
// value builds its own pool and logs nothing.
type Backend struct {
	// Pool, when not nil, is used instead of a pool built from
	// locking.postgres.dsn and max_conns; the caller keeps closing it and
	// checking its credentials (there is no start check for it). Default
	// nil.
	Pool *pgxpool.Pool
	// Logger, when not nil, receives one HostLoomLockPostgres line at
	// Build (the DSN redacted) and the start check's findings. Default
	// nil: nothing is logged.
	Logger *zap.Logger
}

var _ lockbuild.Backend = Backend{}

// Provider returns Name, "postgres".
func (Backend) Provider() config.ProviderName { return Name }

// Section returns the defaults of locking.postgres, for config.Load to
// decode into.
func (Backend) Section() config.Section {
	d := Defaults()
	return &d
}

// Build makes the pglock provider (its ForLock view, so the lock reports
// what the configuration enables) over b.Pool, or over a pool built from
// the section (PoolConfig) and closed by Provided.Close. It does not
// connect. The start check (Provided.Check) of a pool it built is Check:
// a *config.FieldError is logged once at Error
// (HostLoomLockConfigRefused), an outage once at Warn
// (HostLoomLockUnreachable, with the cause).
func (b Backend) Build(cfg config.LockingConfig) (lockbuild.Provided, error) {
	log := b.Logger
	if log == nil {
		log = zap.NewNop()
	}
	pg := SectionOf(cfg)
	if b.Pool != nil {
		prov, err := pglock.New(b.Pool, Options(pg))
		if err != nil {
			return lockbuild.Provided{}, fmt.Errorf("pglockbuild: %w", err)
		}
		log.Info("HostLoomLockPostgres", zap.Bool("app_pool", true), zap.Object("postgres", pg))
		return lockbuild.Provided{Provider: prov.ForLock()}, nil
	}
	pool, prov, closeFn, err := NewPool(cfg)
	if err != nil {
		return lockbuild.Provided{}, err
	}
	log.Info("HostLoomLockPostgres", zap.Bool("app_pool", false), zap.Object("postgres", pg))
	check := func(ctx context.Context, _ *locking.DistributedLock) error {
		err := Check(ctx, pool, prov, cfg)
		var fe *config.FieldError
		switch {
		case err == nil:
		case errors.As(err, &fe):
			log.Error("HostLoomLockConfigRefused", zap.String("key", fe.Key), zap.String("source", fe.Source), zap.String("reason", fe.Reason))
		default:
			log.Warn("HostLoomLockUnreachable", zap.String("provider", string(Name)),
				zap.String("host", pool.Config().ConnConfig.Host), zap.Uint16("port", pool.Config().ConnConfig.Port),
				zap.String("cause", err.Error()))
		}
		return err
	}
	return lockbuild.Provided{Provider: prov, Close: closeFn, Check: check}, nil
}

// Check connects once through pool and reads the lease table through
// prov (creating the tables unless locking.postgres.external_schema), bounded by the DSN's
// connect_timeout or DefaultConnectTimeout. A refusal that retrying cannot
// cure is a *config.FieldError: credentials refused or no such database
// names locking.postgres.dsn; a table the role may not create or read, or
// whose columns do not match, names locking.postgres.table. Any other
// error is an outage, returned as it is.
func Check(ctx context.Context, pool *pgxpool.Pool, prov locking.Provider, cfg config.LockingConfig) error {
	timeout := pool.Config().ConnConfig.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cc := pool.Config().ConnConfig
	if err := pool.Ping(ctx); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "28") || pe.Code == "3D000") {
			return &config.FieldError{Key: "locking.postgres.dsn", Source: cfg.Source("locking.postgres.dsn"),
				Reason: fmt.Sprintf("the server %s:%d refused user %q, database %q: %s (SQLSTATE %s)", cc.Host, cc.Port, cc.User, cc.Database, pe.Message, pe.Code)}
		}
		return err
	}
	// Every pglock provider (and its ForLock view) reads state.
	st, ok := prov.(interface {
		State(ctx context.Context, key string) (int64, bool, error)
	})
	if !ok {
		return nil
	}
	if _, _, err := st.State(ctx, "hostloom:start-check"); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) || errors.Is(err, locking.ErrUnauthorized) {
			return &config.FieldError{Key: "locking.postgres.table", Source: cfg.Source("locking.postgres.table"), Reason: err.Error()}
		}
		return err
	}
	return nil
}
