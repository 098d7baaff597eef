package locking_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// bare is a provider with the required methods only, issuing no fences
// and reporting no holder record (like a custom backend written before
// fences): it hides memlock's optional capabilities.
type bare struct{ p *memlock.Provider }

func (b bare) Acquire(ctx context.Context, r locking.AcquireRequest) (locking.AcquireResult, error) {
	res, err := b.p.Acquire(ctx, r)
	res.Fence, res.HolderValue = 0, ""
	return res, err
}

func (b bare) Extend(ctx context.Context, r locking.ExtendRequest) (locking.ExtendResult, error) {
	return b.p.Extend(ctx, r)
}

func (b bare) Release(ctx context.Context, r locking.ReleaseRequest) (bool, error) {
	return b.p.Release(ctx, r)
}

func TestBareProvider_G1_P1_NoFenceAndNotSupported(t *testing.T) {
	ctx := context.Background()
	l, err := locking.New(bare{memlock.New()}, locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	ls, err := l.TryAcquireAs(ctx, "job", time.Minute, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ls.(locking.Fenced); ok {
		t.Fatal("a lease from a provider without fences implements Fenced")
	}
	_, err = l.TryAcquire(ctx, "job", time.Minute)
	var held *locking.HeldError
	if !errors.As(err, &held) || held.Owner != "" {
		t.Fatalf("refusal = %v; want a HeldError without owner (the provider does not report it)", err)
	}
	if err := ls.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if c := l.Capabilities(); c != (locking.Capabilities{}) {
		t.Fatalf("Capabilities = %+v over a provider with only the required methods, want none", c)
	}
	for name, err := range map[string]error{
		"Subscribe":     func() error { _, err := l.Subscribe("job", func(locking.Event) {}); return err }(),
		"Holder":        func() error { _, _, err := l.Holder(ctx, "job"); return err }(),
		"Advance":       func() error { _, _, err := l.Advance(ctx, "job", 1); return err }(),
		"RequestResign": l.RequestResign(ctx, "job", ""),
		"Deregister":    l.Deregister(ctx, "job", "alice"),
		"Participants":  func() error { _, err := l.Participants(ctx, "job"); return err }(),
		"Inspect":       func() error { _, err := l.Inspect(ctx, "job"); return err }(),
		"Keys":          func() error { _, err := l.Keys(ctx, ""); return err }(),
	} {
		if !errors.Is(err, locking.ErrNotSupported) {
			t.Errorf("%s = %v, want ErrNotSupported", name, err)
		}
	}
	h, err := l.Acquire(ctx, "other", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if h.Fence() != 0 {
		t.Fatalf("Held.Fence = %d without fences, want 0", h.Fence())
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestDisabled_L4_NoFenceNoParticipants(t *testing.T) {
	ctx := context.Background()
	l, p := newLock(t, func(o *locking.Options) { o.Disabled = true })
	h, err := l.Acquire(ctx, "job", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if h.Fence() != 0 {
		t.Fatalf("disabled Held.Fence = %d, want 0", h.Fence())
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if ps, err := l.Participants(ctx, "job"); ps != nil || err != nil {
		t.Fatalf("disabled Participants = %v, %v; want none", ps, err)
	}
	if err := l.Deregister(ctx, "job", "x"); err != nil {
		t.Fatalf("disabled Deregister = %v", err)
	}
	if st, err := l.Inspect(ctx, "job"); err != nil || st.Held || st.Key != "job" {
		t.Fatalf("disabled Inspect = %+v, %v", st, err)
	}
	if keys, err := l.Keys(ctx, ""); keys != nil || err != nil {
		t.Fatalf("disabled Keys = %v, %v", keys, err)
	}
	if err := l.RequestResign(ctx, "job", ""); !errors.Is(err, locking.ErrNotSupported) {
		t.Fatalf("disabled RequestResign = %v, want ErrNotSupported", err)
	}
	if _, err := l.Subscribe("job", func(locking.Event) {}); !errors.Is(err, locking.ErrNotSupported) {
		t.Fatalf("disabled Subscribe = %v, want ErrNotSupported", err)
	}
	if c := l.Capabilities(); c != (locking.Capabilities{}) {
		t.Fatalf("disabled Capabilities = %+v, want none", c)
	}
	if n := p.Len(); n != 0 {
		t.Fatalf("disabled lock stored %d leases", n)
	}
}

func TestKeys_O1_BadPatternNamed(t *testing.T) {
	l, _ := newLock(t, nil)
	_, err := l.Keys(context.Background(), "[x")
	if err == nil || !strings.Contains(err.Error(), `"[x"`) {
		t.Fatalf("Keys([x) = %v, want an error naming the pattern", err)
	}
}

func TestParticipants_P1_VanishAfterTwoLeases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		l, _ := newLock(t, nil)
		ls, err := l.TryAcquireAs(ctx, "job", 10*time.Second, "alice")
		if err != nil {
			t.Fatal(err)
		}
		// Extending every 5s keeps alice; Since stays at the first request.
		start := time.Now()
		for range 4 {
			time.Sleep(5 * time.Second)
			if err := ls.Extend(ctx, 10*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		ps, err := l.Participants(ctx, "job")
		if err != nil || len(ps) != 1 || !ps[0].Since.Equal(start) {
			t.Fatalf("Participants = %v, %v; want alice since %v", ps, err, start)
		}
		// A crash: no request for just under two leases, then past them.
		time.Sleep(20*time.Second - time.Nanosecond)
		if ps, _ := l.Participants(ctx, "job"); len(ps) != 1 {
			t.Fatalf("alice vanished before two leases: %v", ps)
		}
		time.Sleep(time.Nanosecond)
		if ps, _ := l.Participants(ctx, "job"); len(ps) != 0 {
			t.Fatalf("alice still a participant two leases after her last request: %v", ps)
		}
		// A later registration starts a new Since.
		if _, err := l.TryAcquireAs(ctx, "job", 10*time.Second, "alice"); err != nil {
			t.Fatal(err)
		}
		if ps, _ := l.Participants(ctx, "job"); len(ps) != 1 || !ps[0].Since.Equal(time.Now()) {
			t.Fatalf("Participants after re-registering = %v, want Since now", ps)
		}
	})
}

func TestEventKind_P2_String(t *testing.T) {
	for k, want := range map[locking.EventKind]string{
		locking.EventReleased: "released", locking.EventAcquired: "acquired", locking.EventResign: "resign",
		locking.EventSubscribed: "subscribed", locking.EventUnsubscribed: "unsubscribed", 0: "unknown",
	} {
		if k.String() != want {
			t.Errorf("EventKind(%d).String() = %q, want %q", k, k.String(), want)
		}
	}
}

func TestHeldError_P2_NamesTheHolder(t *testing.T) {
	for _, c := range []struct {
		err  locking.HeldError
		want string
	}{
		{locking.HeldError{Key: "job"}, `locking: not acquired: "job" is held`},
		{locking.HeldError{Key: "job", Owner: "a\nb"}, `locking: not acquired: "job" is held by "a\nb"`},
		{locking.HeldError{Key: "job", Owner: "host:1", Remaining: time.Second}, `locking: not acquired: "job" is held by "host:1" for 1s more`},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
}
