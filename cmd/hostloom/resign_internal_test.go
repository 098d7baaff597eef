package main

import (
	"context"
	"strings"
	"testing"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// requiredOnly is a provider with the required methods only.
type requiredOnly struct{ p *memlock.Provider }

func (r requiredOnly) Acquire(ctx context.Context, a locking.AcquireRequest) (locking.AcquireResult, error) {
	return r.p.Acquire(ctx, a)
}

func (r requiredOnly) Extend(ctx context.Context, e locking.ExtendRequest) (locking.ExtendResult, error) {
	return r.p.Extend(ctx, e)
}

func (r requiredOnly) Release(ctx context.Context, q locking.ReleaseRequest) (bool, error) {
	return r.p.Release(ctx, q)
}

// TestResign_L9_NotSupportedByThisLock: over a lock whose provider cannot
// send resign requests, resign answers so before sending anything; over
// one that can, it goes ahead.
func TestResign_L9_NotSupportedByThisLock(t *testing.T) {
	basic, err := locking.New(requiredOnly{memlock.New()}, locking.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = canResign(basic, "billing")
	if err == nil || !strings.Contains(err.Error(), `role "billing": resign is not supported by this lock`) {
		t.Fatalf("canResign over a basic provider = %v, want 'not supported by this lock'", err)
	}
	full, err := locking.New(memlock.New(), locking.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := canResign(full, "billing"); err != nil {
		t.Fatalf("canResign over memlock = %v, want nil", err)
	}
}
