package pglockbuild

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

var _ lockbuild.Opener = Backend{}

// Open implements lockbuild.Opener: a pool of at most two connections
// built from locking.postgres.dsn, whose connect timeout is o.Timeout
// (else the DSN's connect_timeout, else lockbuild.DefaultOpenTimeout),
// checked with Check (which also creates the tables on a fresh database
// unless external_schema). A refusal Check reports is a
// *config.FieldError; any other failure a *lockbuild.UnreachableError
// naming host and port, never the DSN. With Pool set, Open is Build over
// the app's pool, unchecked.
func (b Backend) Open(ctx context.Context, cfg config.LockingConfig, o lockbuild.OpenOptions) (lockbuild.Opened, error) {
	pg := SectionOf(cfg)
	if b.Pool != nil {
		p, err := b.Build(cfg)
		if err != nil {
			return lockbuild.Opened{}, err
		}
		timeout, _ := lockbuild.Bound(o, b.Pool.Config().ConnConfig.ConnectTimeout, "")
		return lockbuild.Opened{Provided: p, Timeout: timeout, Target: target(b.Pool.Config(), pg)}, nil
	}
	pc, err := PoolConfig(cfg)
	if err != nil {
		return lockbuild.Opened{}, err
	}
	pc.MaxConns = min(pc.MaxConns, 2)
	timeout, bound := lockbuild.Bound(o, pc.ConnConfig.ConnectTimeout, "the DSN's connect_timeout")
	pc.ConnConfig.ConnectTimeout = timeout
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return lockbuild.Opened{}, fmt.Errorf("postgres: %w", err)
	}
	po := Options(pg)
	po.AuthAdvice = DSNAdvice(cfg)
	prov, err := pglock.New(pool, po)
	if err != nil {
		pool.Close()
		return lockbuild.Opened{}, &config.FieldError{Key: "locking.postgres", Source: cfg.Source("locking.postgres"), Reason: err.Error()}
	}
	if err := Check(ctx, pool, prov, cfg); err != nil {
		_ = prov.Close()
		pool.Close()
		var fe *config.FieldError
		if errors.As(err, &fe) {
			return lockbuild.Opened{}, err
		}
		where := fmt.Sprintf("postgres %s:%d", pc.ConnConfig.Host, pc.ConnConfig.Port)
		return lockbuild.Opened{}, lockbuild.Unreachable(where, timeout, bound, err)
	}
	return lockbuild.Opened{
		Provided: lockbuild.Provided{Provider: prov.ForLock(), Close: func() error { pool.Close(); return nil }},
		Timeout:  timeout,
		Target:   target(pool.Config(), pg),
		JobKeys:  prov.JobKeys,
	}, nil
}

// target is where a pool connects, without the password.
func target(pc *pgxpool.Config, pg Config) lockbuild.Target {
	cc := pc.ConnConfig
	return lockbuild.Target{
		Addrs:       []string{net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))},
		Username:    cc.User,
		PasswordSet: cc.Password != "",
		Database:    cc.Database,
		Table:       pg.qualifiedTable(),
	}
}

// qualifiedTable is schema.table as written (the table alone without a
// schema), as pglock.Provider.Table reports it.
func (p Config) qualifiedTable() string {
	if p.Schema != "" {
		return p.Schema + "." + p.Table
	}
	return p.Table
}
