package pglock_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

// A role that may not create the tables gets an error that says so, names
// the table and matches locking.ErrUnauthorized (a configuration error,
// not an outage).
func TestTable_D1_NoPrivilegeIsAConfigurationError(t *testing.T) {
	dsn := pg.NewDatabase(t)
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `DROP ROLE IF EXISTS pglock_nopriv; CREATE ROLE pglock_nopriv LOGIN; REVOKE CREATE ON SCHEMA public FROM PUBLIC`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP OWNED BY pglock_nopriv; DROP ROLE pglock_nopriv"); err != nil {
			t.Error(err)
		}
		admin.Close()
	})
	pool, err := pgxpool.New(ctx, strings.Replace(dsn, "user=postgres", "user=pglock_nopriv", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	l, _ := newLock(t, pool, pglock.Options{}, "")
	_, err = l.TryAcquire(ctx, "job", time.Minute)
	if !errors.Is(err, locking.ErrUnauthorized) || !strings.Contains(err.Error(), "hostloom_locks") || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("TryAcquire without CREATE privilege = %v; want ErrUnauthorized naming the table", err)
	}
}

// proxy forwards TCP connections to target until cut, which closes every
// connection and refuses new ones (a lost link).
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	cut    bool
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				_ = c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				_ = c.Close()
				continue
			}
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Go(func() { _, _ = io.Copy(up, c); _ = up.Close() })
			p.wg.Go(func() { _, _ = io.Copy(c, up); _ = c.Close() })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		p.sever()
		p.wg.Wait()
	})
	return p
}

// sever closes every connection and refuses new ones.
func (p *proxy) sever() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *proxy) port() string {
	_, port, _ := net.SplitHostPort(p.ln.Addr().String())
	return port
}

// E5, D1: a leader whose link to the database is lost ends its term at its
// local deadline, never later: nothing waits on the dead connection.
func TestElector_E5_LostConnectionEndsTheTermAtItsDeadline(t *testing.T) {
	dsn := pg.NewDatabase(t)
	ctx := context.Background()
	// Create the tables directly, so the elector's first attempt is quick.
	direct, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	warm, _ := newLock(t, direct, pglock.Options{}, "test")
	if _, err := warm.Inspect(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	port := "port=" + strconv.Itoa(pg.Server(t).Port())
	px := startProxy(t, "127.0.0.1:"+strconv.Itoa(pg.Server(t).Port()))
	pool, err := pgxpool.New(ctx, strings.Replace(dsn, port, "port="+px.port(), 1))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	l, _ := newLock(t, pool, pglock.Options{}, "test")
	o := pgOpts()
	e, err := leadership.NewElector("billing", l, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Stop(context.Background()) }()
	wctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	if err := e.WaitForLeadership(wctx); err != nil {
		t.Fatal(err)
	}
	tok := e.Token()
	px.sever()
	cut := time.Now()
	select {
	case <-tok.Done():
	case <-time.After(waitFor):
		t.Fatal("the term outlived the lost connection")
	}
	took := time.Since(cut)
	t.Logf("term ended %v after the link was cut", took)
	// The term cannot outlive its lease (plus scheduling slack on a
	// shared machine); it may end sooner, when a renewal fails at once.
	if took > o.Lease+500*time.Millisecond {
		t.Fatalf("the term ended %v after the link was cut, past its lease of %v", took, o.Lease)
	}
	if e.IsLeader() {
		t.Fatal("IsLeader after the term ended")
	}
}

// TestProvider_O4_PreparationOutlivesShortDeadlines: the first use creates
// the tables on a context of its own, so a caller whose short deadline
// ends while the creation waits (here for another session's lock on the
// creation) returns its deadline, and the creation still completes, with
// no further call, once it can.
func TestProvider_O4_PreparationOutlivesShortDeadlines(t *testing.T) {
	pool := newDB(t)
	p := newProvider(t, pool, pglock.Options{})
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// The lock the creation takes first (see the schema SQL).
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('hostloom:' || 'hostloom_locks'))`); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = p.Acquire(short, locking.AcquireRequest{Key: "k", Value: "v", TTL: time.Second})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire while the creation waits = %v, want its deadline", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var exists bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass('hostloom_locks') IS NOT NULL`).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if exists {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tables were not created after the caller's deadline ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := p.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "v", TTL: time.Second}); err != nil {
		t.Fatalf("acquire once the tables exist: %v", err)
	}
}
