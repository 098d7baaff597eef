package pglockfx_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/backends/postgres/pglockbuild"
	"github.com/hostloom/hostloom/backends/postgres/pglockfx"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/configfx"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
)

// app is an fx app with one role over the environment env.
func app(t *testing.T, env []string, extra ...fx.Option) (*fx.App, *observer.ObservedLogs, *leadershipfx.Health) {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	var h *leadershipfx.Health
	opts := append([]fx.Option{
		fx.NopLogger,
		fx.Supply(zap.New(core)),
		configfx.Module("", config.WithEnviron(append([]string{
			"HOSTLOOM_LOCKING__PROVIDER=postgres",
			"HOSTLOOM_LEADERSHIP__LEASE=2s",
			"HOSTLOOM_LEADERSHIP__RENEW_INTERVAL=500ms",
			"HOSTLOOM_LEADERSHIP__RETRY_INTERVAL=200ms",
		}, env...))),
		lockingfx.Module,
		pglockfx.Module,
		leadershipfx.Role("billing"),
		fx.Populate(&h),
		leadershipfx.Module,
	}, extra...)
	return fx.New(opts...), logs, h
}

func leads(t *testing.T, h *leadershipfx.Health) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, e := range h.Electors() {
		if err := e.WaitForLeadership(ctx); err != nil {
			t.Fatalf("role %s never led: %v", e.Role(), err)
		}
	}
	if len(h.Electors()) == 0 {
		t.Fatal("no electors")
	}
}

func noSecret(t *testing.T, where, s string) {
	t.Helper()
	if strings.Contains(s, secretPassword) {
		t.Errorf("%s shows the password: %s", where, s)
	}
}

func allLogs(logs *observer.ObservedLogs) string {
	var b strings.Builder
	for _, e := range logs.All() {
		fmt.Fprintf(&b, "%s %v\n", e.Message, e.ContextMap())
	}
	return b.String()
}

// Provider postgres with nothing but the DSN: the role leads, the pool is
// built and closed by the app, and the log describes the section without
// the password.
func TestModule_D1_LeadsWithOnlyProviderAndDSN(t *testing.T) {
	db := newDatabase(t)
	a, logs, h := app(t, []string{"HOSTLOOM_LOCKING__POSTGRES__DSN=" + urlDSN("postgres", db)})
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	leads(t, h)
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if logs.FilterMessage("HostLoomLockPostgres").Len() != 1 {
		t.Errorf("want one HostLoomLockPostgres line:\n%s", allLogs(logs))
	}
	if logs.FilterMessage("HostLoomLockUnreachable").Len() != 0 {
		t.Errorf("reachable server reported unreachable:\n%s", allLogs(logs))
	}
	noSecret(t, "the log", allLogs(logs))
}

// The app's own pool is used as it is: no DSN needed, the pool stays open
// after the app stops.
func TestModule_D1_UsesTheAppsPool(t *testing.T) {
	db := newDatabase(t)
	pool, err := pgxpool.New(context.Background(), urlDSN("postgres", db))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var dl *locking.DistributedLock
	a, logs, h := app(t, nil, fx.Supply(pool), fx.Populate(&dl))
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	leads(t, h)
	if p, ok := pglock.ProviderOf(dl); !ok || p == nil {
		t.Errorf("lock is not over pglock: %T", dl.Provider())
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(ctx); err != nil {
		t.Errorf("the app's pool was closed: %v", err)
	}
	e := logs.FilterMessage("HostLoomLockPostgres").All()
	if len(e) != 1 || e[0].ContextMap()["app_pool"] != true {
		t.Errorf("want one HostLoomLockPostgres line with app_pool=true:\n%s", allLogs(logs))
	}
}

// Credentials the server refuses, and a database that does not exist:
// start fails once, naming locking.postgres.dsn and its source, never the
// password; the Error line is logged once.
func TestModule_D1_RefusedCredentialsOrMissingDatabaseFailStart(t *testing.T) {
	db := newDatabase(t)
	for _, tt := range []struct {
		name, dsn, want string
	}{
		{"unknown user", urlDSN("nosuchuser", db), `user "nosuchuser"`},
		{"missing database", urlDSN("postgres", "nosuchdb"), `database "nosuchdb"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, logs, _ := app(t, []string{"HOSTLOOM_LOCKING__POSTGRES__DSN=" + tt.dsn})
			if err := a.Err(); err != nil {
				t.Fatal(err)
			}
			err := a.Start(context.Background())
			if err == nil {
				_ = a.Stop(context.Background())
				t.Fatal("start succeeded")
			}
			var fe *config.FieldError
			if !errors.As(err, &fe) || fe.Key != "locking.postgres.dsn" || fe.Source != "env HOSTLOOM_LOCKING__POSTGRES__DSN" {
				t.Fatalf("error %v: want a FieldError for locking.postgres.dsn from its env variable", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q lacks %q", err, tt.want)
			}
			noSecret(t, "the error", err.Error())
			noSecret(t, "the log", allLogs(logs))
			if n := logs.FilterMessage("HostLoomLockConfigRefused").Len(); n != 1 {
				t.Errorf("%d HostLoomLockConfigRefused lines, want 1:\n%s", n, allLogs(logs))
			}
		})
	}
}

// A DSN that does not parse fails fx.New naming the key and its source,
// without the string or its password.
func TestModule_D1_UnparsableDSNNamesTheKey(t *testing.T) {
	for _, dsn := range []string{
		"postgres://svc:" + secretPassword + "@db:notaport/app",
		"host=db password=" + secretPassword + " port=xyz",
		"postgres://svc:" + secretPassword + "@db:5432/app?sslmode=sometimes",
	} {
		a, _, _ := app(t, []string{"HOSTLOOM_LOCKING__POSTGRES__DSN=" + dsn})
		err := a.Err()
		if err == nil {
			t.Fatalf("fx.New accepted %q", dsn)
		}
		var fe *config.FieldError
		if !errors.As(err, &fe) || fe.Key != "locking.postgres.dsn" || fe.Source != "env HOSTLOOM_LOCKING__POSTGRES__DSN" {
			t.Fatalf("error %v: want a FieldError for locking.postgres.dsn", err)
		}
		noSecret(t, "the error", err.Error())
		if strings.Contains(err.Error(), "svc") || strings.Contains(err.Error(), "host=db") {
			t.Errorf("error quotes the DSN: %v", err)
		}
	}
}

// No DSN and no pool: fx.New fails naming the key.
func TestModule_D1_MissingDSNNamesTheKey(t *testing.T) {
	a, _, _ := app(t, nil)
	var fe *config.FieldError
	if err := a.Err(); !errors.As(err, &fe) || fe.Key != "locking.postgres.dsn" {
		t.Fatalf("error %v: want a FieldError for locking.postgres.dsn", err)
	}
}

// A server that does not answer: the app starts, says so once at Warn
// with the cause, the elector logs the outage once (E7) and keeps trying,
// and nobody leads.
func TestModule_D1_UnreachableServerStartsLeaderless(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close() // nothing listens there now: connections are refused
	dsn := "postgres://svc:" + secretPassword + "@127.0.0.1:" + strconv.Itoa(port) + "/app?sslmode=disable&connect_timeout=2"
	a, logs, h := app(t, []string{"HOSTLOOM_LOCKING__POSTGRES__DSN=" + dsn})
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		t.Fatalf("an outage failed start: %v", err)
	}
	time.Sleep(time.Second)
	for _, e := range h.Electors() {
		if e.IsLeader() {
			t.Errorf("role %s leads without a database", e.Role())
		}
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	w := logs.FilterMessage("HostLoomLockUnreachable").All()
	if len(w) != 1 || !strings.Contains(w[0].ContextMap()["cause"].(string), "refused") {
		t.Errorf("want one HostLoomLockUnreachable line with the cause:\n%s", allLogs(logs))
	}
	// The elector logs the outage once too (E7), with the cause, however
	// many attempts failed meanwhile.
	u := logs.FilterMessage("LeadershipProviderUnavailable").All()
	if len(u) != 1 || !strings.Contains(fmt.Sprint(u[0].ContextMap()["error"]), "refused") {
		t.Errorf("want one LeadershipProviderUnavailable line with the cause:\n%s", allLogs(logs))
	}
	if n := logs.FilterMessage("LeadershipProviderRetry").Len(); n == 0 {
		t.Errorf("no retries logged at Debug in 1s: the elector did not keep trying:\n%s", allLogs(logs))
	}
	noSecret(t, "the log", allLogs(logs))
}

// Without fx: lockbuild builds the same provider through Build.
func TestBuild_D1_WithLockbuild(t *testing.T) {
	db := newDatabase(t)
	cfg, err := config.Load("", lockbuild.LoadOption(pglockbuild.Backend{}), config.WithEnviron([]string{
		"HOSTLOOM_LOCKING__PROVIDER=postgres",
		"HOSTLOOM_LOCKING__POSTGRES__DSN=" + urlDSN("postgres", db),
		"HOSTLOOM_LOCKING__POSTGRES__TABLE=svc_locks",
		"HOSTLOOM_LOCKING__POSTGRES__NOTIFICATIONS=false",
		"HOSTLOOM_LOCKING__POSTGRES__MAX_CONNS=2",
	}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := lockbuild.Build(cfg.Locking, lockbuild.WithBackends(pglockbuild.Backend{}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, ok := pglock.ProviderOf(b.Lock)
	if !ok || p.Table() != "svc_locks" {
		t.Fatalf("provider %T table %q", b.Lock.Provider(), p.Table())
	}
	if b.Lock.Capabilities().Events {
		t.Error("notifications false, yet the lock reports events")
	}
	ctx := context.Background()
	lease, err := b.Lock.TryAcquire(ctx, "job", time.Second)
	if err != nil || lease == nil {
		t.Fatalf("acquire: %v %v", lease, err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	pc, err := pglockbuild.PoolConfig(cfg.Locking)
	if err != nil || pc.MaxConns != 2 {
		t.Errorf("pool config: max_conns %v, %v", pc, err)
	}
}

// A role that may not create the tables: start fails once naming
// locking.postgres.table, not an outage the app would ride out.
func TestModule_D1_TableWithoutPrivilegeFailsStart(t *testing.T) {
	db := newDatabase(t)
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, urlDSN("postgres", db))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close) // after the cleanup below: cleanups run last first
	if _, err := admin.Exec(ctx, `DROP ROLE IF EXISTS pglockfx_nopriv; CREATE ROLE pglockfx_nopriv LOGIN; REVOKE CREATE ON SCHEMA public FROM PUBLIC`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP OWNED BY pglockfx_nopriv; DROP ROLE pglockfx_nopriv"); err != nil {
			t.Error(err)
		}
	})
	a, logs, _ := app(t, []string{"HOSTLOOM_LOCKING__POSTGRES__DSN=" + urlDSN("pglockfx_nopriv", db)})
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	err = a.Start(ctx)
	if err == nil {
		_ = a.Stop(ctx)
		t.Fatal("start succeeded")
	}
	var fe *config.FieldError
	if !errors.As(err, &fe) || fe.Key != "locking.postgres.table" || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("error %v: want a FieldError for locking.postgres.table saying permission denied", err)
	}
	noSecret(t, "the error", err.Error())
	if n := logs.FilterMessage("HostLoomLockConfigRefused").Len(); n != 1 {
		t.Errorf("%d HostLoomLockConfigRefused lines, want 1", n)
	}
}
