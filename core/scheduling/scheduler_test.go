package scheduling_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/scheduling"
)

func nop(context.Context) error { return nil }

func starts(runs []interval) []time.Time {
	out := make([]time.Time, len(runs))
	for i, r := range runs {
		out[i] = r.start
	}
	return out
}

func wantStarts(t *testing.T, runs []interval, t0 time.Time, minutes ...int) {
	t.Helper()
	if len(runs) != len(minutes) {
		t.Fatalf("%d runs at %v, want %d at minutes %v", len(runs), starts(runs), len(minutes), minutes)
	}
	for i, m := range minutes {
		if want := t0.Add(time.Duration(m) * time.Minute); !runs[i].start.Equal(want) {
			t.Errorf("run %d started at %v, want %v", i, runs[i].start.Sub(t0), want.Sub(t0))
		}
	}
}

func TestScheduler_S1_RunsOnlyWhileLeading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		m := newMeter()
		f := leadershiptest.NewFake("billing")
		s := newScheduler(t, f, scheduling.WithMeterProvider(m.provider))
		var rec recorder
		mustAdd(t, s, scheduling.Job{Name: "tick", Schedule: scheduling.Every(time.Minute), Run: rec.job("a", time.Second)})
		mustStart(t, s)

		time.Sleep(5*time.Minute + 30*time.Second)
		synctest.Wait()
		if n := len(rec.snapshot()); n != 0 {
			t.Fatalf("%d runs while following", n)
		}
		if n := m.sum(t, scheduling.MetricSkipped, job("tick"), reason(scheduling.SkipFollower)); n != 5 {
			t.Errorf("skipped as follower = %d, want 5", n)
		}

		f.SetLeader(true)
		time.Sleep(3 * time.Minute) // slots 6, 7, 8
		synctest.Wait()
		wantStarts(t, rec.snapshot(), t0, 6, 7, 8)

		f.SetLeader(false)
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		wantStarts(t, rec.snapshot(), t0, 6, 7, 8)
		if n := m.sum(t, scheduling.MetricSkipped, job("tick"), reason(scheduling.SkipFollower)); n != 8 {
			t.Errorf("skipped as follower = %d, want 8", n)
		}
		if n := m.sum(t, scheduling.MetricRuns, job("tick"), outcome("success")); n != 3 {
			t.Errorf("successful runs = %d, want 3", n)
		}

		// Every later term resumes.
		f.SetLeader(true)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		wantStarts(t, rec.snapshot(), t0, 6, 7, 8, 12, 13)
	})
}

func TestScheduler_S1_LeadershipHeldAtStartCounts_StartCtxBoundsStartOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		f := leadershiptest.NewFake("billing")
		f.SetLeader(true)
		s := newScheduler(t, f)
		var rec recorder
		mustAdd(t, s, scheduling.Job{Name: "tick", Schedule: scheduling.Every(time.Minute), Run: rec.job("a", time.Second)})
		ctx, cancel := context.WithCancel(context.Background())
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		time.Sleep(2*time.Minute + time.Second)
		synctest.Wait()
		wantStarts(t, rec.snapshot(), t0, 1, 2)
		if err := s.Start(context.Background()); !errors.Is(err, scheduling.ErrStarted) {
			t.Errorf("second Start = %v, want ErrStarted", err)
		}
	})
}

func TestScheduler_S1_RunCtxEndsWhenTermEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter()
		f := leadershiptest.NewFake("billing")
		f.SetLeader(true)
		s := newScheduler(t, f, scheduling.WithMeterProvider(m.provider))
		var rec recorder
		mustAdd(t, s, scheduling.Job{Name: "long", Schedule: scheduling.Every(time.Hour), Run: rec.job("a", 24*time.Hour)})
		mustStart(t, s)
		time.Sleep(time.Hour + 10*time.Minute)
		synctest.Wait()
		if info := s.Jobs()[0]; !info.Running {
			t.Fatalf("job not running: %+v", info)
		}
		lost := time.Now()
		f.SetLeader(false)
		synctest.Wait()
		runs := rec.snapshot()
		if len(runs) != 1 || !runs[0].end.Equal(lost) || !errors.Is(runs[0].err, context.Canceled) {
			t.Fatalf("runs = %+v, want one ended by the lost term at %v", runs, lost)
		}
		info := s.Jobs()[0]
		if info.Running || info.LastOutcome != scheduling.Canceled || !errors.Is(info.LastError, context.Canceled) {
			t.Errorf("job info = %+v", info)
		}
		if n := m.sum(t, scheduling.MetricRuns, outcome("canceled")); n != 1 {
			t.Errorf("canceled runs = %d, want 1", n)
		}
	})
}

func TestScheduler_S1_Timeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter()
		f := leadershiptest.NewFake("billing")
		f.SetLeader(true)
		s := newScheduler(t, f, scheduling.WithMeterProvider(m.provider))
		var rec recorder
		mustAdd(t, s, scheduling.Job{Name: "slow", Schedule: scheduling.Every(time.Hour), Timeout: 10 * time.Second, Run: rec.job("a", time.Hour)})
		mustStart(t, s)
		time.Sleep(time.Hour + time.Minute)
		synctest.Wait()
		runs := rec.snapshot()
		if len(runs) != 1 || runs[0].end.Sub(runs[0].start) != 10*time.Second || !errors.Is(runs[0].err, context.DeadlineExceeded) {
			t.Fatalf("runs = %+v, want one cut at 10s", runs)
		}
		if info := s.Jobs()[0]; info.LastOutcome != scheduling.Timeout {
			t.Errorf("outcome = %v, want timeout", info.LastOutcome)
		}
		if n := m.sum(t, scheduling.MetricRuns, outcome("timeout")); n != 1 {
			t.Errorf("timeout runs = %d, want 1", n)
		}
	})
}

func TestScheduler_S2_NoOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		m := newMeter()
		f := leadershiptest.NewFake("billing")
		f.SetLeader(true)
		s := newScheduler(t, f, scheduling.WithMeterProvider(m.provider))
		var rec recorder
		mustAdd(t, s, scheduling.Job{Name: "slow", Schedule: scheduling.Every(time.Minute), Run: rec.job("a", 150*time.Second)})
		mustStart(t, s)
		time.Sleep(9*time.Minute + 40*time.Second) // the run of slot 7 ends at 9m30s
		synctest.Wait()
		runs := rec.snapshot()
		wantStarts(t, runs, t0, 1, 4, 7)
		noOverlap(t, runs)
		if n := m.sum(t, scheduling.MetricSkipped, job("slow"), reason(scheduling.SkipOverlap)); n != 6 {
			t.Errorf("skipped for overlap = %d, want 6 (slots 2, 3, 5, 6, 8, 9)", n)
		}
	})
}

func TestScheduler_S3_PanicsAndErrorsAreSurvived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		m := newMeter()
		core, logs := observer.New(zap.DebugLevel)
		f := leadershiptest.NewFake("billing")
		f.SetLeader(true)
		s := newScheduler(t, f, scheduling.WithMeterProvider(m.provider), scheduling.WithLogger(zap.New(core)))
		var calls atomic.Int32
		var at []time.Time
		mustAdd(t, s, scheduling.Job{Name: "flaky", Schedule: scheduling.Every(time.Minute), Run: func(ctx context.Context) error {
			at = append(at, time.Now())
			switch calls.Add(1) {
			case 1:
				panic("boom")
			case 2:
				return errors.New("downstream unavailable")
			}
			return nil
		}})
		mustStart(t, s)

		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		info := s.Jobs()[0]
		var pe *scheduling.PanicError
		if info.LastOutcome != scheduling.Panic || !errors.As(info.LastError, &pe) || pe.Value != "boom" || len(pe.Stack) == 0 {
			t.Fatalf("after a panic: %+v", info)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if info := s.Jobs()[0]; info.LastOutcome != scheduling.Failure || info.LastError == nil || info.LastError.Error() != "downstream unavailable" {
			t.Fatalf("after an error: %+v", info)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		info = s.Jobs()[0]
		if info.LastOutcome != scheduling.Success || info.LastError != nil || !info.LastSuccess.Equal(t0.Add(4*time.Minute)) {
			t.Fatalf("after a success: %+v", info)
		}
		for i, want := range []time.Duration{1, 2, 3, 4} {
			if at[i].Sub(t0) != want*time.Minute {
				t.Errorf("call %d at %v, want %v (not delayed)", i, at[i].Sub(t0), want*time.Minute)
			}
		}
		for _, c := range []struct {
			outcome string
			n       int64
		}{{"panic", 1}, {"failure", 1}, {"success", 2}} {
			if n := m.sum(t, scheduling.MetricRuns, job("flaky"), outcome(c.outcome)); n != c.n {
				t.Errorf("runs %s = %d, want %d", c.outcome, n, c.n)
			}
		}
		if n := logs.FilterMessage("SchedulerJobPanicked").FilterField(zap.String("job", "flaky")).Len(); n != 1 {
			t.Errorf("panic logged %d times, want 1", n)
		}
		if n := logs.FilterMessage("SchedulerJobFailed").Len(); n != 1 {
			t.Errorf("failure logged %d times, want 1", n)
		}
	})
}

func TestScheduler_S4_DurationAndLastSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		m := newMeter()
		f := leadershiptest.NewFake("billing")
		f.SetLeader(true)
		s := newScheduler(t, f, scheduling.WithMeterProvider(m.provider))
		var rec recorder
		mustAdd(t, s, scheduling.Job{Name: "report", Schedule: scheduling.Every(time.Minute), Run: rec.job("a", 3*time.Second)})
		mustStart(t, s)
		time.Sleep(2*time.Minute + 10*time.Second)
		synctest.Wait()

		var hist, gauge bool
		for _, sm := range m.collect(t).ScopeMetrics {
			if sm.Scope.Name != "github.com/hostloom/hostloom/core/scheduling" {
				t.Errorf("scope = %q", sm.Scope.Name)
			}
			for _, mt := range sm.Metrics {
				switch mt.Name {
				case scheduling.MetricRunDuration:
					h := mt.Data.(metricdata.Histogram[float64])
					for _, p := range h.DataPoints {
						if matches(p.Attributes, nil) && p.Count == 2 && p.Sum == 6 {
							hist = true
						}
					}
				case scheduling.MetricLastSuccess:
					g := mt.Data.(metricdata.Gauge[float64])
					for _, p := range g.DataPoints {
						want := float64(t0.Add(2*time.Minute).UnixNano()) / 1e9
						if matches(p.Attributes, nil) && p.Value == want {
							gauge = true
						}
					}
				}
			}
		}
		if !hist {
			t.Error("no duration histogram with 2 runs of 3s")
		}
		if !gauge {
			t.Error("no last-success gauge at the second run's start")
		}
	})
}

func TestScheduler_S5_StopCancelsAndWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := leadershiptest.NewFake("billing")
		f.SetLeader(true)
		s, err := scheduling.New(f)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var cancelledAt, returnedAt time.Time
		mustAdd(t, s, scheduling.Job{Name: "stubborn", Schedule: scheduling.Every(time.Minute), Run: func(ctx context.Context) error {
			<-ctx.Done()
			mu.Lock()
			cancelledAt = time.Now()
			mu.Unlock()
			time.Sleep(30 * time.Second) // ignores its ctx for a while
			mu.Lock()
			returnedAt = time.Now()
			mu.Unlock()
			return ctx.Err()
		}})
		mustStart(t, s)
		time.Sleep(70 * time.Second)
		stopAt := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Stop bounded by 5s = %v, want DeadlineExceeded", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if !cancelledAt.Equal(stopAt) {
			t.Errorf("run ctx cancelled at %v, want at Stop %v", cancelledAt, stopAt)
		}
		mu.Unlock()
		if err := s.Stop(context.Background()); err != nil {
			t.Fatalf("second Stop = %v", err)
		}
		mu.Lock()
		if returnedAt.IsZero() || time.Now().Before(returnedAt) {
			t.Errorf("Stop returned at %v before the run returned at %v", time.Now(), returnedAt)
		}
		if err := s.Start(context.Background()); !errors.Is(err, scheduling.ErrStopped) {
			t.Errorf("Start after Stop = %v", err)
		}
		if err := s.Add(scheduling.Job{Name: "late", Schedule: scheduling.Every(time.Minute), Run: nop}); !errors.Is(err, scheduling.ErrStopped) {
			t.Errorf("Add after Stop = %v", err)
		}
	})
}

func TestScheduler_S5_StopBeforeStartIsSafe(t *testing.T) {
	f := leadershiptest.NewFake("billing")
	s, err := scheduling.New(f)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Stop(context.Background()); err != nil {
			t.Fatalf("Stop before Start = %v", err)
		}
	}
}

func TestScheduler_S6_AddRejects(t *testing.T) {
	store, err := scheduling.New(leadershiptest.NewFake("billing"), scheduling.WithSlotStore(newStoreNoBubble(t)))
	if err != nil {
		t.Fatal(err)
	}
	every := scheduling.Every(time.Minute)
	var nilCron *customSchedule
	feb30, err := scheduling.Cron("0 0 30 2 *")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		s     *scheduling.Scheduler
		job   scheduling.Job
		wants []string
	}{
		{"empty name", nil, scheduling.Job{Schedule: every, Run: nop}, []string{"job name is empty"}},
		{"space in name", nil, scheduling.Job{Name: "two words", Schedule: every, Run: nop}, []string{`"two words"`, "whitespace"}},
		{"duplicate", nil, scheduling.Job{Name: "dup", Schedule: every, Run: nop}, []string{`"dup"`, "duplicate"}},
		{"nil run", nil, scheduling.Job{Name: "j1", Schedule: every}, []string{`"j1"`, "nil Run"}},
		{"nil schedule", nil, scheduling.Job{Name: "j2", Run: nop}, []string{`"j2"`, "nil Schedule"}},
		{"typed nil schedule", nil, scheduling.Job{Name: "j3", Schedule: nilCron, Run: nop}, []string{`"j3"`, "nil Schedule"}},
		{"zero interval", nil, scheduling.Job{Name: "j4", Schedule: scheduling.Every(0), Run: nop}, []string{`"j4"`, "interval 0s"}},
		{"negative interval", nil, scheduling.Job{Name: "j5", Schedule: scheduling.Every(-time.Second), Run: nop}, []string{`"j5"`, "interval -1s"}},
		{"negative timeout", nil, scheduling.Job{Name: "j6", Schedule: every, Run: nop, Timeout: -time.Second}, []string{`"j6"`, "Timeout -1s"}},
		{"negative jitter", nil, scheduling.Job{Name: "j7", Schedule: every, Run: nop, Jitter: -time.Millisecond}, []string{`"j7"`, "Jitter -1ms"}},
		{"no future slot", nil, scheduling.Job{Name: "j8", Schedule: feb30, Run: nop}, []string{`"j8"`, "0 0 30 2 *", "no future slot"}},
		{"below store resolution", store, scheduling.Job{Name: "j9", Schedule: scheduling.Every(500 * time.Microsecond), Run: nop}, []string{`"j9"`, "500µs"}},
		{"slot key too long", store, scheduling.Job{Name: strings.Repeat("x", 600), Schedule: every, Run: nop}, []string{"slot key", "max_key_length"}},
	}
	plain, err := scheduling.New(leadershiptest.NewFake("billing"))
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, plain, scheduling.Job{Name: "dup", Schedule: every, Run: nop})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s
			if s == nil {
				s = plain
			}
			err := s.Add(tt.job)
			if err == nil {
				t.Fatal("Add accepted the job")
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if n := len(plain.Jobs()); n != 1 {
		t.Errorf("%d jobs after rejections, want 1", n)
	}
}

func TestNew_Rejects(t *testing.T) {
	if _, err := scheduling.New(nil); err == nil || !strings.Contains(err.Error(), "nil Leadership") {
		t.Errorf("New(nil) = %v", err)
	}
	var nilFake *leadershiptest.Fake
	if _, err := scheduling.New(nilFake); err == nil {
		t.Error("New(typed nil) accepted")
	}
	_, err := scheduling.New(leadershiptest.NewFake("r"), scheduling.WithMisfireWindow(-time.Second))
	if err == nil || !strings.Contains(err.Error(), "misfire window -1s") {
		t.Errorf("negative misfire window = %v", err)
	}
}

// customSchedule is a user-written Schedule.
type customSchedule struct{ d time.Duration }

func (c *customSchedule) Next(t time.Time) time.Time { return t.Add(c.d) }
func (c *customSchedule) String() string             { return "custom" }
