package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/core/testing/pgtest"
)

// pg is the private PostgreSQL server of the test run, started by the
// first test that needs one and stopped after the last.
var pg struct {
	once sync.Once
	srv  *pgtest.Server
	err  error
	seq  atomic.Int64
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pg.srv != nil {
		pg.srv.Stop()
	}
	if etcd.cluster != nil {
		etcd.cluster.Stop()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// newPostgres returns the connection string of a fresh database on the
// test server, dropped when t ends. Without a server it skips t (fails it
// when pgtest.Required).
func newPostgres(t *testing.T) string {
	t.Helper()
	pg.once.Do(func() { pg.srv, pg.err = pgtest.Start() })
	if pg.err != nil {
		if pgtest.Required() {
			t.Fatalf("PostgreSQL is required here (CI or HOSTLOOM_REQUIRE_POSTGRES=1) but did not start: %v", pg.err)
		}
		t.Skipf("PostgreSQL did not start, skipping: %v", pg.err)
	}
	ctx := context.Background()
	name := fmt.Sprintf("app%d_%s", pg.seq.Add(1), strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name())))
	if len(name) > 60 {
		name = name[:60]
	}
	admin, err := pgx.Connect(ctx, pg.srv.ConnString("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin, err := pgx.Connect(ctx, pg.srv.ConnString("postgres"))
		if err != nil {
			t.Error(err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP DATABASE "+ident+" WITH (FORCE)"); err != nil {
			t.Error(err)
		}
	})
	return fmt.Sprintf("postgres://postgres:example-secret@127.0.0.1:%d/%s?sslmode=disable", pg.srv.Port(), name)
}
