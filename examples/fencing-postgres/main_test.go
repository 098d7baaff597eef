package fencingpg_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	fencingpg "github.com/hostloom/hostloom/examples/fencing-postgres"
	"github.com/hostloom/hostloom/internal/pgtest"
)

// server is the private PostgreSQL server of the test run; startErr says why
// there is none.
var (
	server   *pgtest.Server
	startErr error
	dbSeq    atomic.Int64
)

func TestMain(m *testing.M) {
	if os.Getenv(childDSN) != "" { // the paused leader's process: no server of its own
		os.Exit(m.Run())
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
	os.Exit(code)
}

// newDB creates a fresh database with the example's schema and returns a
// pool on it, closed (and the database dropped) when t ends. Without a
// server it skips t with the reason.
func newDB(t *testing.T) *pgxpool.Pool {
	t.Helper()
	if startErr != nil {
		t.Skipf("PostgreSQL did not start, skipping (install the postgresql package; set CI=1 to make this a failure): %v", startErr)
	}
	ctx := context.Background()
	name := fmt.Sprintf("t%d_%s", dbSeq.Add(1), strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name())))
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
	pool, err := pgxpool.New(ctx, server.ConnString(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
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
	if err := fencingpg.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return pool
}
