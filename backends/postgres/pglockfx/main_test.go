package pglockfx_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/internal/pgtest"
)

var (
	server   *pgtest.Server
	startErr error
	seq      atomic.Int64
)

func TestMain(m *testing.M) {
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

// newDatabase creates a fresh database and returns its name; it is
// dropped when t ends. Without a server it skips t.
func newDatabase(t testing.TB) string {
	t.Helper()
	if startErr != nil {
		t.Skipf("PostgreSQL did not start, skipping (install the postgresql package; set CI=1 to make this a failure): %v", startErr)
	}
	ctx := context.Background()
	name := fmt.Sprintf("fx%d_%s", seq.Add(1), strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name())))
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
	return name
}

// urlDSN is the URL of database db on the test server as user, with a
// password (the server trusts every local user, so it is never checked:
// it is there to be kept out of messages).
func urlDSN(user, db string) string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", user, secretPassword, server.Port(), db)
}

const secretPassword = "s3cr3t-hunter2"
