package schedulingfx_test

import (
	"context"
	"fmt"

	"go.uber.org/fx"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/configfx"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
	"github.com/hostloom/hostloom/schedulingfx"
)

func ExampleJob() {
	ran := make(chan string, 1)
	app := fx.New(
		fx.NopLogger,
		configfx.Module("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=memory"})),
		lockingfx.Module,
		leadershipfx.Role("billing"),
		// Every second, on the leader of "billing" only.
		schedulingfx.Job("billing", "invoices", "@every 1s", func(ctx context.Context) error {
			select {
			case ran <- "invoices":
			default:
			}
			return nil
		}),
		schedulingfx.Module,
		leadershipfx.Module, // optional: *Roles, *Health
	)
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(<-ran)
	_ = app.Stop(ctx)
	// Output: invoices
}

func ExampleJob_roleWithoutElector() {
	app := fx.New(
		fx.NopLogger,
		configfx.Module("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=memory"})),
		lockingfx.Module,
		schedulingfx.Job("payroll", "pay", "@hourly", func(context.Context) error { return nil }),
		schedulingfx.Module,
		leadershipfx.Module,
	)
	fmt.Println(app.Err())
	// Output: schedulingfx: job "pay" is bound to role "payroll", which has no elector (add leadershipfx.Role("payroll"))
}
