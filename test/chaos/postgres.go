//go:build unix

package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/core/locking/pglock"
	"github.com/hostloom/hostloom/core/testing/pgtest"
)

// Fault kinds of a PostgreSQL run (Config.Postgres). PostgreSQL keeps its
// data across each of them, so none loses a lease: they make the server
// unavailable, and the electors must ride that out.
const (
	// FaultPostgresRestartFast stops the server with a fast shutdown
	// (every session ended, a checkpoint) and starts it again at once.
	FaultPostgresRestartFast FaultKind = "postgres-restart-fast"
	// FaultPostgresRestartImmediate stops it with an immediate shutdown
	// (no checkpoint: the next start runs crash recovery) and starts it
	// again at once.
	FaultPostgresRestartImmediate FaultKind = "postgres-restart-immediate"
	// FaultPostgresDown kills the server process (SIGKILL) and keeps it
	// down for longer than the lease: an outage.
	FaultPostgresDown FaultKind = "postgres-down"
)

// PostgresFaults are the fault kinds of a run over PostgreSQL: the
// replica faults, the server's restarts and outage, and the link faults
// through each replica's proxy.
var PostgresFaults = []FaultKind{
	FaultKill, FaultPause, FaultPostgresRestartFast, FaultPostgresRestartImmediate, FaultPostgresDown,
	FaultBlackhole, FaultDelay, FaultReset, FaultLoad, FaultHandOver, FaultRestart,
}

// ErrNoPostgres is wrapped by Run's error when a PostgreSQL run cannot
// start its server (no initdb or postgres binary).
var ErrNoPostgres = errors.New("chaos: PostgreSQL did not start")

// postgresBackend is the server of a PostgreSQL run and a pool of the
// harness's own, straight to it (not through a proxy), for holder lookups.
type postgresBackend struct {
	srv  *pgtest.Server
	pool *pgxpool.Pool
}

func startPostgres() (*postgresBackend, error) {
	srv, err := pgtest.Start()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoPostgres, err)
	}
	pc, err := pgxpool.ParseConfig(srv.ConnString("postgres") + " connect_timeout=1")
	if err != nil {
		srv.Stop()
		return nil, err
	}
	pc.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		srv.Stop()
		return nil, err
	}
	// Create the tables before the replicas race to.
	p, err := pglock.New(pool, pglock.Options{})
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err = p.Keys(ctx, Namespace+":")
		cancel()
		_ = p.Close()
	}
	if err != nil {
		pool.Close()
		srv.Stop()
		return nil, fmt.Errorf("chaos: prepare the PostgreSQL tables: %w", err)
	}
	return &postgresBackend{srv: srv, pool: pool}, nil
}

// addr is the server's host:port.
func (b *postgresBackend) addr() string { return fmt.Sprintf("127.0.0.1:%d", b.srv.Port()) }

// holderValue reads the ownership record of a live lease on key.
func (b *postgresBackend) holderValue(ctx context.Context, key string) (string, bool) {
	var v string
	err := b.pool.QueryRow(ctx, `SELECT value FROM `+pgx.Identifier{pglock.DefaultTable}.Sanitize()+
		` WHERE key = $1 AND value IS NOT NULL AND expires_at > clock_timestamp()`, key).Scan(&v)
	return v, err == nil
}

func (b *postgresBackend) stop() {
	b.pool.Close()
	b.srv.Stop()
}

// postgresFault injects one of the PostgreSQL server's faults.
func (r *run) postgresFault(ctx context.Context, f *Fault) error {
	f.Unavailable = true
	f.Start = time.Now()
	var err error
	switch f.Kind {
	case FaultPostgresRestartFast, FaultPostgresRestartImmediate:
		mode := pgtest.ShutdownFast
		if f.Kind == FaultPostgresRestartImmediate {
			mode = pgtest.ShutdownImmediate
		}
		if err = r.pg.srv.Shutdown(mode); err == nil {
			err = r.pg.srv.Restart()
		}
	case FaultPostgresDown:
		d := r.longerThanLease()
		f.Detail = fmt.Sprintf("down %v", d.Round(time.Millisecond))
		if err = r.pg.srv.Shutdown(pgtest.ShutdownKill); err == nil {
			sleep(ctx, d)
			err = r.pg.srv.Restart()
		}
	default:
		return fmt.Errorf("not a PostgreSQL fault: %q", f.Kind)
	}
	f.Heal = time.Now()
	if err != nil {
		return fmt.Errorf("%s: %w (server log: %s)", f.Kind, err, strings.TrimSpace(r.pg.srv.Log()))
	}
	return nil
}
