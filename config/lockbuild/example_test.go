package lockbuild_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
)

// Build over the memory provider, as a program without fx would.
func ExampleBuild() {
	cfg := config.Defaults().Locking
	cfg.Provider = config.ProviderMemory
	b, err := lockbuild.Build(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	lease, err := b.Lock.TryAcquire(context.Background(), "report", time.Minute)
	fmt.Println(b.Kind, lease.Key(), err)
	// Output: memory report <nil>
}

// Open words a server that does not answer in one line: where, and why.
func ExampleUnreachable() {
	err := lockbuild.Unreachable("etcd 10.0.0.5:2379", 2*time.Second, "locking.etcd.dial_timeout", context.DeadlineExceeded)
	fmt.Println(err)
	// Output: etcd 10.0.0.5:2379 unreachable: no answer within 2s (locking.etcd.dial_timeout)
}
