package leadershipfx_test

import (
	"context"
	"fmt"

	"go.uber.org/fx"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/configfx"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
)

func ExampleRole() {
	var billing leadership.Leadership
	app := fx.New(
		fx.NopLogger,
		configfx.Module("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=memory"})),
		lockingfx.Module,
		leadershipfx.Role("billing"),
		fx.Populate(fx.Annotate(&billing, fx.ParamTags(`name:"billing"`))),
		leadershipfx.Module, // optional: *Roles, *Health
	)
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	_ = billing.WaitForLeadership(ctx)
	fmt.Println(billing.Role(), billing.IsLeader(), billing.Term())
	_ = app.Stop(ctx)
	fmt.Println(billing.IsLeader())
	// Output:
	// billing true 1
	// false
}

func ExampleRole_leaseOverMaxLease() {
	app := fx.New(
		fx.NopLogger,
		configfx.Module("", config.WithEnviron([]string{
			"HOSTLOOM_LOCKING__PROVIDER=memory",
			"HOSTLOOM_LEADERSHIP__LEASE=10m",
			"HOSTLOOM_LEADERSHIP__RENEW_INTERVAL=1m",
			"HOSTLOOM_LOCKING__MAX_LEASE=1m",
		})),
		lockingfx.Module,
		leadershipfx.Role("billing"),
		leadershipfx.Module,
	)
	fmt.Println(app.Start(context.Background()))
	// Output: leadership: role "billing": lease 10m0s exceeds locking max_lease 1m0s (leadership.lease from env HOSTLOOM_LEADERSHIP__LEASE; locking.max_lease from env HOSTLOOM_LOCKING__MAX_LEASE)
}

// A reader attached to its role (for a leader channel, range over
// ch.All(ctx)): it starts with the roles and its ctx ends when the role
// stops, before the role's lease is released.
func ExampleRoles_Go() {
	events := make(chan string, 2)
	app := fx.New(
		fx.NopLogger,
		configfx.Module("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=memory"})),
		lockingfx.Module,
		leadershipfx.Role("billing"),
		fx.Invoke(func(r *leadershipfx.Roles) error {
			return r.Go("billing", "invoices-reader", func(ctx context.Context) {
				events <- "reader started"
				<-ctx.Done()
				events <- "reader ended"
			})
		}),
		leadershipfx.Module, // *Roles
	)
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(<-events)
	_ = app.Stop(ctx)
	fmt.Println(<-events)
	// Output:
	// reader started
	// reader ended
}
