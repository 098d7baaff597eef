package schedulingfx_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
	"github.com/hostloom/hostloom/schedulingfx"
)

// TestStart_O3_LaterHookFailsNeverLeads: an OnStart hook registered before
// the role and its job (a server that cannot bind) fails after a minute;
// the instance never contended, never led and never ran the job. Roles
// start in fx's order (O3'): the role is declared after the hook.
func TestStart_O3_LaterHookFailsNeverLeads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := sharedLock(t)
		var runs, changes atomic.Int64
		var heldDuringHook atomic.Bool
		app := fx.New(fx.NopLogger,
			over(lock),
			fx.Invoke(func(lc fx.Lifecycle, p struct {
				fx.In
				Billing leadership.Leadership `name:"billing"`
			}) {
				p.Billing.OnChange(func(leadership.Change) { changes.Add(1) })
				lc.Append(fx.Hook{OnStart: func(context.Context) error {
					time.Sleep(time.Minute) // long enough to elect and run ticks, had the election begun
					_, held, _ := lock.Holder(context.Background(), "leader:billing")
					heldDuringHook.Store(held)
					return errors.New("listen tcp :8080: bind: address already in use")
				}})
			}),
			leadershipfx.Role("billing"),
			schedulingfx.Job("billing", "tick", "@every 1s", func(context.Context) error { runs.Add(1); return nil }),
			schedulingfx.Module,
			leadershipfx.Module,
		)
		if err := app.Err(); err != nil {
			t.Fatal(err)
		}
		err := app.Start(context.Background())
		if err == nil || err.Error() != "listen tcp :8080: bind: address already in use" {
			t.Fatalf("Start error %v, want the hook's", err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		_, heldAfter, _ := lock.Holder(context.Background(), "leader:billing")
		if heldDuringHook.Load() || heldAfter || changes.Load() != 0 || runs.Load() != 0 {
			t.Fatalf("held during the hook %t, after %t; %d leadership changes, %d runs: want none (O3)",
				heldDuringHook.Load(), heldAfter, changes.Load(), runs.Load())
		}
	})
}

// TestErrors_O4_ReadableThroughFx checks the text fx.New reports: the
// HostLoom error itself, not fx's chain around a failed constructor.
func TestErrors_O4_ReadableThroughFx(t *testing.T) {
	noop := func(context.Context) error { return nil }
	tests := []struct {
		name string
		opts []fx.Option
		want string
	}{
		{"role without elector, no modules",
			[]fx.Option{leadershipfx.Role("billing"), schedulingfx.Job("payroll", "pay", "@hourly", noop)},
			`schedulingfx: job "pay" is bound to role "payroll", which has no elector (add leadershipfx.Role("payroll"))`},
		{"duplicate job, no modules",
			[]fx.Option{leadershipfx.Role("billing"), schedulingfx.Job("billing", "x", "@hourly", noop), schedulingfx.Job("billing", "x", "@daily", noop)},
			`schedulingfx: role "billing": scheduling: job "x": duplicate name`},
		{"job constructor error",
			[]fx.Option{leadershipfx.Role("billing"), schedulingfx.Module, leadershipfx.Module,
				schedulingfx.JobFunc("billing", func() (scheduling.Job, error) { return scheduling.Job{}, errors.New("no database") })},
			`schedulingfx: job constructor for role "billing": no database`},
		{"duplicate job",
			[]fx.Option{leadershipfx.Role("billing"), schedulingfx.Module,
				schedulingfx.Job("billing", "x", "@hourly", noop), schedulingfx.Job("billing", "x", "@daily", noop), leadershipfx.Module},
			`schedulingfx: role "billing": scheduling: job "x": duplicate name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fx.New(append([]fx.Option{fx.NopLogger, withEnv(), lockingfx.Module}, tt.opts...)...).Err()
			if err == nil || err.Error() != tt.want {
				t.Fatalf("fx.New error\n%v\nwant\n%s", err, tt.want)
			}
		})
	}
}

func TestErrors_O4_NoFxChain(t *testing.T) {
	err := fx.New(fx.NopLogger, withEnv(), lockingfx.Module, leadershipfx.Role("billing"), schedulingfx.Module,
		schedulingfx.Job("billing", "y", "@hourly", nil, schedulingfx.Timeout(-time.Second)), leadershipfx.Module).Err()
	if err == nil || !strings.HasPrefix(err.Error(), `schedulingfx: role "billing": `) || strings.Contains(err.Error(), "could not build") {
		t.Fatalf("fx.New error %v", err)
	}
}
