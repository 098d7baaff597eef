package leadership_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// Two replicas, each with an Elector over one memlock and a Channel on
// it: only the leader's items reach its reader (C1); resigning wakes the
// leader's producer blocked on capacity and keeps its accepted items
// readable (C4, C6); the new leader's channel admits (C1, C3 tail).
func TestChannel_C1_C4_C6_OverElectorOnMemlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock, err := memlock.NewLock(locking.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		newReplica := func(id string) (*leadership.Elector, *leadership.Channel[int], *chanTelemetry) {
			tel := newChanTelemetry()
			e, err := leadership.NewElector("billing", lock, leadership.DefaultOptions(),
				leadership.WithIdentity(id))
			if err != nil {
				t.Fatal(err)
			}
			c, err := leadership.NewChannel[int]("jobs", e, chanOpts(2, leadership.Wait), tel.opts...)
			if err != nil {
				t.Fatal(err)
			}
			return e, c, tel
		}
		ea, ca, tela := newReplica("a")
		eb, cb, telb := newReplica("b")
		defer func() {
			for _, e := range []*leadership.Elector{ea, eb} {
				if err := e.Stop(ctx); err != nil {
					t.Errorf("Stop: %v", err)
				}
			}
			ca.Close()
			cb.Close()
		}()

		// Follower before Start: accepted and discarded.
		if err := ca.Write(ctx, -1); err != nil {
			t.Fatalf("Write before leading = %v", err)
		}
		if err := ea.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := ea.WaitForLeadership(ctx); err != nil {
			t.Fatal(err)
		}
		if err := eb.Start(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // OnChange delivered; b tried and follows
		if !ea.IsLeader() || eb.IsLeader() {
			t.Fatalf("leaders a=%v b=%v, want a only", ea.IsLeader(), eb.IsLeader())
		}

		for i := range 2 {
			if err := ca.Write(ctx, i); err != nil {
				t.Fatal(err)
			}
			if err := cb.Write(ctx, 100+i); err != nil {
				t.Fatal(err)
			}
		}
		if ca.Len() != 2 || cb.Len() != 0 {
			t.Fatalf("Len a=%d b=%d, want 2 and 0", ca.Len(), cb.Len())
		}

		// a's producer blocks on a full buffer until a resigns.
		blocked := make(chan error, 1)
		go func() { blocked <- ca.Write(ctx, 2) }()
		synctest.Wait()
		if len(blocked) != 0 {
			t.Fatal("Write on a full leader's channel did not block")
		}
		if err := ea.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		select {
		case err := <-blocked:
			if err != nil {
				t.Fatalf("woken Write = %v, want nil (discarded)", err)
			}
		default:
			t.Fatal("resigning did not wake the blocked producer")
		}
		if got := tela.drops(t, "jobs")["follower"]; got != 2 {
			t.Errorf("a follower drops = %d, want 2 (before Start and the woken write)", got)
		}

		// b takes over within its retry cadence; its channel admits.
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := eb.WaitForLeadership(wctx); err != nil {
			t.Fatalf("b did not take over: %v", err)
		}
		synctest.Wait()
		if err := cb.Write(ctx, 200); err != nil {
			t.Fatal(err)
		}
		if v, err := cb.Read(ctx); err != nil || v != 200 {
			t.Fatalf("b Read = %d, %v; want 200", v, err)
		}
		if got := telb.drops(t, "jobs")["follower"]; got != 2 {
			t.Errorf("b follower drops = %d, want 2", got)
		}
		if s := summaries(telb.logs); len(s) != 1 || s[0].ContextMap()["tail"] != true {
			t.Errorf("b summaries on becoming leader = %v, want one tail", s)
		}

		// a's accepted items stay readable after the loss (C6).
		var got []int
		for range 2 {
			v, err := ca.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		}
		if !slices.Equal(got, []int{0, 1}) {
			t.Fatalf("a after loss = %v, want [0 1]", got)
		}
		if err := ca.Write(ctx, 3); err != nil || ca.Len() != 0 {
			t.Fatalf("a follower Write = %v with Len %d, want nil and 0", err, ca.Len())
		}
		ca.Close()
		if _, err := ca.Read(ctx); !errors.Is(err, leadership.ErrChannelClosed) {
			t.Fatalf("Read after Close = %v", err)
		}
	})
}

// A write right after WaitForLeadership returns reaches the reader even
// while the channel's OnChange notification is still being delivered (a
// slow subscriber ahead of it): admission follows IsLeader (C1).
func TestChannel_C1_WriteRightAfterWaitForLeadershipIsAdmitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock, err := memlock.NewLock(locking.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		e, err := leadership.NewElector("billing", lock, leadership.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		gate := make(chan struct{})
		open := sync.OnceFunc(func() { close(gate) })
		defer open()
		e.OnChange(func(leadership.Change) { <-gate }) // delivered before the channel's
		c, err := leadership.NewChannel[int]("jobs", e, chanOpts(2, leadership.Wait))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := e.WaitForLeadership(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.Write(ctx, 7); err != nil {
			t.Fatal(err)
		}
		if ok, err := c.WaitToWrite(ctx); !ok || err != nil {
			t.Fatalf("WaitToWrite = %v, %v; want true (room for one more)", ok, err)
		}
		if c.Len() != 1 {
			t.Fatalf("Len = %d after a leader's write, want 1 (dropped as a follower's)", c.Len())
		}
		open()
		if v, err := c.Read(ctx); err != nil || v != 7 {
			t.Fatalf("Read = %d, %v; want 7", v, err)
		}
		if err := e.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
