package lockingfx_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/core/locking"
)

// Without fx, lockbuild.Build does what Module does, over the same
// backends.
func Example_build() {
	cfg := config.Defaults().Locking
	cfg.Provider = config.ProviderMemory // chosen explicitly: there is no default (G6)
	b, err := lockbuild.Build(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	lease, err := b.Lock.TryAcquire(context.Background(), "report", 10*time.Second)
	fmt.Println(b.Kind, b.Lock.Coordinated(), err == nil)
	_, err = b.Lock.TryAcquire(context.Background(), "report", 10*time.Second)
	fmt.Println(errors.Is(err, locking.ErrNotAcquired))
	_ = lease.Release(context.Background())
	// Output:
	// memory true true
	// true
}
