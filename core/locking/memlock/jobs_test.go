package memlock

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// TestJobs_S11_RecordsExpire: job records live for the TTL of their latest
// write, on package time.
func TestJobs_S11_RecordsExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := New()
		c := slotstore.SlotClaim{Slot: 5, Attempt: 1, Term: "t", Record: "r", TTL: time.Minute}
		if r, err := p.ClaimSlot(ctx, "k", c); err != nil || r.Status != slotstore.ClaimGranted {
			t.Fatalf("claim: %+v %v", r, err)
		}
		time.Sleep(30 * time.Second)
		if err := p.SetJobPaused(ctx, "k", true, time.Minute); err != nil {
			t.Fatal(err)
		}
		time.Sleep(59 * time.Second)
		if st, err := p.JobStatus(ctx, "k"); err != nil || !st.Paused || st.TTL != time.Second {
			t.Fatalf("status before expiry: %+v %v", st, err)
		}
		time.Sleep(time.Second)
		if st, err := p.JobStatus(ctx, "k"); err != nil || st.HasSlot || st.Paused || st.Runs != 0 {
			t.Fatalf("status after expiry: %+v %v, want nothing", st, err)
		}
		if h, err := p.JobHistory(ctx, "k", 10); err != nil || len(h) != 0 {
			t.Fatalf("history after expiry: %v %v", h, err)
		}
	})
}

// TestJobs_S11_CorruptRecordsAreErrors: records that do not parse are an
// error naming the key, never a panic.
func TestJobs_S11_CorruptRecordsAreErrors(t *testing.T) {
	ctx := context.Background()
	p := New()
	p.entries["k"] = entry{value: "not json", expires: time.Now().Add(time.Hour)}
	_, err := p.ClaimSlot(ctx, "k", slotstore.SlotClaim{Slot: 1, Attempt: 1, Term: "t", TTL: time.Hour})
	if err == nil || !strings.Contains(err.Error(), `"k"`) {
		t.Errorf("claim over corrupt records: %v, want an error naming the key", err)
	}
	if _, err := p.JobStatus(ctx, "k"); err == nil {
		t.Error("status over corrupt records: no error")
	}
}

// TestJobs_CancelledContext: operations refuse an ended ctx.
func TestJobs_CancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := New()
	if _, err := p.ClaimSlot(ctx, "k", slotstore.SlotClaim{Slot: 1, Attempt: 1, Term: "t", TTL: time.Hour}); err == nil {
		t.Error("claim with an ended ctx succeeded")
	}
	if _, err := p.CompleteSlot(ctx, "k", slotstore.SlotCompletion{TTL: time.Hour}); err == nil {
		t.Error("complete with an ended ctx succeeded")
	}
}
