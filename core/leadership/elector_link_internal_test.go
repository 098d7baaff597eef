package leadership

import (
	"testing"
	"time"
)

// The notification link's machine alone (Q1): no elector, no lock, no
// clock but the times it is given.

var linkT0 = time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)

// TestLink_Q1_DropCountedOnlyWhenLiveAndNotDurable: a drop is counted
// once, only for a live link to a server that may lose its state.
func TestLink_Q1_DropCountedOnlyWhenLiveAndNotDurable(t *testing.T) {
	var k link
	if k.down(linkT0, false) {
		t.Fatal("a drop of a link that never was live was counted")
	}
	if !k.up() {
		t.Fatal("the first subscription was not reported first")
	}
	if k.down(linkT0, true) {
		t.Fatal("a drop of a link to a durable server was counted")
	}
	if k.live.Load() {
		t.Fatal("the link is live after a drop")
	}
	if k.up() {
		t.Fatal("the second subscription was reported first")
	}
	if !k.down(linkT0, false) || !k.droppedAt.Equal(linkT0) {
		t.Fatalf("the drop was not counted at %v (droppedAt %v)", linkT0, k.droppedAt)
	}
	if k.down(linkT0.Add(time.Second), false) || !k.droppedAt.Equal(linkT0) {
		t.Fatalf("a second drop moved the first (droppedAt %v)", k.droppedAt)
	}
}

// TestLink_Q1_AcquisitionWaitsForTheLinkUpToALease: after a counted drop
// a candidate waits for the link until one lease after the drop, then
// goes ahead; a link that came back holds nothing.
func TestLink_Q1_AcquisitionWaitsForTheLinkUpToALease(t *testing.T) {
	const lease = 3 * time.Second
	var k link
	k.up()
	if _, ok := k.holds(linkT0, lease); ok {
		t.Fatal("a live link holds an acquisition")
	}
	k.down(linkT0, false)
	until, ok := k.holds(linkT0.Add(time.Second), lease)
	if !ok || !until.Equal(linkT0.Add(lease)) {
		t.Fatalf("holds after a drop = %v %t, want %v true", until, ok, linkT0.Add(lease))
	}
	if _, ok := k.holds(linkT0.Add(lease), lease); ok {
		t.Fatal("the link still holds an acquisition a lease after the drop")
	}
	k.up()
	at, waited, ok := k.back(linkT0.Add(2*time.Second), 50*time.Millisecond, false)
	if !ok || !waited || !at.Equal(linkT0.Add(2*time.Second+50*time.Millisecond)) {
		t.Fatalf("back = %v %t %t, want the head start, an acquisition that waited", at, waited, ok)
	}
	if until, ok := k.holds(linkT0.Add(2*time.Second+10*time.Millisecond), lease); !ok || !until.Equal(at) {
		t.Fatalf("holds within the head start = %v %t, want %v true", until, ok, at)
	}
	if _, ok := k.holds(at, lease); ok {
		t.Fatal("a link that came back holds an acquisition past the head start")
	}
	k.released()
	if _, ok := k.holds(linkT0.Add(2*time.Second+10*time.Millisecond), lease); ok {
		t.Fatal("a release announced over the link that came back left the head start")
	}
	if _, _, ok := k.back(linkT0.Add(3*time.Second), 50*time.Millisecond, false); ok {
		t.Fatal("a second return without a drop was taken as one")
	}
}

// TestLink_Q1_BackWithoutAWaitingAcquisition: a return after a drop
// during which no acquisition was held reports the head start only; to a
// leader (its term may end on the verification) it holds nothing.
func TestLink_Q1_BackWithoutAWaitingAcquisition(t *testing.T) {
	var k link
	k.up()
	k.down(linkT0, false)
	k.up()
	at, waited, ok := k.back(linkT0.Add(time.Second), 50*time.Millisecond, true)
	if !ok || waited || !at.Equal(linkT0.Add(time.Second+50*time.Millisecond)) {
		t.Fatalf("back = %v %t %t, want the head start and no waiting acquisition", at, waited, ok)
	}
	if _, ok := k.holds(linkT0.Add(time.Second), time.Second); ok {
		t.Fatal("the link came back to a leader, and holds its next acquisition")
	}
}

// TestLink_Q1_VerifyOnceAfterTheRenewalUnderWay: a return while a
// renewal is under way asks for one more renewal, once; the end of a term
// forgets it and an unsure renewal.
func TestLink_Q1_VerifyOnceAfterTheRenewalUnderWay(t *testing.T) {
	var k link
	k.verifyAfter(false)
	if k.reverify() {
		t.Fatal("a return while no renewal was under way asked for one")
	}
	k.verifyAfter(true)
	if !k.reverify() {
		t.Fatal("a return while a renewal was under way did not ask for another")
	}
	if k.reverify() {
		t.Fatal("the verification was asked for twice")
	}
	k.verifyAfter(true)
	k.unsure = true
	k.termEnded()
	if k.reverify() || k.unsure {
		t.Fatal("the end of the term left a verification or an unsure renewal")
	}
}

// TestBackoff_UnsentWaitDoubles: the wait after attempts the lock never
// sent doubles from one RetryInterval up to one Lease.
func TestBackoff_UnsentWaitDoubles(t *testing.T) {
	var b backoff
	retry, lease := time.Second, 5*time.Second
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second} {
		if got := b.unsentWait(retry, lease); got != want {
			t.Fatalf("wait %d = %v, want %v", i+1, got, want)
		}
	}
}
