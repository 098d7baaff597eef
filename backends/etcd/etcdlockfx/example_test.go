package etcdlockfx_test

import (
	"fmt"

	"go.uber.org/fx"

	"github.com/hostloom/hostloom/backends/etcd/etcdlockfx"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/configfx"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
)

// An app on etcd needs the provider and the endpoints (here from the
// environment; a file works the same). An endpoint that is not an address
// fails fx.New naming the key, the value and the source.
func Example() {
	app := fx.New(
		fx.NopLogger,
		configfx.Module("", config.WithEnviron([]string{
			"HOSTLOOM_LOCKING__PROVIDER=etcd",
			"HOSTLOOM_LOCKING__ETCD__ENDPOINTS=etcd-1",
		})),
		lockingfx.Module,
		etcdlockfx.Module,
		leadershipfx.Role("billing"),
		leadershipfx.Module,
	)
	fmt.Println(app.Err())
	// Output:
	// config: locking.etcd.endpoints: "etcd-1" is not host:port or http(s)://host:port (env HOSTLOOM_LOCKING__ETCD__ENDPOINTS)
}
