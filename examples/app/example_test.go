package main

import (
	"fmt"

	"github.com/hostloom/hostloom/backends/etcd/etcdlockbuild"
	"github.com/hostloom/hostloom/backends/postgres/pglockbuild"
	"github.com/hostloom/hostloom/config"
)

// Example shows what the embedded config.yaml selects when no file and no
// variable override it.
func Example() {
	c, err := config.Load("", config.WithYAML("config.yaml", embeddedConfig), config.WithEnviron(nil), config.WithBackends(pglockbuild.Backend{}, etcdlockbuild.Backend{}))
	if err != nil {
		fmt.Println(err)
		return
	}
	inv := c.Leadership.For(roleInventory)
	fmt.Println(c.Locking.Provider, c.Locking.Namespace, c.Leadership.Lease, inv.RetryInterval, c.LeaderChannel.FullMode)
	// Output: memory hostloom-example 10s 500ms drop_oldest
}
