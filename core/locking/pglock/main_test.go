package pglock_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
	"github.com/hostloom/hostloom/internal/pgtest"
)

// server is the private PostgreSQL server of the test run; startErr says why
// there is none.
var (
	server   *pgtest.Server
	startErr error
	seq      atomic.Int64
)

func TestMain(m *testing.M) {
	if child() {
		return
	}
	server, startErr = pgtest.Start()
	if startErr != nil && pgtest.Required() {
		fmt.Fprintf(os.Stderr, "PostgreSQL is required here (CI or HOSTLOOM_REQUIRE_POSTGRES=1 is set) but did not start: %v\n", startErr)
		os.Exit(1)
	}
	code := m.Run()
	if server != nil {
		server.Stop()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// newDB creates a fresh database and returns a pool on it, closed (and the
// database dropped) when t ends. Without a server it skips t.
func newDB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	dsn := newDatabase(t)
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newDatabase creates a fresh database and returns its connection string;
// the database is dropped when t ends.
func newDatabase(t testing.TB) string {
	t.Helper()
	if startErr != nil {
		t.Skipf("PostgreSQL did not start, skipping (install the postgresql package; set CI=1 to make this a failure): %v", startErr)
	}
	ctx := context.Background()
	name := fmt.Sprintf("t%d_%s", seq.Add(1), strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name())))
	if len(name) > 60 {
		name = name[:60]
	}
	admin, err := pgx.Connect(ctx, server.ConnString("postgres"))
	if err != nil {
		t.Fatalf("connect: %v\nserver log:\n%s", err, server.Log())
	}
	defer admin.Close(ctx)
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin, err := pgx.Connect(ctx, server.ConnString("postgres"))
		if err != nil {
			t.Error(err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP DATABASE "+ident+" WITH (FORCE)"); err != nil {
			t.Error(err)
		}
	})
	return server.ConnString(name)
}

// newProvider returns a provider over pool, closed when t ends.
func newProvider(t testing.TB, pool *pgxpool.Pool, o pglock.Options) *pglock.Provider {
	t.Helper()
	p, err := pglock.New(pool, o)
	if err != nil {
		t.Fatalf("pglock.New: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// newLock returns a lock over a new provider on pool, namespace ns.
func newLock(t testing.TB, pool *pgxpool.Pool, o pglock.Options, ns string) (*locking.DistributedLock, *pglock.Provider) {
	t.Helper()
	p := newProvider(t, pool, o)
	lo := locking.DefaultOptions()
	lo.Namespace = ns
	l, err := locking.New(p.ForLock(), lo)
	if err != nil {
		t.Fatal(err)
	}
	return l, p
}
