package pglock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

func TestNew_L10_InvalidOptionsNameFieldAndValue(t *testing.T) {
	if _, err := pglock.New(nil, pglock.Options{}); !errors.Is(err, pglock.ErrNilPool) {
		t.Fatalf("New(nil) = %v, want ErrNilPool", err)
	}
	pool, err := pgxpool.New(context.Background(), "host=127.0.0.1 port=1 user=x dbname=x sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, c := range []struct {
		o     pglock.Options
		field string
		value string
	}{
		{pglock.Options{Table: "bad-name"}, "Table", `"bad-name"`},
		{pglock.Options{Table: `x"; DROP TABLE t; --`}, "Table", `"x\"; DROP TABLE t; --"`},
		{pglock.Options{Table: "1locks"}, "Table", `"1locks"`},
		{pglock.Options{Table: strings.Repeat("a", pglock.MaxTableLength+1)}, "Table", "51 bytes"},
		{pglock.Options{Schema: "my schema"}, "Schema", `"my schema"`},
		{pglock.Options{ReconnectMax: -time.Second}, "ReconnectMax", "-1s"},
	} {
		_, err := pglock.New(pool, c.o)
		if !errors.Is(err, pglock.ErrInvalidOptions) || !strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), c.value) {
			t.Errorf("New(%+v) = %v; want ErrInvalidOptions naming %s and %s", c.o, err, c.field, c.value)
		}
		if _, err := pglock.Schema(c.o.Schema, c.o.Table); c.field != "ReconnectMax" && !errors.Is(err, pglock.ErrInvalidOptions) {
			t.Errorf("Schema(%q, %q) = %v, want ErrInvalidOptions", c.o.Schema, c.o.Table, err)
		}
	}
	// The longest table name is accepted; New does no I/O (the pool points
	// nowhere).
	p, err := pglock.New(pool, pglock.Options{Table: strings.Repeat("a", pglock.MaxTableLength), Schema: "ops"})
	if err != nil {
		t.Fatalf("New with the longest table name: %v", err)
	}
	if got := p.Table(); got != "ops."+strings.Repeat("a", pglock.MaxTableLength) {
		t.Fatalf("Table() = %q", got)
	}
	_ = p.Close()
	_ = p.Close() // twice is fine
}

func TestSchema_D1_ExternalSchemaNeedsMigration(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA ops"); err != nil {
		t.Fatal(err)
	}
	l, _ := newLock(t, pool, pglock.Options{Schema: "ops", Table: "leases", ExternalSchema: true}, "ns")
	_, err := l.TryAcquire(ctx, "job", time.Minute)
	if err == nil || !strings.Contains(err.Error(), "ops.leases") || !strings.Contains(err.Error(), "pglock.Schema") {
		t.Fatalf("TryAcquire without tables = %v; want an error naming ops.leases and pglock.Schema", err)
	}
	sql, err := pglock.Schema("ops", "leases")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // idempotent
		if _, err := pool.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("running Schema: %v\n%s", err, sql)
		}
	}
	// The same provider recovers on its next operation.
	ls, err := l.TryAcquire(ctx, "job", time.Minute)
	if err != nil {
		t.Fatalf("TryAcquire after the migration: %v", err)
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM ops.leases WHERE key = 'ns:lock:job'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("row in ops.leases: %d, %v", n, err)
	}
}

func TestTable_D1_MismatchedColumnsNamedAtFirstUse(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE TABLE hostloom_locks (key text PRIMARY KEY, holder text)"); err != nil {
		t.Fatal(err)
	}
	l, _ := newLock(t, pool, pglock.Options{}, "")
	_, err := l.TryAcquire(ctx, "job", time.Minute)
	if err == nil || !strings.Contains(err.Error(), "hostloom_locks") || !strings.Contains(err.Error(), "do not match") {
		t.Fatalf("TryAcquire over a foreign table = %v; want an error naming the table and the mismatch", err)
	}
}

// Keys, owners and namespaces are parameters, never SQL text: quotes,
// semicolons and placeholders are stored verbatim and break nothing.
func TestKeys_D1_QuotesAndSemicolonsAreData(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	keys := []string{
		`x';DROP/**/TABLE/**/hostloom_locks;--`,
		`";SELECT/**/pg_sleep(10);--`,
		`$1`, `'||'`, `\'`, `a;b;c`, `key'with"both`,
	}
	for _, ns := range []string{"", `n's;"`} {
		l, _ := newLock(t, pool, pglock.Options{}, ns)
		other, _ := newLock(t, pool, pglock.Options{}, ns)
		for _, key := range keys {
			ls, err := l.TryAcquireAs(ctx, key, time.Minute, `owner'; --`)
			if err != nil {
				t.Fatalf("TryAcquireAs(%q): %v", key, err)
			}
			_, err = other.TryAcquire(ctx, key, time.Minute)
			var held *locking.HeldError
			if !errors.As(err, &held) || held.Owner != `owner'; --` || held.Remaining <= 0 {
				t.Fatalf("second TryAcquire(%q) = %v; want held by the first owner", key, err)
			}
			st, err := other.Inspect(ctx, key)
			if err != nil || !st.Held || st.Holder.Owner != `owner'; --` {
				t.Fatalf("Inspect(%q) = %+v, %v", key, st, err)
			}
			if err := ls.Release(ctx); err != nil {
				t.Fatalf("Release(%q): %v", key, err)
			}
		}
		got, err := l.Keys(ctx, "")
		if err != nil || len(got) != len(keys) {
			t.Fatalf("Keys = %q, %v; want the %d keys", got, err, len(keys))
		}
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM hostloom_locks").Scan(&n); err != nil || n != 2*len(keys) {
		t.Fatalf("rows = %d, %v; want %d", n, err, 2*len(keys))
	}
}

// fence returns a lease's fence.
func fence(t *testing.T, ls locking.Lease) uint64 {
	t.Helper()
	f, ok := ls.(locking.Fenced)
	if !ok || f.Fence() == 0 {
		t.Fatalf("lease %T has no fence", ls)
	}
	return f.Fence()
}

// G1: the fence is max(last + 1, server time in µs). A row deleted by hand
// (a restore, an operator) still yields a larger fence, from the clock; a
// stored fence ahead of the clock is continued from.
func TestFence_G1_IncreasesAcrossALostRowAndAheadOfTheClock(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	l, _ := newLock(t, pool, pglock.Options{}, "")
	ls, err := l.TryAcquire(ctx, "job", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	f1 := fence(t, ls)
	var serverUS int64
	if err := pool.QueryRow(ctx, "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint").Scan(&serverUS); err != nil {
		t.Fatal(err)
	}
	if d := serverUS - int64(f1); d < 0 || d > int64(time.Minute/time.Microsecond) {
		t.Fatalf("first fence %d is not the server's time in µs (%d)", f1, serverUS)
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "DELETE FROM hostloom_locks"); err != nil {
		t.Fatal(err)
	}
	ls, err = l.TryAcquire(ctx, "job", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	f2 := fence(t, ls)
	if f2 <= f1 {
		t.Fatalf("fence after the row was lost = %d, want more than %d", f2, f1)
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
	const ahead = 1 << 60
	if _, err := pool.Exec(ctx, "UPDATE hostloom_locks SET fence = $1", int64(ahead)); err != nil {
		t.Fatal(err)
	}
	ls, err = l.TryAcquire(ctx, "job", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if f := fence(t, ls); f != ahead+1 {
		t.Fatalf("fence after a stored %d = %d, want %d", uint64(ahead), f, uint64(ahead+1))
	}
}

// Expiry is the server's: a lease whose row says it ran out is free,
// whatever the client believes.
func TestExpiry_D1_DecidedByTheDatabaseClock(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	a, _ := newLock(t, pool, pglock.Options{}, "")
	b, _ := newLock(t, pool, pglock.Options{}, "")
	ls, err := a.TryAcquire(ctx, "job", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "UPDATE hostloom_locks SET expires_at = clock_timestamp() - interval '1 millisecond'"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryAcquire(ctx, "job", time.Minute); err != nil {
		t.Fatalf("TryAcquire of a lease expired by the server's clock: %v", err)
	}
	if err := ls.Extend(ctx, time.Hour); !errors.Is(err, locking.ErrLeaseLost) {
		t.Fatalf("Extend of the taken lease = %v, want ErrLeaseLost", err)
	}
}

// oneSessionPool is a pool of one connection on a fresh database, so every
// statement of a test runs on one server session, with mode as the pool's
// DefaultQueryExecMode.
func oneSessionPool(t *testing.T, mode pgx.QueryExecMode) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pg.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.ConnConfig.DefaultQueryExecMode = mode
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

// D1: nothing outlives a statement on the connection: no named prepared
// statement, no session setting, whatever the pool's own query mode, so a
// pool behind PgBouncer in transaction mode works.
func TestPgBouncer_D1_NoPreparedStatementsNoSessionState(t *testing.T) {
	pool := oneSessionPool(t, pgx.QueryExecModeCacheStatement)
	defer pool.Close()
	ctx := context.Background()
	l, p := newLock(t, pool, pglock.Options{DisableNotifications: true}, "pgb")
	ls, err := l.TryAcquireAs(ctx, "job", time.Minute, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryAcquireAs(ctx, "job", time.Minute, "b"); !errors.Is(err, locking.ErrNotAcquired) {
		t.Fatal(err)
	}
	if err := ls.Extend(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Inspect(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Advance(ctx, "slot", 1); err != nil {
		t.Fatal(err)
	}
	pk, _ := l.ProviderKey("job")
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return p.CheckTerm(ctx, tx, pk, fence(t, ls)) })
	if err != nil {
		t.Fatalf("CheckTerm: %v", err)
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var prepared, session int
	err = pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_prepared_statements), (SELECT count(*) FROM pg_settings WHERE source = 'session')`,
		pgx.QueryExecModeSimpleProtocol).Scan(&prepared, &session)
	if err != nil {
		t.Fatal(err)
	}
	if prepared != 0 || session != 0 {
		t.Fatalf("the session keeps %d prepared statements and %d session settings, want none", prepared, session)
	}
}

// D1: with notifications on (so not behind PgBouncer in transaction mode,
// which cannot keep the LISTEN session) the provider prepares its
// statements once per connection, so the server does not plan them again
// on every call; CheckTerm, on the caller's connection, prepares nothing.
func TestProvider_D1_NotificationsOnPreparesStatements(t *testing.T) {
	pool := oneSessionPool(t, pgx.QueryExecModeCacheStatement) // pgx's default
	defer pool.Close()
	ctx := context.Background()
	prepared := func() int {
		t.Helper()
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements`, pgx.QueryExecModeSimpleProtocol).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	l, p := newLock(t, pool, pglock.Options{}, "prep")
	ls, err := l.TryAcquireAs(ctx, "job", time.Minute, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.Extend(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := prepared(); n < 2 {
		t.Fatalf("the session keeps %d prepared statements after an acquisition and an extension, want at least 2", n)
	}
	before := prepared()
	pk, _ := l.ProviderKey("job")
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return p.CheckTerm(ctx, tx, pk, fence(t, ls)) })
	if err != nil {
		t.Fatalf("CheckTerm: %v", err)
	}
	if n := prepared(); n != before {
		t.Fatalf("CheckTerm left %d prepared statements on the caller's connection, want none", n-before)
	}
	// Prepared once: a second extension prepares nothing more.
	if err := ls.Extend(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := prepared(); n != before {
		t.Fatalf("a second extension prepared %d statements more, want 0", n-before)
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// ProviderOf finds the provider behind a lock, also behind the polling
// view, and nothing behind another provider.
func TestProviderOf_L9(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "host=127.0.0.1 port=1 user=x dbname=x sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, o := range []pglock.Options{{}, {DisableNotifications: true}} {
		l, err := pglock.NewLock(pool, o, locking.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := pglock.ProviderOf(l); !ok || p == nil || p.Table() != pglock.DefaultTable {
			t.Errorf("ProviderOf(lock over %+v) = %v, %v", o, p, ok)
		}
		_ = l.Close()
	}
	if _, ok := pglock.ProviderOf(nil); ok {
		t.Error("ProviderOf(nil) found a provider")
	}
	mem, err := memlock.NewLock(locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pglock.ProviderOf(mem); ok {
		t.Error("ProviderOf(a memlock lock) found a provider")
	}
}

// O4: a database that does not exist is a configuration error, like
// refused credentials, not an outage. An elector over it logs the failure
// once, advising what to check: over a pool the app built, its pool (the
// configuration's DSN is not used then); where the pool was built from
// configuration, what Options.AuthAdvice says (pglockbuild names
// locking.postgres.dsn there).
func TestNew_O4_MissingDatabaseIsAConfigurationError(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), pg.Server(t).ConnString("no_such_database"))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	l, _ := newLock(t, pool, pglock.Options{}, "")
	_, err = l.TryAcquire(context.Background(), "job", time.Minute)
	if !errors.Is(err, locking.ErrUnauthorized) || !strings.Contains(err.Error(), "no_such_database") {
		t.Fatalf("TryAcquire on a missing database = %v; want ErrUnauthorized naming it", err)
	}
	if advice := authAdviceLogged(t, l); !strings.Contains(advice, "*pgxpool.Pool") || strings.Contains(advice, "locking.postgres.dsn") || strings.Contains(advice, "redis") {
		t.Errorf("advice over the app's pool = %q, want one about that pool, not the DSN", advice)
	}
	const fromConfig = "check locking.postgres.dsn (env HOSTLOOM_LOCKING__POSTGRES__DSN)"
	l, _ = newLock(t, pool, pglock.Options{AuthAdvice: fromConfig}, "")
	if advice := authAdviceLogged(t, l); advice != fromConfig {
		t.Errorf("advice with Options.AuthAdvice = %q, want %q", advice, fromConfig)
	}
}

// authAdviceLogged runs an elector over l until it logs
// LeadershipProviderAuthFailed, and returns the advice it logged.
func authAdviceLogged(t *testing.T, l locking.Lock) string {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	e, err := leadership.NewElector("r", l, leadership.DefaultOptions(), leadership.WithLogger(zap.New(core)))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Stop(context.Background()) }()
	deadline := time.Now().Add(10 * time.Second)
	for logs.FilterMessage("LeadershipProviderAuthFailed").Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no LeadershipProviderAuthFailed logged")
		}
		time.Sleep(10 * time.Millisecond)
	}
	advice, _ := logs.FilterMessage("LeadershipProviderAuthFailed").All()[0].ContextMap()["advice"].(string)
	return advice
}
