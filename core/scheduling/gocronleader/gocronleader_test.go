package gocronleader_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-co-op/gocron/v2"
	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/scheduling/gocronleader"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestNew_RejectsNil(t *testing.T) {
	if _, err := gocronleader.New(nil); err == nil {
		t.Error("New(nil) accepted")
	}
	var f *leadershiptest.Fake
	if _, err := gocronleader.New(f); err == nil {
		t.Error("New(typed nil) accepted")
	}
}

func TestElector_IsLeaderAnswersFromLocalState(t *testing.T) {
	f := leadershiptest.NewFake("inventory")
	e, err := gocronleader.New(f)
	if err != nil {
		t.Fatal(err)
	}
	err = e.IsLeader(context.Background())
	if !errors.Is(err, gocronleader.ErrNotLeader) || !strings.Contains(err.Error(), `"inventory"`) {
		t.Errorf("follower IsLeader = %v, want ErrNotLeader naming the role", err)
	}
	f.SetLeader(true)
	// A cancelled ctx does not matter: no I/O is made.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.IsLeader(ctx); err != nil {
		t.Errorf("leader IsLeader = %v", err)
	}
	f.SetLeader(false)
	if err := e.IsLeader(context.Background()); !errors.Is(err, gocronleader.ErrNotLeader) {
		t.Errorf("after loss IsLeader = %v", err)
	}
}

func TestTask_CtxEndsWithTheTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := leadershiptest.NewFake("inventory")
		var calls atomic.Int32
		task := gocronleader.Task(f, func(ctx context.Context) error {
			calls.Add(1)
			<-ctx.Done()
			return context.Cause(ctx)
		})
		if err := task(context.Background()); !errors.Is(err, gocronleader.ErrNotLeader) || calls.Load() != 0 {
			t.Fatalf("follower task = %v after %d calls, want ErrNotLeader and no call", err, calls.Load())
		}

		f.SetLeader(true)
		done := make(chan error, 1)
		go func() { done <- task(context.Background()) }()
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("task returned while leading: %v", err)
		default:
		}
		f.SetLeader(false)
		if err := <-done; !errors.Is(err, gocronleader.ErrNotLeader) {
			t.Errorf("task after loss = %v, want the cause ErrNotLeader", err)
		}

		// gocron's own job context still ends the run.
		f.SetLeader(true)
		jobCtx, cancel := context.WithCancel(context.Background())
		go func() { done <- task(jobCtx) }()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("task after job ctx cancel = %v", err)
		}
	})
}

// waitFor polls cond on real time: gocron runs on real time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestElector_WithRealGocron runs a real gocron scheduler with the
// Elector: the job runs while the fake leads and not while it follows.
func TestElector_WithRealGocron(t *testing.T) {
	f := leadershiptest.NewFake("inventory")
	e, err := gocronleader.New(f)
	if err != nil {
		t.Fatal(err)
	}
	asked := &countingElector{Elector: e}
	s, err := gocron.NewScheduler(gocron.WithDistributedElector(asked))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}()
	var runs atomic.Int64
	_, err = s.NewJob(gocron.DurationJob(50*time.Millisecond),
		gocron.NewTask(gocronleader.Task(f, func(context.Context) error {
			runs.Add(1)
			return nil
		})),
		gocron.WithSingletonMode(gocron.LimitModeReschedule))
	if err != nil {
		t.Fatal(err)
	}
	s.Start()

	// Follower: gocron ticks, the elector refuses every run.
	time.Sleep(300 * time.Millisecond)
	if n := runs.Load(); n != 0 {
		t.Fatalf("%d runs while following", n)
	}
	if asked.refused.Load() == 0 {
		t.Fatal("gocron never asked the elector while following")
	}

	f.SetLeader(true)
	waitFor(t, "runs while leading", func() bool { return runs.Load() >= 3 })

	f.SetLeader(false)
	time.Sleep(100 * time.Millisecond) // a run gocron let through just before the loss may still finish
	before, refused := runs.Load(), asked.refused.Load()
	time.Sleep(300 * time.Millisecond) // six intervals as follower
	if n := runs.Load(); n != before {
		t.Fatalf("%d runs while following", n-before)
	}
	if asked.refused.Load() == refused {
		t.Fatal("gocron never asked the elector while following")
	}

	f.SetLeader(true)
	waitFor(t, "runs in the next term", func() bool { return runs.Load() > before })
}

// countingElector counts the runs the Elector refused.
type countingElector struct {
	*gocronleader.Elector
	refused atomic.Int64
}

func (c *countingElector) IsLeader(ctx context.Context) error {
	err := c.Elector.IsLeader(ctx)
	if err != nil {
		c.refused.Add(1)
	}
	return err
}
