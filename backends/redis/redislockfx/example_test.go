package redislockfx_test

import (
	"fmt"

	"go.uber.org/fx"

	"github.com/hostloom/hostloom/backends/redis/redislockfx"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/configfx"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
)

// An app on Redis adds the backend's module next to lockingfx.Module. A
// bad value of its section fails fx.New naming the key, the value and its
// source.
func Example() {
	app := fx.New(
		fx.NopLogger,
		configfx.Module("", config.WithEnviron([]string{
			"HOSTLOOM_LOCKING__PROVIDER=redis",
			"HOSTLOOM_LOCKING__REDIS__ADDRS=localhost",
		})),
		lockingfx.Module,
		redislockfx.Module,
		leadershipfx.Role("billing"),
	)
	fmt.Println(app.Err())
	// Output:
	// config: locking.redis.addrs: "localhost" is not host:port (env HOSTLOOM_LOCKING__REDIS__ADDRS)
}
