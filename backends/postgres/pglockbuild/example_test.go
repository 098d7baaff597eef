package pglockbuild_test

import (
	"fmt"

	"github.com/hostloom/hostloom/backends/postgres/pglockbuild"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
)

// Without fx, lockbuild builds provider postgres through Build. Building
// contacts no server (pglockbuild.Check does); a DSN that does not parse is
// an error naming the key, without quoting the string or its password.
func ExampleBuild() {
	backends := []lockbuild.Backend{pglockbuild.Backend{}}
	cfg, err := config.Load("", lockbuild.LoadOption(backends...), config.WithEnviron([]string{
		"HOSTLOOM_LOCKING__PROVIDER=postgres",
		"HOSTLOOM_LOCKING__POSTGRES__DSN=postgres://svc:secret@db.internal:5432/app?sslmode=sometimes",
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = lockbuild.Build(cfg.Locking, lockbuild.WithBackends(backends...))
	fmt.Println(err)
	// Output:
	// lockbuild: provider "postgres": config: locking.postgres.dsn: does not parse as a postgres:// URL or key=value connection string: failed to configure TLS (sslmode is invalid) (env HOSTLOOM_LOCKING__POSTGRES__DSN)
}
