package lockingfx_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/lockingfx"
)

func ExampleBuild() {
	cfg := config.Defaults().Locking
	cfg.Provider = config.ProviderMemory // chosen explicitly: there is no default (G6)
	b, err := lockingfx.Build(cfg, nil)
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
