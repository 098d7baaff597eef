package leadership_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
)

// TestElector_E8_GracefulStopDeliversLossBeforeRelease: a leader's
// OnChange(false) subscriber, a slow one, has returned before the lease
// is released, so the successor's OnChange(true) comes after it: no
// subscriber sees two leaders through callbacks in a graceful handover.
// Over Stop, Resign and HandOver.
func TestElector_E8_GracefulStopDeliversLossBeforeRelease(t *testing.T) {
	ends := map[string]func(a *leadership.Elector, ctx context.Context) error{
		"Stop":     (*leadership.Elector).Stop,
		"Resign":   (*leadership.Elector).Resign,
		"HandOver": func(a *leadership.Elector, ctx context.Context) error { return a.HandOver(ctx, "b") },
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lock := memLock(t)
				a := mustElector(t, "billing", lock, fastOpts(), leadership.WithIdentity("a"))
				b := mustElector(t, "billing", lock, fastOpts(), leadership.WithIdentity("b"))
				mustStart(t, a)
				synctest.Wait()
				mustStart(t, b)
				synctest.Wait()
				var mu sync.Mutex
				var order []string
				heldAtLoss := false
				note := func(s string) {
					mu.Lock()
					defer mu.Unlock()
					order = append(order, s)
				}
				a.OnChange(func(c leadership.Change) {
					if c.IsLeader {
						return
					}
					time.Sleep(time.Millisecond) // a slow subscriber
					h, held, err := lock.Holder(context.Background(), "leader:billing")
					mu.Lock()
					heldAtLoss = held && err == nil && h.Owner == "a"
					mu.Unlock()
					note("a lost")
				})
				a.OnNewLeader(func(id string) { note("a saw " + id) })
				b.OnChange(func(c leadership.Change) {
					if c.IsLeader {
						note("b leads")
					}
				})
				if err := end(a, context.Background()); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if !b.IsLeader() {
					t.Fatal("b does not lead")
				}
				mu.Lock()
				got, heldAtLoss := slices.Clone(order), heldAtLoss
				mu.Unlock()
				if !heldAtLoss {
					t.Error("a's lease was released before its OnChange(false) subscriber returned")
				}
				lost, led := -1, -1
				for i, s := range got {
					switch s {
					case "a lost":
						lost = i
					case "b leads":
						led = i
					}
				}
				if lost < 0 || led < lost {
					t.Errorf("order %v: want a's loss before b's lead", got)
				}
				mustStop(t, a)
				mustStop(t, b)
			})
		})
	}
}
