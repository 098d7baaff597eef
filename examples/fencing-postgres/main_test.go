package fencingpg_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/core/testing/pgtest"
	fencingpg "github.com/hostloom/hostloom/examples/fencing-postgres"
)

// pg is the private PostgreSQL server of the test run.
var pg pgtest.Shared

func TestMain(m *testing.M) {
	if os.Getenv(childDSN) != "" { // the paused leader's process: no server of its own
		os.Exit(m.Run())
	}
	os.Exit(pg.Main(m))
}

// newDB creates a fresh database with the example's schema and returns a
// pool on it, closed (and the database dropped) when t ends. Without a
// server it skips t with the reason.
func newDB(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pg.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := fencingpg.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return pool
}
