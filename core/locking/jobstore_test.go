package locking_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// TestJobStore_S11_BadInput: invalid claims and arguments are errors naming
// the key and the value, before any I/O.
func TestJobStore_S11_BadInput(t *testing.T) {
	l, err := memlock.NewLock(locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ok := slotstore.SlotClaim{Slot: 1, Attempt: 1, Term: "t", TTL: time.Hour}
	for _, tt := range []struct {
		name   string
		mutate func(*slotstore.SlotClaim)
		want   string
	}{
		{"negative slot", func(c *slotstore.SlotClaim) { c.Slot = -1 }, "slot -1"},
		{"attempt 0", func(c *slotstore.SlotClaim) { c.Attempt = 0 }, "attempt 0"},
		{"attempt past the maximum", func(c *slotstore.SlotClaim) { c.Attempt = slotstore.MaxJobAttempts + 1 }, "attempt 4"},
		{"recovery without slot", func(c *slotstore.SlotClaim) { c.Slot, c.Attempt = 0, 2 }, "attempt 2 needs a slot"},
		{"empty term", func(c *slotstore.SlotClaim) { c.Term = "" }, "empty term"},
		{"negative hold", func(c *slotstore.SlotClaim) { c.Hold = -time.Second }, "hold -1s"},
		{"ttl below 1ms", func(c *slotstore.SlotClaim) { c.TTL = 0 }, "ttl 0s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mutate(&c)
			_, err := l.ClaimSlot(ctx, "sched:r:j", c)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `"sched:r:j"`) {
				t.Errorf("error = %v, want one naming the key and %q", err, tt.want)
			}
		})
	}
	for _, n := range []int{0, -1, slotstore.JobHistoryLen + 1} {
		if _, err := l.JobHistory(ctx, "sched:r:j", n); err == nil || !strings.Contains(err.Error(), fmt.Sprint("n ", n)) {
			t.Errorf("history(%d) error = %v, want one naming n", n, err)
		}
	}
	if _, err := l.JobStatus(ctx, "bad key"); !errors.Is(err, locking.ErrInvalidKey) {
		t.Errorf("invalid key: %v, want ErrInvalidKey", err)
	}
	if err := l.SetJobPaused(ctx, "sched:r:j", true, 0); err == nil || !strings.Contains(err.Error(), "ttl") {
		t.Errorf("pause with ttl 0: %v, want an error naming ttl", err)
	}
}

// noJobs is a provider without job records.
type noJobs struct{ locking.Provider }

// TestJobStore_NotSupported: a provider without job records, or a disabled
// lock, reports ErrNotSupported.
func TestJobStore_NotSupported(t *testing.T) {
	ctx := context.Background()
	l, err := locking.New(noJobs{memlock.New()}, locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	o := locking.DefaultOptions()
	o.Disabled = true
	disabled, err := locking.New(nil, o)
	if err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]*locking.DistributedLock{"provider without jobs": l, "disabled": disabled} {
		if l.Capabilities().JobSlots {
			t.Errorf("%s: Capabilities().JobSlots is true", name)
		}
		if _, err := l.ClaimSlot(ctx, "k", slotstore.SlotClaim{Slot: 1, Attempt: 1, Term: "t", TTL: time.Hour}); !errors.Is(err, locking.ErrNotSupported) {
			t.Errorf("%s: claim: %v, want ErrNotSupported", name, err)
		}
		if _, err := l.JobHistory(ctx, "k", 1); !errors.Is(err, locking.ErrNotSupported) {
			t.Errorf("%s: history: %v, want ErrNotSupported", name, err)
		}
	}
}

// TestJobKey_L8: job keys follow the state key rules with "jobs".
func TestJobKey_L8(t *testing.T) {
	for _, tt := range []struct {
		ns   string
		tags bool
		want string
	}{
		{"", false, "jobs:sched:r:j"},
		{"billing", false, "billing:jobs:sched:r:j"},
		{"billing", true, "{billing}:jobs:sched:r:j"},
	} {
		o := locking.DefaultOptions()
		o.Namespace, o.UseHashTags = tt.ns, tt.tags
		l, err := locking.New(memlock.New(), o)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := l.JobKey("sched:r:j"); err != nil || got != tt.want {
			t.Errorf("JobKey(ns %q, tags %v) = %q, %v; want %q", tt.ns, tt.tags, got, err, tt.want)
		}
	}
}
