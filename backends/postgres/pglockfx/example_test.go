package pglockfx_test

import (
	"fmt"

	"go.uber.org/fx"

	"github.com/hostloom/hostloom/backends/postgres/pglockfx"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/configfx"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
)

// An app on PostgreSQL needs the provider and the DSN (here from the
// environment; a file works the same). A DSN that does not parse fails
// fx.New naming the key, without quoting the string.
func Example() {
	app := fx.New(
		fx.NopLogger,
		configfx.Module("", config.WithEnviron([]string{
			"HOSTLOOM_LOCKING__PROVIDER=postgres",
			"HOSTLOOM_LOCKING__POSTGRES__DSN=postgres://svc:secret@db.internal:notaport/app",
		})),
		lockingfx.Module,
		pglockfx.Module,
		leadershipfx.Role("billing"),
		leadershipfx.Module,
	)
	fmt.Println(app.Err())
	// Output:
	// lockbuild: provider "postgres": config: locking.postgres.dsn: does not parse as a postgres:// URL or key=value connection string: invalid port (env HOSTLOOM_LOCKING__POSTGRES__DSN)
}
