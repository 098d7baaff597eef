package leadership

import (
	"slices"
	"testing"
)

// TestInbox_QueueOnlyWaitsForTheNextItem: an item queued without a
// consumer starts none; it is handled, in order, before the next item
// put or run.
func TestInbox_QueueOnlyWaitsForTheNextItem(t *testing.T) {
	var got []int
	var b inbox[int]
	b.handle = func(x int) { got = append(got, x) }
	b.queueOnly(1)
	b.queueOnly(2)
	if len(got) != 0 {
		t.Fatalf("handled %v before any item was put", got)
	}
	select {
	case <-b.waitIdle():
	default:
		t.Fatal("a consumer runs for items only queued")
	}
	b.run(3) // consumes on this goroutine
	if want := []int{1, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("handled %v, want %v", got, want)
	}
}
