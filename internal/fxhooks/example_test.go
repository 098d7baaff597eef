package fxhooks_test

import (
	"context"
	"fmt"

	"go.uber.org/fx"

	"github.com/hostloom/hostloom/internal/fxhooks"
)

// A module defers its hook; the top-level hook declared after it still
// starts first, and stops last.
func Example() {
	say := func(s string) func(context.Context) error {
		return func(context.Context) error { fmt.Println(s); return nil }
	}
	app := fx.New(fx.NopLogger,
		fx.Decorate(fxhooks.Decorate),
		fx.Module("role", fx.Invoke(func(lc fx.Lifecycle) {
			lc.(fxhooks.Deferrer).Defer(fx.Hook{OnStart: say("role starts"), OnStop: say("role stops")})
		})),
		fx.Invoke(func(lc fx.Lifecycle) {
			lc.Append(fx.Hook{OnStart: say("server starts"), OnStop: say("server stops")})
		}),
	)
	_ = app.Start(context.Background())
	_ = app.Stop(context.Background())
	// Output:
	// server starts
	// role starts
	// role stops
	// server stops
}
