package pglockbuild

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

// DefaultConnectTimeout bounds Check when the DSN sets no
// connect_timeout.
const DefaultConnectTimeout = 10 * time.Second

// Options returns the pglock options the section describes.
func Options(c config.PostgresConfig) pglock.Options {
	return pglock.Options{
		Table:                c.Table,
		Schema:               c.Schema,
		ExternalSchema:       c.ExternalSchema,
		DisableNotifications: !c.Notifications,
	}
}

// DSNAdvice is what a refusal by the server advises over a pool built
// from locking.postgres.dsn: the key and where its value came from
// (pglock.Options.AuthAdvice). A pool the app gives (WithPool) keeps
// pglock's advice, about the app's pool: the DSN is not used then.
func DSNAdvice(cfg config.LockingConfig) string {
	return fmt.Sprintf("check locking.postgres.dsn (%s): the user, its password and the database; and the user's privileges on the tables",
		cfg.Source("locking.postgres.dsn"))
}

// PoolConfig parses locking.postgres.dsn and applies max_conns. An
// unset or unparsable DSN is a *config.FieldError naming
// locking.postgres.dsn and its source; the reason never quotes the DSN.
func PoolConfig(cfg config.LockingConfig) (*pgxpool.Config, error) {
	pg := cfg.Postgres
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
	o := Options(cfg.Postgres)
	o.AuthAdvice = DSNAdvice(cfg)
	prov, err := pglock.New(pool, o)
	if err != nil {
		pool.Close()
		return nil, nil, nil, &config.FieldError{Key: "locking.postgres", Source: cfg.Source("locking.postgres"), Reason: err.Error()}
	}
	return pool, prov.ForLock(), func() error { pool.Close(); return nil }, nil
}

// Build is the lockbuild.ProviderFunc of provider postgres over a pool
// built from locking.postgres.dsn (PoolConfig), closed by the close
// function it returns. It does not connect; Check does.
func Build(cfg config.LockingConfig) (locking.Provider, func() error, error) {
	_, prov, closeFn, err := NewPool(cfg)
	return prov, closeFn, err
}

// WithPool returns the lockbuild.ProviderFunc of provider postgres over
// the caller's pool, which the caller keeps closing (the function returns
// no close function for it); locking.postgres.dsn and max_conns are not
// used.
func WithPool(pool *pgxpool.Pool) lockbuild.ProviderFunc {
	return func(cfg config.LockingConfig) (locking.Provider, func() error, error) {
		prov, err := pglock.New(pool, Options(cfg.Postgres))
		if err != nil {
			return nil, nil, fmt.Errorf("pglockbuild: %w", err)
		}
		return prov.ForLock(), nil, nil
	}
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
