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
	"go.uber.org/fx/fxtest"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/configfx"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
	"github.com/hostloom/hostloom/schedulingfx"
)

// withEnv is a config module over the memory lock and vars.
func withEnv(vars ...string) fx.Option {
	return configfx.Module("", config.WithEnviron(append([]string{"HOSTLOOM_LOCKING__PROVIDER=memory"}, vars...)))
}

// TestJob_S7_OverlapFromCodeAndConfig: a run of 2m30s on a job due every
// minute. With skip, nothing else starts before 3m; with buffer_one (from
// the option, or from scheduling.jobs.<name>.overlap over the option's
// skip) the latest missed slot runs right after, at 2m30s.
func TestJob_S7_OverlapFromCodeAndConfig(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		opt  schedulingfx.JobOption
		want int64
	}{
		{"default skip", nil, nil, 1},
		{"option buffer_one", nil, schedulingfx.Overlap(scheduling.OverlapBufferOne), 2},
		{"config buffer_one over option skip", []string{"HOSTLOOM_SCHEDULING__JOBS__SLOW__OVERLAP=buffer_one"}, schedulingfx.Overlap(scheduling.OverlapSkip), 2},
		{"config skip over option buffer_one", []string{"HOSTLOOM_SCHEDULING__JOBS__SLOW__OVERLAP=skip"}, schedulingfx.Overlap(scheduling.OverlapBufferOne), 1},
	}
	for _, tt := range tests {
		for _, withModules := range []bool{false, true} {
			t.Run(tt.name+map[bool]string{false: "/no modules", true: "/modules"}[withModules], func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var starts atomic.Int64
					slow := func(ctx context.Context) error {
						starts.Add(1)
						select {
						case <-time.After(150 * time.Second):
						case <-ctx.Done():
						}
						return nil
					}
					opts := []fx.Option{withEnv(tt.env...), lockingfx.Module, leadershipfx.Role("billing"),
						schedulingfx.Job("billing", "slow", "@every 1m", slow, tt.opt)}
					if withModules {
						opts = append(opts, schedulingfx.Module, leadershipfx.Module)
					}
					app := fxtest.New(t, opts...)
					app.RequireStart()
					time.Sleep(160 * time.Second)
					synctest.Wait()
					if got := starts.Load(); got != tt.want {
						t.Errorf("%d runs started by 2m40s, want %d", got, tt.want)
					}
					app.RequireStop()
				})
			})
		}
	}
}

// TestJob_S9_RecoverNeedsAJobStore: Recover reaches the job: over a
// disabled lock (no slot store) fx.New fails naming the job.
func TestJob_S9_RecoverNeedsAJobStore(t *testing.T) {
	err := fx.New(fx.NopLogger,
		configfx.Module("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=disabled"})),
		lockingfx.Module, leadershipfx.Role("billing"),
		schedulingfx.Job("billing", "invoices", "@hourly", func(context.Context) error { return nil }, schedulingfx.Recover()),
	).Err()
	if err == nil || !strings.Contains(err.Error(), `job "invoices": Recover needs a slot store`) || strings.Contains(err.Error(), "could not build") {
		t.Fatalf("fx.New error %v", err)
	}
}

// TestJob_S8_CatchUpFromConfig: scheduling.jobs.<name>.catch_up none over
// the option's latest: the slot due at the start instant is not caught up.
func TestJob_S8_CatchUpFromConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  []string
		want int64
	}{{"option latest", nil, 1}, {"config none over option latest", []string{"HOSTLOOM_SCHEDULING__JOBS__TICK__CATCH_UP=none"}, 0}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var runs atomic.Int64
				app := fxtest.New(t, withEnv(tt.env...), lockingfx.Module, leadershipfx.Role("billing"),
					schedulingfx.Job("billing", "tick", "@hourly", func(context.Context) error { runs.Add(1); return nil },
						schedulingfx.CatchUp(scheduling.CatchUpLatest)))
				app.RequireStart()
				time.Sleep(time.Minute)
				synctest.Wait()
				app.RequireStop()
				if runs.Load() != tt.want {
					t.Fatalf("%d runs in the first minute, want %d (the slot due at start caught up: %t)", runs.Load(), tt.want, tt.want == 1)
				}
			})
		})
	}
}

// TestJob_S10_PausedFromConfig: scheduling.jobs.<name>.paused true pauses
// the job through the store when the scheduler starts: no run, and the
// stored state says paused; the run records carry the elector's identity
// once resumed.
func TestJob_S10_PausedFromConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int64
		var s *schedulingfx.Schedulers
		app := fxtest.New(t, withEnv("HOSTLOOM_SCHEDULING__JOBS__TICK__PAUSED=true", "HOSTLOOM_LEADERSHIP__IDENTITY=pod-7"),
			lockingfx.Module, leadershipfx.Role("billing"),
			schedulingfx.Job("billing", "tick", "@every 1m", func(context.Context) error { runs.Add(1); return nil }),
			schedulingfx.Module, leadershipfx.Module, fx.Populate(&s))
		app.RequireStart()
		time.Sleep(3*time.Minute + time.Second)
		synctest.Wait()
		if runs.Load() != 0 {
			t.Fatalf("a paused job ran %d times", runs.Load())
		}
		ctx := context.Background()
		if err := s.For("billing").Resume(ctx, "tick"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if runs.Load() != 1 {
			t.Fatalf("%d runs in the minute after Resume, want 1", runs.Load())
		}
		h, err := s.For("billing").History(ctx, "tick", 1)
		if err != nil || len(h) != 1 || h[0].Identity != "pod-7" {
			t.Fatalf("history %+v %v, want one run by pod-7 (the elector's identity)", h, err)
		}
		app.RequireStop()
	})
}

// TestJob_ConfigErrors: a key for an unknown job fails fx.New naming it,
// its source and the app's jobs; paused without a job store names the
// key.
func TestJob_ConfigErrors(t *testing.T) {
	noop := func(context.Context) error { return nil }
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{"unknown job", []string{"HOSTLOOM_LOCKING__PROVIDER=memory", "HOSTLOOM_SCHEDULING__JOBS__INVOICE__OVERLAP=skip"},
			[]string{"config: scheduling.jobs.invoice: names no job of the app; jobs: \"invoices\", \"reports\" (env HOSTLOOM_SCHEDULING__JOBS__INVOICE__OVERLAP)"}},
		{"paused without job store", []string{"HOSTLOOM_LOCKING__PROVIDER=disabled", "HOSTLOOM_SCHEDULING__JOBS__INVOICES__PAUSED=true"},
			[]string{"config: scheduling.jobs.invoices.paused: needs a slot store that keeps job records", "(env HOSTLOOM_SCHEDULING__JOBS__INVOICES__PAUSED)"}},
	}
	for _, tt := range tests {
		for _, withModules := range []bool{false, true} {
			t.Run(tt.name+map[bool]string{false: "/no modules", true: "/modules"}[withModules], func(t *testing.T) {
				opts := []fx.Option{fx.NopLogger, configfx.Module("", config.WithEnviron(tt.env)), lockingfx.Module,
					leadershipfx.Role("billing"), leadershipfx.Role("reports"),
					schedulingfx.Job("billing", "invoices", "@hourly", noop), schedulingfx.Job("reports", "reports", "@daily", noop)}
				if withModules {
					opts = append(opts, schedulingfx.Module, leadershipfx.Module)
				}
				err := fx.New(opts...).Err()
				if err == nil {
					t.Fatal("fx.New succeeded")
				}
				var fe *config.FieldError
				if !errors.As(err, &fe) || strings.Contains(err.Error(), "could not build") {
					t.Errorf("not the config's error: %v", err)
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
					}
				}
			})
		}
	}
}
