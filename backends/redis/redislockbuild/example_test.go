package redislockbuild_test

import (
	"fmt"

	"github.com/hostloom/hostloom/backends/redis/redislockbuild"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
)

// Backend is a lockbuild.Backend, as every backend is.
var _ lockbuild.Backend = redislockbuild.Backend{}

// Redis is linked by default; a program passes redislockbuild.Backend
// only to give it its own client or a logger, to Load and Build alike
// (it replaces the default, once). Building contacts no server.
func Example() {
	backends := []lockbuild.Backend{redislockbuild.Backend{}}
	cfg, err := config.Load("", lockbuild.LoadOption(backends...), config.WithEnviron([]string{
		"HOSTLOOM_LOCKING__PROVIDER=redis",
		"HOSTLOOM_LOCKING__REDIS__ADDRS=127.0.0.1:6379",
		"HOSTLOOM_LOCKING__REDIS__PASSWORD=hunter2",
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(redislockbuild.SectionOf(cfg.Locking))
	b, err := lockbuild.Build(cfg.Locking, lockbuild.WithBackends(backends...))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	fmt.Println(b.Kind, b.Lock.Coordinated())
	// Output:
	// addrs=[127.0.0.1:6379] username="" password=[redacted] db=0 cluster=false tls=false
	// redis true
}
