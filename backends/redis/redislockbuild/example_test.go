package redislockbuild_test

import (
	"fmt"

	"github.com/hostloom/hostloom/backends/redis/redislockbuild"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
)

// A program without fx lists the backends it links, loads the
// configuration with them, and builds the lock over the one it names.
// Building contacts no server.
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
