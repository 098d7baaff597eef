package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// TestCLI_H4_HandOver: handover asks the leader to hand the role to the
// named participant, which leads next; a name that is not a participant
// fails listing the participants; --to is required.
func TestCLI_H4_HandOver(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeConfig(t, srv.Addr(), "shop")
	rs := []*replica{
		startReplica(t, srv, "shop", "billing", "replica-a"),
		startReplica(t, srv, "shop", "billing", "replica-b"),
		startReplica(t, srv, "shop", "billing", "replica-c"),
	}
	old := leaderOf(t, rs...)
	var to *replica
	for _, r := range rs {
		if r != old {
			to = r // the last candidate: not whoever the others would pick by chance
		}
	}
	// Every replica registered (its first attempt): the CLI checks --to
	// against the participants.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ps, err := old.elector.Participants(t.Context())
		if err == nil && len(ps) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("participants %v %v", ps, err)
		}
		time.Sleep(10 * time.Millisecond)
	}

	r := cli(t, "handover", "billing", "--to", "nobody", "--config", cfg)
	if r.code != exitError || !strings.Contains(r.errOut, `"nobody" is not a participant`) || !strings.Contains(r.errOut, `"replica-a"`) || !strings.Contains(r.errOut, `"replica-c"`) {
		t.Fatalf("unknown identity: exit %d, err %q", r.code, r.errOut)
	}
	if r := cli(t, "handover", "billing", "--config", cfg); r.code != exitUsage || !strings.Contains(r.errOut, "--to") {
		t.Fatalf("without --to: exit %d, err %q", r.code, r.errOut)
	}

	r = cli(t, "handover", "billing", "--to", to.identity, "--config", cfg, "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	h := decode[handoverJSON](t, r.out)
	if h.Previous != old.identity || h.Leader != to.identity {
		t.Fatalf("handover = %+v, want from %s to %s", h, old.identity, to.identity)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := to.elector.WaitForLeadership(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r != to && r.elector.IsLeader() {
			t.Errorf("%s leads too", r.identity)
		}
	}
	t.Logf("handover → named leader: %.2f ms (as the CLI observed it)", h.LatencyMillis)
}

// TestHandOver_L9_NotSupportedByThisLock: over a lock whose provider
// cannot send resign requests, handover says so before sending anything.
func TestHandOver_L9_NotSupportedByThisLock(t *testing.T) {
	basic, err := locking.New(requiredOnly{memlock.New()}, locking.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = canHandOver(basic, "billing")
	if err == nil || !strings.Contains(err.Error(), `role "billing": handover is not supported by this lock`) {
		t.Fatalf("canHandOver over a basic provider = %v", err)
	}
	full, err := locking.New(memlock.New(), locking.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := canHandOver(full, "billing"); err != nil {
		t.Fatalf("canHandOver over memlock = %v, want nil", err)
	}
}
