package leadership_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// orderProvider is memlock recording the releases and deregistrations it
// is asked for, in order, as "release r1" / "deregister r3".
type orderProvider struct {
	*memlock.Provider
	mu    sync.Mutex
	calls []string
	// afail, when set, is returned by a's acquisitions after the lock
	// ran them: the reply lost on the wire.
	afail error
	// gate, when set, holds every release until it is closed; dgate
	// every deregistration of a's; agate every acquisition of a's and
	// egate every renewal of a's, which then run whatever their context
	// (as one already sent to a server).
	gate, dgate, agate, egate chan struct{}
	// dheld, when set, limits dgate to a's deregistrations of the roles
	// it names.
	dheld map[string]bool
}

func (p *orderProvider) Extend(ctx context.Context, r locking.ExtendRequest) (locking.ExtendResult, error) {
	if r.Owner == "a" {
		p.record("extend", r.Key)
		ctx = p.holdAt(ctx, &p.egate)
	}
	return p.Provider.Extend(ctx, r)
}

func (p *orderProvider) Acquire(ctx context.Context, r locking.AcquireRequest) (locking.AcquireResult, error) {
	if r.Owner == "a" {
		if ctx.Err() != nil {
			p.record("expired-acquire", r.Key)
		}
		p.record("acquire", r.Key)
		ctx = p.holdAt(ctx, &p.agate)
		p.mu.Lock()
		fail := p.afail
		p.mu.Unlock()
		if fail != nil {
			_, _ = p.Provider.Acquire(ctx, r)
			return locking.AcquireResult{}, fail
		}
	}
	return p.Provider.Acquire(ctx, r)
}

// holdAt waits, when *gate is set, until it is closed, and returns a ctx
// that no longer ends: the call then runs as one already sent to a
// server.
func (p *orderProvider) holdAt(ctx context.Context, gate *chan struct{}) context.Context {
	p.mu.Lock()
	g := *gate
	p.mu.Unlock()
	if g == nil {
		return ctx
	}
	<-g
	return context.WithoutCancel(ctx)
}

// count returns how many calls of kind op ("acquire", "release", ...) the
// log holds.
func (p *orderProvider) count(op string) (k int) {
	for _, c := range p.log() {
		if strings.HasPrefix(c, op+" ") {
			k++
		}
	}
	return k
}

func (p *orderProvider) record(op, key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, op+" "+key[strings.LastIndex(key, ":")+1:])
}

func (p *orderProvider) Release(ctx context.Context, r locking.ReleaseRequest) (bool, error) {
	p.record("release", r.Key)
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return p.Provider.Release(ctx, r)
}

func (p *orderProvider) Deregister(ctx context.Context, key, owner string) error {
	if owner == "a" {
		p.record("deregister", key)
		p.mu.Lock()
		gate := p.dgate
		if p.dheld != nil && !p.dheld[key[strings.LastIndex(key, ":")+1:]] {
			gate = nil
		}
		p.mu.Unlock()
		if gate != nil {
			<-gate
		}
	}
	return p.Provider.Deregister(ctx, key, owner)
}

// newOrderLock returns an orderProvider and a lock over it.
func newOrderLock(t *testing.T) (*orderProvider, locking.Lock) {
	t.Helper()
	p := &orderProvider{Provider: memlock.New()}
	lock, err := locking.New(p, locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return p, lock
}

// stopAllHolding starts StopAll(es...) with the calls that *hold (p.gate:
// releases, p.dgate: a's deregistrations) under way held, waits until
// they are, and lets later ones through; finish lets the held ones go
// and returns StopAll's result. It clears the log first.
func stopAllHolding(p *orderProvider, hold *chan struct{}, es ...*leadership.Elector) (finish func() error) {
	gate := make(chan struct{})
	p.mu.Lock()
	*hold, p.calls = gate, nil
	p.mu.Unlock()
	stopped := make(chan error, 1)
	go func() { stopped <- leadership.StopAll(context.Background(), es...) }()
	synctest.Wait()
	p.mu.Lock()
	*hold = nil
	p.mu.Unlock()
	return func() error {
		close(gate)
		return <-stopped
	}
}

// finishLeave lets the held releases of a leave of es go, and checks
// that the leave released every role and no elector of es leads.
func finishLeave(t *testing.T, p *orderProvider, finish func() error, es []*leadership.Elector) {
	t.Helper()
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	if got := p.count("release"); got != len(es) {
		t.Fatalf("%d releases after the leave; want %d", got, len(es))
	}
	for i, e := range es {
		if e.IsLeader() {
			t.Fatalf("r%d: leading after the leave", i)
		}
	}
}

func (p *orderProvider) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// TestStopAll_E8_B1_LeadersReleaseBeforeTheOthersStop: a process leaving
// with StopAll withdraws its candidates from their roles' participants,
// then releases the roles it leads, then stops the candidates; the other
// process leads every role afterwards.
func TestStopAll_E8_B1_LeadersReleaseBeforeTheOthersStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lock := newOrderLock(t)
		roles := []string{"r1", "r2", "r3", "r4"}
		a, b := map[string]*leadership.Elector{}, map[string]*leadership.Elector{}
		for _, r := range roles {
			a[r] = mustElector(t, r, lock, fastOpts(), leadership.WithIdentity("a"))
			b[r] = mustElector(t, r, lock, fastOpts(), leadership.WithIdentity("b"))
		}
		// a leads r1 and r2, b leads r3 and r4.
		for _, e := range []*leadership.Elector{a["r1"], a["r2"], b["r3"], b["r4"]} {
			mustStart(t, e)
		}
		synctest.Wait()
		for _, e := range []*leadership.Elector{b["r1"], b["r2"], a["r3"], a["r4"]} {
			mustStart(t, e)
		}
		synctest.Wait()
		for _, r := range roles {
			if want := r == "r1" || r == "r2"; a[r].IsLeader() != want {
				t.Fatalf("before the leave: a leads %s = %v, want %v", r, a[r].IsLeader(), want)
			}
		}

		// The candidates come first in the list: the order does not matter.
		if err := leadership.StopAll(context.Background(), a["r3"], nil, a["r4"], a["r1"], a["r2"]); err != nil {
			t.Fatal(err)
		}
		// The candidates withdraw before the first release; with no
		// attempt under way then or since, their Stops deregister
		// nothing more (TestStopAll_H2_AWithdrawnCandidateIsDeregisteredOnce).
		calls := p.log()
		rel1, rel2 := slices.Index(calls, "release r1"), slices.Index(calls, "release r2")
		if rel1 < 0 || rel2 < 0 {
			t.Fatalf("calls %v: want both leases released", calls)
		}
		firstRelease := min(rel1, rel2)
		for _, r := range []string{"r3", "r4"} {
			if first := slices.Index(calls, "deregister "+r); first < 0 || first > firstRelease {
				t.Fatalf("calls %v: want the candidate of %s to withdraw before the releases", calls, r)
			}
		}
		for _, r := range roles {
			if a[r].IsLeader() {
				t.Fatalf("a still leads %s after StopAll", r)
			}
		}
		time.Sleep(time.Second)
		synctest.Wait()
		for _, r := range roles {
			if !b[r].IsLeader() {
				t.Fatalf("b does not lead %s after a left", r)
			}
		}
		for _, r := range roles {
			mustStop(t, b[r])
		}
	})
}

// TestStopAll_E8_B1_LeavingCandidatesMakeNoAttempt: once StopAll began, a
// candidate of the leaving process makes no attempt, even when the role
// it waits for is released meanwhile: an attempt would register it as a
// participant again (so that a balancing instance elsewhere would count
// it and hand it roles) and could win a role only to release it. The
// other process takes the role back after its own RetryInterval.
func TestStopAll_E8_B1_LeavingCandidatesMakeNoAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lock := newOrderLock(t)
		a1 := mustElector(t, "r1", lock, fastOpts(), leadership.WithIdentity("a"))
		b3 := mustElector(t, "r3", lock, fastOpts(), leadership.WithIdentity("b"))
		mustStart(t, a1)
		mustStart(t, b3)
		synctest.Wait()
		a3 := mustElector(t, "r3", lock, fastOpts(), leadership.WithIdentity("a"))
		mustStart(t, a3)
		synctest.Wait()
		if !a1.IsLeader() || !b3.IsLeader() || a3.IsLeader() {
			t.Fatalf("before the leave: a leads r1 %v, b leads r3 %v, a leads r3 %v; want true, true, false", a1.IsLeader(), b3.IsLeader(), a3.IsLeader())
		}

		finish := stopAllHolding(p, &p.gate, a1, a3) // a's release of r1 is held
		// Meanwhile b gives r3 up: its release wakes a's candidate.
		if err := b3.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := finish(); err != nil {
			t.Fatal(err)
		}
		for _, c := range p.log() {
			if strings.HasPrefix(c, "acquire") {
				t.Fatalf("calls %v: a leaving candidate made an attempt", p.log())
			}
		}
		if a3.IsLeader() {
			t.Fatal("a leads r3 after StopAll")
		}
		time.Sleep(fastOpts().RetryInterval + time.Second)
		synctest.Wait()
		if !b3.IsLeader() {
			t.Fatal("b does not lead r3 again after its RetryInterval")
		}
		mustStop(t, b3)
	})
}

// TestStopAll_E8_B1_LeavingLeadersDoNotRenew: while a leaving process
// withdraws its candidates, its leaders do not renew (a renewal registers
// the leader as a participant again, P1); their Stop releases the lease as
// usual.
func TestStopAll_E8_B1_LeavingLeadersDoNotRenew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lock := newOrderLock(t)
		o := fastOpts() // renewals every second, lease 3 s
		// a leads r1 and is a candidate of r2, which b leads.
		a1 := mustElector(t, "r1", lock, o, leadership.WithIdentity("a"))
		b1 := mustElector(t, "r1", lock, o, leadership.WithIdentity("b"))
		a2 := mustElector(t, "r2", lock, o, leadership.WithIdentity("a"))
		b2 := mustElector(t, "r2", lock, o, leadership.WithIdentity("b"))
		mustStart(t, a1)
		mustStart(t, b2)
		synctest.Wait()
		mustStart(t, b1)
		mustStart(t, a2)
		synctest.Wait()
		time.Sleep(o.RenewInterval + o.RenewInterval/2)
		synctest.Wait()
		if !a1.IsLeader() || !slices.Contains(p.log(), "extend r1") {
			t.Fatalf("before the leave: a leads %v, calls %v; want a leading and renewing", a1.IsLeader(), p.log())
		}
		finish := stopAllHolding(p, &p.dgate, a1, a2)
		time.Sleep(o.RenewInterval + o.RenewInterval/2) // a2's withdrawal is held
		synctest.Wait()
		if calls := p.log(); slices.Contains(calls, "extend r1") {
			t.Fatalf("calls %v: a leaving leader renewed", calls)
		}
		if !a1.IsLeader() {
			t.Fatal("a leaving leader lost its term before its deadline")
		}
		if err := finish(); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !b1.IsLeader() || !b2.IsLeader() {
			t.Fatalf("b leads r1 %v, r2 %v after a left; want both; calls %v", b1.IsLeader(), b2.IsLeader(), p.log())
		}
		mustStop(t, b1)
		mustStop(t, b2)
	})
}

// TestStopAll_E8_B1_LeavingCandidateTakesARoleHandedToIt: a role handed
// by name to a candidate of a leaving process (a balancing process that
// chose it before it withdrew) is taken all the same, since the others
// wait a RetryInterval for the named taker, and StopAll's second wave
// hands it back at once.
func TestStopAll_E8_B1_LeavingCandidateTakesARoleHandedToIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lock := newOrderLock(t)
		a1 := mustElector(t, "r1", lock, fastOpts(), leadership.WithIdentity("a"))
		b3 := mustElector(t, "r3", lock, fastOpts(), leadership.WithIdentity("b"))
		c3 := mustElector(t, "r3", lock, fastOpts(), leadership.WithIdentity("c"))
		mustStart(t, a1)
		mustStart(t, b3)
		synctest.Wait()
		a3 := mustElector(t, "r3", lock, fastOpts(), leadership.WithIdentity("a"))
		mustStart(t, a3)
		mustStart(t, c3)
		synctest.Wait()

		finish := stopAllHolding(p, &p.gate, a1, a3) // a's release of r1 is held
		if err := leadership.ResignTo(context.Background(), b3, "a"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !slices.Contains(p.log(), "acquire r3") || !a3.IsLeader() {
			t.Fatalf("calls %v, a leads r3 %v: want the role handed to a taken", p.log(), a3.IsLeader())
		}
		if err := finish(); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if a3.IsLeader() || !(b3.IsLeader() || c3.IsLeader()) {
			t.Fatalf("after StopAll: a leads r3 %v, b %v, c %v; want b or c", a3.IsLeader(), b3.IsLeader(), c3.IsLeader())
		}
		mustStop(t, b3)
		mustStop(t, c3)
	})
}

// TestStopAll_H2_AWithdrawnCandidateIsDeregisteredOnce: a leave withdraws
// its candidates before the releases; a candidate with no attempt under
// way then, and none since (a leaving candidate makes none), is not
// deregistered again by its Stop: a 50,000-role leave sent a second
// deregistration for each of its 33,000 candidates, to the server that
// also takes the releases and the acquisitions that end the leave. One
// whose attempt was under way still is
// (TestStopAll_E8_B1_AnAttemptUnderWayIsWithdrawnAgain).
func TestStopAll_H2_AWithdrawnCandidateIsDeregisteredOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if n := candidateLeaves(t, nil); n != 1 {
			t.Errorf("%d deregistrations, want 1 (the withdrawal)", n)
		}
	})
}

// TestStopAll_H2_AnUnansweredAttemptKeepsTheSecondDeregistration: a
// candidate whose last attempt failed without the lock's answer (a reply
// lost on the wire) may still be registered by it after any withdrawal,
// so its Stop deregisters again, as every Stop did before
// TestStopAll_H2_AWithdrawnCandidateIsDeregisteredOnce.
func TestStopAll_H2_AnUnansweredAttemptKeepsTheSecondDeregistration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if n := candidateLeaves(t, errors.New("read tcp: connection reset by peer")); n != 2 {
			t.Errorf("%d deregistrations, want 2 (the withdrawal, then Stop's)", n)
		}
	})
}

// candidateLeaves starts b, leading r1, and a's candidate of r1, whose
// attempt returns attemptErr after the lock ran it (a reply lost on the
// wire; nil: the lock's own answer). Once a is a registered candidate,
// a's process leaves (StopAll); a must then be no participant of r1. It
// returns how many deregistrations of a the leave sent, logging the
// calls.
func candidateLeaves(t *testing.T, attemptErr error) int {
	t.Helper()
	p, lock := newOrderLock(t)
	b1 := mustElector(t, "r1", lock, fastOpts(), leadership.WithIdentity("b"))
	mustStart(t, b1)
	synctest.Wait()
	p.mu.Lock()
	p.afail = attemptErr
	p.mu.Unlock()
	a1 := mustElector(t, "r1", lock, fastOpts(), leadership.WithIdentity("a"))
	mustStart(t, a1)
	synctest.Wait()
	if a1.IsLeader() || !participates(t, b1, "a") {
		t.Fatalf("before the leave: a leads %v, is a participant %v; want a registered candidate", a1.IsLeader(), participates(t, b1, "a"))
	}
	p.mu.Lock()
	p.afail, p.calls = nil, nil
	p.mu.Unlock()
	if err := leadership.StopAll(context.Background(), a1); err != nil {
		t.Fatal(err)
	}
	t.Logf("the leave's calls: %v", p.log())
	if participates(t, b1, "a") {
		t.Error("a is still a participant of r1 after its leave")
	}
	mustStop(t, b1)
	return p.count("deregister")
}

// participates reports whether id is among the participants of e's role.
func participates(t *testing.T, e *leadership.Elector, id string) bool {
	t.Helper()
	ps, err := e.Participants(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(ps, func(p leadership.Participant) bool { return p.Identity == id })
}

// holdAttempt starts a's candidate of r3, whose first attempt (which
// registers it, P1) is held in the lock until the returned func lets it
// through; b leads r3.
func holdAttempt(t *testing.T, p *orderProvider, lock locking.Lock) (a3, b3 *leadership.Elector, let func()) {
	t.Helper()
	b3 = mustElector(t, "r3", lock, fastOpts(), leadership.WithIdentity("b"))
	mustStart(t, b3)
	synctest.Wait()
	gate := make(chan struct{})
	p.mu.Lock()
	p.agate = gate
	p.mu.Unlock()
	a3 = mustElector(t, "r3", lock, fastOpts(), leadership.WithIdentity("a"))
	mustStart(t, a3)
	synctest.Wait()
	p.mu.Lock()
	p.agate = nil
	p.mu.Unlock()
	if !slices.Contains(p.log(), "acquire r3") || participates(t, b3, "a") {
		t.Fatalf("calls %v: want a's attempt held before it registered", p.log())
	}
	return a3, b3, func() { close(gate); synctest.Wait() }
}

// TestStopAll_E8_B1_AnAttemptUnderWayIsWithdrawnAgain: an attempt of a
// leaving process's candidate that was under way when StopAll withdrew
// the candidate registers it again when it reaches the backend after the
// withdrawal (redislock sends deregistrations on a pipeline of their own);
// the candidate deregisters once more when the attempt comes back, so a
// balancing process elsewhere does not hand it roles during the leave.
func TestStopAll_E8_B1_AnAttemptUnderWayIsWithdrawnAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lock := newOrderLock(t)
		a1 := mustElector(t, "r1", lock, fastOpts(), leadership.WithIdentity("a"))
		mustStart(t, a1)
		synctest.Wait()
		a3, b3, let := holdAttempt(t, p, lock)

		finish := stopAllHolding(p, &p.gate, a1, a3) // a's release of r1 is held
		if calls := p.log(); !slices.Contains(calls, "deregister r3") {
			t.Fatalf("calls %v: want a's candidate withdrawn", calls)
		}
		let() // the attempt reaches the lock after the withdrawal
		if participates(t, b3, "a") {
			t.Errorf("calls %v: a's candidate is a participant of r3 again while its process leaves", p.log())
		}
		if err := finish(); err != nil {
			t.Fatal(err)
		}
		mustStop(t, b3)
	})
}

// TestStop_E8_P1_AnAttemptUnderWayIsWithdrawnAgain: Stop deregisters a
// candidate at once and waits for its attempt under way; when that
// attempt reaches the backend after the deregistration and comes back
// refused, Stop deregisters again before it returns, so the stopped
// instance is not left a participant until its registration lapses.
func TestStop_E8_P1_AnAttemptUnderWayIsWithdrawnAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lock := newOrderLock(t)
		a3, b3, let := holdAttempt(t, p, lock)
		stopped := make(chan error, 1)
		go func() { stopped <- a3.Stop(context.Background()) }()
		synctest.Wait()
		if calls := p.log(); !slices.Contains(calls, "deregister r3") {
			t.Fatalf("calls %v: want Stop to deregister at once", calls)
		}
		let()
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		if participates(t, b3, "a") {
			t.Fatalf("calls %v: a is a participant of r3 after its Stop returned", p.log())
		}
		mustStop(t, b3)
	})
}

// TestStop_E8_P1_AnAttemptThatWinsDuringStopIsWithdrawn: an attempt
// under way when Stop began that comes back with the role registered the
// instance again; Stop gives the lease back and withdraws that
// registration with it, so the stopped instance is no participant once
// Stop returned and the role is free.
func TestStop_E8_P1_AnAttemptThatWinsDuringStopIsWithdrawn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lock := newOrderLock(t)
		gate := make(chan struct{})
		p.mu.Lock()
		p.agate = gate
		p.mu.Unlock()
		a := mustElector(t, "r", lock, fastOpts(), leadership.WithIdentity("a"))
		mustStart(t, a)
		synctest.Wait() // a's first attempt is held before it reached the lock
		p.mu.Lock()
		p.agate = nil
		p.mu.Unlock()
		stopped := make(chan error, 1)
		go func() { stopped <- a.Stop(context.Background()) }()
		synctest.Wait()
		close(gate) // the attempt reaches the lock after Stop deregistered: it wins the free role
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		b := mustElector(t, "r", lock, fastOpts(), leadership.WithIdentity("b"))
		if participates(t, b, "a") {
			t.Fatalf("calls %v: a is a participant of r after its Stop returned", p.log())
		}
		if calls := p.log(); !slices.Contains(calls, "release r") {
			t.Fatalf("calls %v: want the lease the attempt won released", calls)
		}
		mustStart(t, b)
		synctest.Wait()
		if !b.IsLeader() {
			t.Fatal("b does not lead the role a's Stop gave back")
		}
		mustStop(t, b)
	})
}

// TestBalance_B1_ARoleHandedToAnotherIsLeftToIt: a candidate that learns
// its role was handed by name to another participant makes no attempt for
// a RetryInterval, even one it had due sooner (a quiet candidate's attempt
// at the end of the lease it learned, P3): such an attempt took the role
// while the named taker's attempt was on its way, and the role moved twice.
func TestBalance_B1_ARoleHandedToAnotherIsLeftToIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lock := newOrderLock(t)
		o := fastOpts() // lease 3 s, renewals every second, RetryInterval 2 s
		b := mustElector(t, "r", lock, o, leadership.WithIdentity("b"))
		mustStart(t, b)
		synctest.Wait()
		a := mustElector(t, "r", lock, o, leadership.WithIdentity("a"))
		c := mustElector(t, "r", lock, o, leadership.WithIdentity("c"))
		mustStart(t, a)
		mustStart(t, c)
		synctest.Wait() // both refused: they try again when the lease they learned ends, 3 s from now

		time.Sleep(o.Lease - o.Lease/6) // b renewed meanwhile; c's next attempt is half a second away
		gate := make(chan struct{})
		p.mu.Lock()
		p.agate = gate // a's attempt is on its way for a while
		p.mu.Unlock()
		if err := leadership.ResignTo(context.Background(), b, "a"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		time.Sleep(o.Lease / 4) // past c's attempt as it was due
		synctest.Wait()
		close(gate)
		synctest.Wait()
		if !a.IsLeader() || c.IsLeader() {
			t.Fatalf("a, the named taker, leads %v; c leads %v; want a", a.IsLeader(), c.IsLeader())
		}
		for _, e := range []*leadership.Elector{a, b, c} {
			mustStop(t, e)
		}
	})
}

// TestStopAll_E8_ReportsEveryElectorsError: StopAll joins the errors of
// the Stops that failed, each naming its role.
func TestStopAll_E8_ReportsEveryElectorsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &brokenProvider{mem: memlock.New(), unhang: make(chan struct{})}
		lock, err := locking.New(p, locking.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var es []*leadership.Elector
		for i := range 2 {
			e := mustElector(t, fmt.Sprintf("hang-%d", i), lock, fastOpts())
			mustStart(t, e)
			es = append(es, e)
		}
		synctest.Wait()
		p.hangRelease.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = leadership.StopAll(ctx, es...)
		cancel()
		for _, role := range []string{"hang-0", "hang-1"} {
			if err == nil || !strings.Contains(err.Error(), role) {
				t.Fatalf("StopAll = %v; want an error naming %q", err, role)
			}
		}
		close(p.unhang)
		synctest.Wait()
	})
}

// TestStopAll_H2_LeaveBoundsItsCallsInFlight: a process leaving more roles
// than a leave runs calls at once has at most CallsInFlight releases
// under way; the others wait their turn and all are made. Meanwhile a
// leader that is not leaving keeps renewing: its renewals do not wait
// behind the leave's calls.
func TestStopAll_H2_LeaveBoundsItsCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lock := newOrderLock(t)
		n := leadership.CallsInFlight + 100
		es := make([]*leadership.Elector, n)
		for i := range es {
			es[i] = mustElector(t, fmt.Sprintf("r%d", i), lock, fastOpts(), leadership.WithIdentity("a"))
			mustStart(t, es[i])
		}
		stays := mustElector(t, "x", lock, fastOpts(), leadership.WithIdentity("a"))
		mustStart(t, stays)
		synctest.Wait()
		for i, e := range es {
			if !e.IsLeader() {
				t.Fatalf("r%d: not leading before the leave", i)
			}
		}

		finish := stopAllHolding(p, &p.gate, es...)
		if got := p.count("release"); got != leadership.CallsInFlight {
			_ = finish()
			t.Fatalf("%d releases under way at once while %d roles leave; want %d", got, n, leadership.CallsInFlight)
		}
		// Two and a half renew intervals with the releases held (within
		// the leaving leases): the leader of x renews meanwhile.
		time.Sleep(fastOpts().RenewInterval * 5 / 2)
		synctest.Wait()
		if ext := p.count("extend"); !stays.IsLeader() || ext < 2 {
			t.Fatalf("while the leave's releases were held: x leading %v after %d renewals; want leading, at least 2", stays.IsLeader(), ext)
		}
		finishLeave(t, p, finish, es)
		mustStop(t, stays)
	})
}

// TestStopAll_H2_LeaveBeginsTwoWindowsOfStopsAtOnce: a process leaving
// more than two StopWindows of roles keeps the Stops of at most two
// windows under way (their records alive), so its memory does not peak
// with the number of roles: while the first releases are held, the
// terms of two windows have ended and the last leaders still wait their
// turn; once the releases go, every role is released, in order.
func TestStopAll_H2_LeaveBeginsTwoWindowsOfStopsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lock := newOrderLock(t)
		n := 2*leadership.StopWindow + 7
		es := make([]*leadership.Elector, n)
		for i := range es {
			es[i] = mustElector(t, fmt.Sprintf("r%d", i), lock, fastOpts(), leadership.WithIdentity("a"))
			mustStart(t, es[i])
		}
		synctest.Wait()

		finish := stopAllHolding(p, &p.gate, es...)
		ended := 0
		for _, e := range es {
			if !e.IsLeader() {
				ended++
			}
		}
		if ended != 2*leadership.StopWindow {
			_ = finish()
			t.Fatalf("%d of %d terms ended while the first releases were held; want %d (two windows)", ended, n, 2*leadership.StopWindow)
		}
		for i, e := range es[2*leadership.StopWindow:] {
			if !e.IsLeader() {
				_ = finish()
				t.Fatalf("r%d: its term ended before its window", 2*leadership.StopWindow+i)
			}
		}
		finishLeave(t, p, finish, es)
	})
}

// TestStopAll_H2_LeaveBoundsItsWithdrawals: the candidates of a process
// leaving more roles than a leave runs calls at once withdraw from their
// roles' participants at most CallsInFlight at a time, and all do.
func TestStopAll_H2_LeaveBoundsItsWithdrawals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lock := newOrderLock(t)
		n := leadership.CallsInFlight + 100
		as, bs := make([]*leadership.Elector, n), make([]*leadership.Elector, n)
		for i := range n {
			role := fmt.Sprintf("r%d", i)
			bs[i] = mustElector(t, role, lock, fastOpts(), leadership.WithIdentity("b"))
			mustStart(t, bs[i])
			as[i] = mustElector(t, role, lock, fastOpts(), leadership.WithIdentity("a"))
		}
		synctest.Wait()
		for _, e := range as {
			mustStart(t, e)
		}
		synctest.Wait()
		finish := stopAllHolding(p, &p.dgate, as...)
		got := p.count("deregister")
		if got != leadership.CallsInFlight {
			_ = finish()
			t.Fatalf("%d withdrawals under way at once while %d candidates leave; want %d", got, n, leadership.CallsInFlight)
		}
		if err := finish(); err != nil {
			t.Fatal(err)
		}
		// Each candidate withdraws once; its Stop has nothing more to
		// deregister (TestStopAll_H2_AWithdrawnCandidateIsDeregisteredOnce).
		if got := p.count("deregister"); got != n {
			t.Fatalf("%d deregistrations after the leave; want %d", got, n)
		}
		for _, e := range bs {
			if !e.IsLeader() {
				t.Fatal("b lost a role while a's candidates left")
			}
			mustStop(t, e)
		}
	})
}

// TestStopAll_H2_B1_StayersHandNothingToTheLeaver: three balancing
// processes share 12 roles; a leaves with StopAll while any
// deregistration of a's from the roles it led is slow (held). b and c
// take a's roles, each in one move, and neither hands a role on during
// the leave: a's release withdraws it from the role's participants in
// the same step, so the balance rounds of b and c, reading the
// participants of the roles they just took, neither count a (which made
// the share too small) nor choose it as a taker (it takes no role any
// more). With the deregistration a separate call after the release,
// b and c made 8 more moves here.
func TestStopAll_H2_B1_StayersHandNothingToTheLeaver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lock := newOrderLock(t)
		o := balanceOpts()
		const roles = 12
		a, b, c, moves := evenTrio(t, lock, o, roles)
		held := map[string]bool{}
		for _, e := range a.electors {
			if e.IsLeader() {
				held[e.Role()] = true
			}
		}
		gate := make(chan struct{})
		p.mu.Lock()
		p.dgate, p.dheld = gate, held
		p.mu.Unlock()
		left := make(chan error, 1)
		go func() { left <- leadership.StopAll(context.Background(), a.electors...) }()
		// Balance rounds of b and c run meanwhile.
		time.Sleep(4 * o.RetryInterval)
		synctest.Wait()
		acquired, _ := moves.read()
		if b.leads()+c.leads() != roles || acquired != 4 {
			t.Errorf("during the leave b and c lead %d and %d after %d acquisitions; want all 12 after 4 (each of a's roles moved once)",
				b.leads(), c.leads(), acquired)
		}
		close(gate)
		if err := <-left; err != nil {
			t.Fatal(err)
		}
		time.Sleep(4 * o.RetryInterval)
		synctest.Wait()
		if acquired, _ := moves.read(); b.leads()+c.leads() != roles || acquired != 4 {
			t.Errorf("after the leave b and c lead %d and %d after %d acquisitions; want all 12 after 4", b.leads(), c.leads(), acquired)
		}
		b.stop(t)
		c.stop(t)
	})
}

// TestStopAll_H2_B1_ARenewalLandingAfterTheLeaveRegistersNobody: as
// above, but a's renewals are on their way when it leaves and reach the
// lock only after its releases withdrew it. b and c still take each of
// a's roles in one move: a renewal that no longer extends a lease does
// not make its sender a participant again.
func TestStopAll_H2_B1_ARenewalLandingAfterTheLeaveRegistersNobody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lock := newOrderLock(t)
		o := balanceOpts()
		const roles = 12
		a, b, c, moves := evenTrio(t, lock, o, roles)
		hold := make(chan struct{})
		p.mu.Lock()
		p.egate, p.calls = hold, nil
		p.mu.Unlock()
		time.Sleep(o.RenewInterval) // a's renewals are on their way
		synctest.Wait()
		p.mu.Lock()
		p.egate = nil
		p.mu.Unlock()
		if n := p.count("extend"); n == 0 {
			t.Fatal("no renewal of a's under way when it leaves")
		}
		left := make(chan error, 1)
		go func() { left <- leadership.StopAll(context.Background(), a.electors...) }()
		synctest.Wait()
		close(hold) // the renewals land after the releases
		if err := <-left; err != nil {
			t.Fatal(err)
		}
		time.Sleep(4 * o.RetryInterval)
		synctest.Wait()
		if acquired, _ := moves.read(); b.leads()+c.leads() != roles || acquired != 4 {
			t.Errorf("after the leave b and c lead %d and %d after %d acquisitions; want all 12 after 4 (each of a's roles moved once)",
				b.leads(), c.leads(), acquired)
		}
		b.stop(t)
		c.stop(t)
	})
}

// evenTrio starts balancing processes a, then b and c, over lock, each
// running roles roles, waits until they lead a third each, and returns
// them with a log of b's and c's moves from then on.
func evenTrio(t *testing.T, lock locking.Lock, o leadership.Options, roles int) (a, b, c *process, moves *moveLog) {
	t.Helper()
	a = startProcess(t, lock, "a", roles, o)
	synctest.Wait()
	b = startProcess(t, lock, "b", roles, o)
	c = startProcess(t, lock, "c", roles, o)
	time.Sleep(10 * o.Lease) // the processes even out
	synctest.Wait()
	if n := roles / 3; a.leads() != n || b.leads() != n || c.leads() != n {
		t.Fatalf("before the leave a, b, c lead %d, %d, %d; want %d each", a.leads(), b.leads(), c.leads(), n)
	}
	moves = &moveLog{freeAt: map[string]time.Time{}}
	moves.watch(b)
	moves.watch(c)
	return a, b, c, moves
}
