package participants_test

import (
	"slices"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/kit/participants"
)

var t0 = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func pt(owner string, priority int, since time.Duration) locking.Participant {
	return locking.Participant{Owner: owner, Priority: priority, Since: t0.Add(since)}
}

// TestTop_B2 covers the TopPriority a refusal reports.
func TestTop_B2(t *testing.T) {
	for _, c := range []struct {
		name     string
		ps       []locking.Participant
		owner    string
		priority int
		register bool
		want     int
	}{
		{"nobody, not registering", nil, "a", 5, false, 0},
		{"nobody else, registering", nil, "a", 5, true, 5},
		{"others only", []locking.Participant{pt("b", 3, 0), pt("c", 7, 0)}, "a", 0, false, 7},
		{"negative priorities, not registering", []locking.Participant{pt("b", -3, 0), pt("c", -7, 0)}, "a", 0, false, -3},
		{"the caller above the others", []locking.Participant{pt("b", 3, 0)}, "a", 9, true, 9},
		{"the caller's older record is skipped", []locking.Participant{pt("a", 50, 0), pt("b", 3, 0)}, "a", 1, true, 3},
		{"the caller's record counts when it did not register", []locking.Participant{pt("a", 50, 0)}, "a", 1, false, 50},
	} {
		if got := participants.Top(slices.Values(c.ps), c.owner, c.priority, c.register); got != c.want {
			t.Errorf("%s: Top = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestHigher_B2 covers who a free key waits for.
func TestHigher_B2(t *testing.T) {
	for _, c := range []struct {
		name     string
		ps       []locking.Participant
		priority int
		top      int
		ok       bool
	}{
		{"nobody", nil, 0, 0, false},
		{"equal priority does not wait", []locking.Participant{pt("b", 5, 0)}, 5, 0, false},
		{"the caller itself is not waited for", []locking.Participant{pt("a", 9, 0)}, 5, 0, false},
		{"the highest of those above", []locking.Participant{pt("b", 6, 0), pt("c", 8, 0), pt("d", 2, 0)}, 5, 8, true},
	} {
		top, ok := participants.Higher(slices.Values(c.ps), "a", c.priority)
		if top != c.top || ok != c.ok {
			t.Errorf("%s: Higher = %d, %v; want %d, %v", c.name, top, ok, c.top, c.ok)
		}
	}
}

// TestExtension_B2_O6 covers what an extension reports.
func TestExtension_B2_O6(t *testing.T) {
	lease := 10 * time.Second
	now := t0.Add(time.Minute)
	for _, c := range []struct {
		name    string
		ps      []locking.Participant
		count   int
		preempt bool
	}{
		{"alone, not listed", nil, 1, false},
		{"alone, listed", []locking.Participant{pt("a", 0, 0)}, 1, false},
		{"a lower one", []locking.Participant{pt("a", 5, 0), pt("b", 1, 0)}, 2, false},
		{"a higher one for a whole lease", []locking.Participant{pt("a", 5, 0), pt("b", 6, time.Minute-lease)}, 2, true},
		{"a higher one for less than a lease", []locking.Participant{pt("b", 6, time.Minute-lease+time.Millisecond)}, 2, false},
		{"an equal one for long", []locking.Participant{pt("b", 5, 0)}, 2, false},
	} {
		count, preempt := participants.Extension(slices.Values(c.ps), "a", 5, lease, now)
		if count != c.count || preempt != c.preempt {
			t.Errorf("%s: Extension = %d, %v; want %d, %v", c.name, count, preempt, c.count, c.preempt)
		}
	}
}

// TestYields_B2: the wait counts from the first time the key was found
// free, per key, until Reset.
func TestYields_B2(t *testing.T) {
	var y participants.Yields
	const yield = 2 * time.Second
	if w := y.Wait("k", yield, t0); w != yield {
		t.Fatalf("first Wait = %v, want %v", w, yield)
	}
	if w := y.Wait("k", yield, t0.Add(1500*time.Millisecond)); w != 500*time.Millisecond {
		t.Fatalf("Wait 1.5 s later = %v, want 500ms", w)
	}
	if w := y.Wait("other", yield, t0.Add(1500*time.Millisecond)); w != yield {
		t.Fatalf("Wait for another key = %v, want its own clock (%v)", w, yield)
	}
	if w := y.Wait("k", yield, t0.Add(3*time.Second)); w != 0 {
		t.Fatalf("Wait after the yield = %v, want 0", w)
	}
	y.Reset("k")
	if w := y.Wait("k", yield, t0.Add(4*time.Second)); w != yield {
		t.Fatalf("Wait after Reset = %v, want a fresh %v", w, yield)
	}
}
