package leadership_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
)

// TestGoWork_H3_RunsUntilStopAndIsNamedMeanwhile: GoWork's fn runs from
// Start until Stop cancels its ctx; Stop waits for it; while it runs it is
// one Activity of the given kind and name (O2), afterwards none.
func TestGoWork_H3_RunsUntilStopAndIsNamedMeanwhile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		returned := make(chan struct{})
		w := leadership.GoWork("reader", "orders", func(ctx context.Context) {
			defer close(returned)
			<-ctx.Done()
			time.Sleep(time.Second) // it takes a while to wind down
		})
		if got := w.Running(); len(got) != 0 {
			t.Fatalf("Running before Start = %v, want none", got)
		}
		if err := w.Stop(context.Background()); err != nil {
			t.Fatalf("Stop before Start: %v", err)
		}
		begin := time.Now()
		if err := w.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		got := w.Running()
		if len(got) != 1 || got[0].Kind != "reader" || got[0].Name != "orders" || !got[0].Since.Equal(begin) {
			t.Fatalf("Running = %+v, want the reader orders since %v", got, begin)
		}
		if err := w.Start(context.Background()); err == nil || !strings.Contains(err.Error(), `reader "orders" started twice`) {
			t.Fatalf("second Start: %v", err)
		}
		if err := w.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-returned:
		default:
			t.Fatal("Stop returned before fn did")
		}
		if d := time.Since(begin); d != time.Second {
			t.Fatalf("Stop returned after %v, want fn's wind-down of 1s", d)
		}
		if got := w.Running(); len(got) != 0 {
			t.Fatalf("Running after Stop = %v, want none", got)
		}
	})
}

// TestGoWork_H3_StopBoundedByItsContext: a fn that has not returned when
// Stop's ctx ends leaves Stop with ctx's error and is still reported as
// running; a later Stop waits again.
func TestGoWork_H3_StopBoundedByItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		w := leadership.GoWork("job", "invoices", func(context.Context) { <-release })
		if err := w.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := w.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Stop of a fn that ignores its ctx: %v, want DeadlineExceeded", err)
		}
		if got := w.Running(); len(got) != 1 || got[0].Name != "invoices" {
			t.Fatalf("Running while fn runs on = %v", got)
		}
		close(release)
		if err := w.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := w.Running(); len(got) != 0 {
			t.Fatalf("Running after fn returned = %v", got)
		}
	})
}

// TestGoWork_NilFuncIsAnErrorAtStart: a nil fn fails Start, naming the
// work, instead of panicking on its goroutine.
func TestGoWork_NilFuncIsAnErrorAtStart(t *testing.T) {
	w := leadership.GoWork("reader", "orders", nil)
	if err := w.Start(context.Background()); err == nil || !strings.Contains(err.Error(), `reader "orders": nil func`) {
		t.Fatalf("Start with a nil func: %v", err)
	}
	if got := w.Running(); len(got) != 0 {
		t.Fatalf("Running = %v", got)
	}
}
