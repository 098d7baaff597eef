package leadership

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// A process paused past its deadline resumes before its loop or any timer
// runs: every read must see the term ended by the clock alone. The loop
// never runs here (the elector is not started), so only the readers'
// own deadline check can end the term.
func TestElector_G3_ReadsCheckDeadlineWithoutTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock, err := locking.New(memlock.New(), locking.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		e, err := NewElector("r", lock, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		token := &termToken{Context: ctx, cancel: cancel, e: e, term: 1, fence: 7}
		deadline := time.Now().Add(time.Second)
		e.state.Store(&termState{leader: true, term: 1, fence: 7, deadline: deadline, token: token, led: make(chan struct{})})
		derived, stop := context.WithTimeout(e.Token(), time.Hour)
		defer stop()

		if !e.IsLeader() || e.Token().Err() != nil || Assert(derived) != nil || e.Fence() != 7 {
			t.Fatal("a live term must read as leading")
		}
		if f, ok := FenceFrom(derived); !ok || f != 7 {
			t.Fatalf("FenceFrom(derived) = %d, %v; want 7, true", f, ok)
		}
		time.Sleep(time.Second) // now == deadline: the term has ended (pinned choice)
		if e.IsLeader() {
			t.Fatal("IsLeader true at the deadline instant")
		}
		if !errors.Is(Assert(derived), ErrNotLeader) {
			t.Fatal("Assert(derived) nil at the deadline instant")
		}
		if e.Fence() != 0 {
			t.Fatalf("Fence = %d after the deadline, want 0", e.Fence())
		}
		if err := e.Token().Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Token().Err() = %v at the deadline, want context.Canceled", err)
		}
		select {
		case <-e.Token().Done():
		default:
			t.Fatal("Err reported the end but Done is still open")
		}
		if !errors.Is(context.Cause(e.Token()), ErrNotLeader) {
			t.Fatalf("cause %v does not match ErrNotLeader", context.Cause(e.Token()))
		}
		select {
		case <-derived.Done():
		default:
			t.Fatal("a context derived from the token is not done")
		}
		if f, ok := FenceFrom(derived); !ok || f != 7 {
			t.Fatalf("FenceFrom after the end = %d, %v; the ended term's fence is still reported", f, ok)
		}
	})
}

func TestAssert_G3_ContextWithoutTerm(t *testing.T) {
	if err := Assert(context.Background()); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("Assert(Background) = %v, want ErrNotLeader", err)
	}
	if f, ok := FenceFrom(context.Background()); ok || f != 0 {
		t.Fatalf("FenceFrom(Background) = %d, %v", f, ok)
	}
	if testing.AllocsPerRun(100, func() { _ = Assert(context.Background()) }) != 0 {
		t.Fatal("Assert allocates")
	}
}
