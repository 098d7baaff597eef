package etcdlockbuild_test

import (
	"fmt"

	"github.com/hostloom/hostloom/backends/etcd/etcdlockbuild"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
)

// A program without fx lists the backends it links for both calls.
func ExampleBackend() {
	backends := []lockbuild.Backend{etcdlockbuild.Backend{}}
	cfg, err := config.Load("", lockbuild.LoadOption(backends...), config.WithEnviron([]string{
		"HOSTLOOM_LOCKING__PROVIDER=etcd",
		"HOSTLOOM_LOCKING__ETCD__ENDPOINTS=127.0.0.1:2379",
		"HOSTLOOM_LOCKING__ETCD__PREFIX=billing/",
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(etcdlockbuild.SectionOf(cfg.Locking))
	b, err := lockbuild.Build(cfg.Locking, lockbuild.WithBackends(backends...)) // no I/O: nobody needs etcd to be up yet
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	fmt.Println(b.Lock.Capabilities().Events, b.Lock.Capabilities().JobSlots)
	// Output:
	// endpoints=[127.0.0.1:2379] username="" password= prefix="billing/" dial_timeout=5s tls=false expiry_quarantine=false
	// true true
}
