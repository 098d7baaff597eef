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
