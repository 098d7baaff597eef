package locking_test

import (
	"context"
	"testing"

	"github.com/hostloom/hostloom/core/locking"
)

// TestFenceFrom_G2_ReadsTheTermsFence: a context carrying a fence under
// FenceKey yields it, through derived contexts too; none, fence 0 or a
// value of another type yield nothing.
func TestFenceFrom_G2_ReadsTheTermsFence(t *testing.T) {
	type other struct{}
	base := context.Background()
	ctx, cancel := context.WithCancel(context.WithValue(context.WithValue(base, locking.FenceKey{}, uint64(42)), other{}, "x"))
	defer cancel()
	if f, ok := locking.FenceFrom(ctx); !ok || f != 42 {
		t.Fatalf("FenceFrom(derived) = %d, %v; want 42, true", f, ok)
	}
	for name, c := range map[string]context.Context{
		"none":       base,
		"fence 0":    context.WithValue(base, locking.FenceKey{}, uint64(0)),
		"not uint64": context.WithValue(base, locking.FenceKey{}, 42),
	} {
		if f, ok := locking.FenceFrom(c); ok || f != 0 {
			t.Errorf("%s: FenceFrom = %d, %v; want 0, false", name, f, ok)
		}
	}
}
