package leadership_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// lockServer models one lock server over memlock that can restart without
// its data, as a Redis without persistence does: the keys, fences and
// subscriptions of the old server are gone. Each process reaches it
// through a serverView.
type lockServer struct {
	t     *testing.T
	mu    sync.Mutex
	cur   *locking.DistributedLock
	epoch int
	views []*serverView
}

func newLockServer(t *testing.T) *lockServer {
	s := &lockServer{t: t}
	s.cur = s.fresh()
	return s
}

func (s *lockServer) fresh() *locking.DistributedLock {
	l, err := locking.New(memlock.New(), locking.DefaultOptions())
	if err != nil {
		s.t.Fatal(err)
	}
	return l
}

// silently is a reconnect delay for view: the view's subscriptions move to
// a restarted server without a word, modelling a loss of state its
// subscriber was not told about.
const silently = time.Duration(-1)

// view returns a process's view of the server; its subscriptions come back
// reconnect after a restart.
func (s *lockServer) view(reconnect time.Duration) *serverView {
	v := &serverView{s: s, reconnect: reconnect}
	s.mu.Lock()
	s.views = append(s.views, v)
	s.mu.Unlock()
	return v
}

// restart replaces the server with an empty one. Every subscription drops
// (EventUnsubscribed) and comes back after its view's reconnect delay
// (EventSubscribed), unless the view moves silently.
func (s *lockServer) restart() {
	s.mu.Lock()
	s.cur = s.fresh()
	s.epoch++
	views := append([]*serverView(nil), s.views...)
	s.mu.Unlock()
	for _, v := range views {
		v.moved()
	}
}

func (s *lockServer) now() (*locking.DistributedLock, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur, s.epoch
}

// serverView is one process's client of a lockServer: a locking.Lock
// with owned acquisitions and event callbacks.
type serverView struct {
	s         *lockServer
	reconnect time.Duration

	mu   sync.Mutex
	subs []*viewSub
}

type viewSub struct {
	key     string
	fn      func(locking.Event)
	stop    func()
	swallow bool // drop the next EventSubscribed (a silent move)
	gone    bool
}

func (v *serverView) Coordinated() bool { return true }

func (v *serverView) TryAcquire(ctx context.Context, key string, d time.Duration) (locking.Lease, error) {
	return v.TryAcquireAs(ctx, key, d, "")
}

func (v *serverView) TryAcquireAs(ctx context.Context, key string, d time.Duration, owner string) (locking.Lease, error) {
	cur, epoch := v.s.now()
	l, err := cur.TryAcquireAs(ctx, key, d, owner)
	if err != nil {
		return nil, err
	}
	return &viewLease{Lease: l, s: v.s, epoch: epoch}, nil
}

func (v *serverView) Subscribe(key string, fn func(locking.Event)) (func(), error) {
	sub := &viewSub{key: key}
	sub.fn = func(ev locking.Event) {
		v.mu.Lock()
		drop := sub.gone || (sub.swallow && ev.Kind == locking.EventSubscribed)
		if sub.swallow && ev.Kind == locking.EventSubscribed {
			sub.swallow = false
		}
		v.mu.Unlock()
		if !drop {
			fn(ev)
		}
	}
	v.mu.Lock()
	v.subs = append(v.subs, sub)
	v.mu.Unlock()
	cur, _ := v.s.now()
	stop, err := cur.Subscribe(key, sub.fn)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	sub.stop = stop
	v.mu.Unlock()
	return func() {
		v.mu.Lock()
		sub.gone = true
		stop := sub.stop
		v.mu.Unlock()
		stop()
	}, nil
}

// moved re-subscribes every subscription of v on the server's new epoch.
func (v *serverView) moved() {
	silent := v.reconnect == silently
	v.mu.Lock()
	subs := append([]*viewSub(nil), v.subs...)
	v.mu.Unlock()
	for _, sub := range subs {
		v.mu.Lock()
		old, gone := sub.stop, sub.gone
		sub.swallow = silent
		v.mu.Unlock()
		if gone {
			continue
		}
		old()
		if !silent {
			sub.fn(locking.Event{Kind: locking.EventUnsubscribed})
		}
		resubscribe := func() {
			cur, _ := v.s.now()
			stop, err := cur.Subscribe(sub.key, sub.fn)
			if err != nil {
				v.s.t.Errorf("resubscribe %q: %v", sub.key, err)
				return
			}
			v.mu.Lock()
			sub.stop = stop
			v.mu.Unlock()
		}
		if silent || v.reconnect <= 0 {
			resubscribe()
		} else {
			time.AfterFunc(v.reconnect, resubscribe)
		}
	}
}

// inject delivers ev to v's subscribers of key, as if the server sent it.
func (v *serverView) inject(key string, ev locking.Event) {
	v.mu.Lock()
	subs := append([]*viewSub(nil), v.subs...)
	v.mu.Unlock()
	for _, sub := range subs {
		if sub.key == key {
			sub.fn(ev)
		}
	}
}

// viewLease is a lease of one server epoch: after a restart the server
// no longer knows it.
type viewLease struct {
	locking.Lease
	s     *lockServer
	epoch int
}

func (l *viewLease) Fence() uint64 { return l.Lease.(locking.Fenced).Fence() }

func (l *viewLease) Extend(ctx context.Context, d time.Duration) error {
	if _, epoch := l.s.now(); epoch != l.epoch {
		return locking.ErrLeaseLost
	}
	return l.Lease.Extend(ctx, d)
}

func (l *viewLease) Release(ctx context.Context) error {
	if _, epoch := l.s.now(); epoch != l.epoch {
		return nil
	}
	return l.Lease.Release(ctx)
}

// leaders counts the electors that lead now.
func leaders(es ...*leadership.Elector) int {
	n := 0
	for _, e := range es {
		if e.IsLeader() {
			n++
		}
	}
	return n
}

// TestElector_Q1_ResubscribedLeaderVerifiesAtOnce: a restart without
// persistence drops the leader's subscription; when it comes back (10ms
// later) the leader renews at once, is refused by the empty server, and
// takes the role again, instead of leading on a lease the server forgot
// until its next renewal (5s at the defaults).
func TestElector_Q1_ResubscribedLeaderVerifiesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newLockServer(t)
		o := leadership.DefaultOptions() // 15s lease, 5s renew, 2s retry
		a := mustElector(t, "r", srv.view(10*time.Millisecond), o, leadership.WithIdentity("a"))
		changes := subscribe(a)
		mustStart(t, a)
		defer mustStop(t, a)
		synctest.Wait()
		if !a.IsLeader() {
			t.Fatal("a does not lead")
		}
		oldFence := a.Fence()
		time.Sleep(time.Second) // renewals are due at 5s, 10s, ...
		srv.restart()
		synctest.Wait()
		if !a.IsLeader() || a.Term() != 1 {
			t.Fatalf("before the subscription came back: leader %v term %d, want still term 1", a.IsLeader(), a.Term())
		}
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if !a.IsLeader() || a.Term() != 2 || a.Fence() <= oldFence {
			t.Fatalf("10ms after the restart: leader %v term %d fence %d (was %d), want term 2 with a larger fence", a.IsLeader(), a.Term(), a.Fence(), oldFence)
		}
		got := changes.reasons()
		want := []leadership.Reason{leadership.Acquired, leadership.Refused, leadership.Acquired}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Fatalf("changes %v, want %v", got, want)
		}
	})
}

// TestElector_Q1_AcquisitionByAnotherOwnerEndsTheTermAtOnce: the server
// lost its state without the leader's subscription dropping; a candidate
// takes the free role at its next attempt, and the leader ends its term
// at the very instant it hears of it, like a refused renewal.
// leaderAndCandidate starts a over aLock, then b over bLock, both for role
// "r", checks that a leads and b follows, and stops both when the test
// ends.
func leaderAndCandidate(t *testing.T, o leadership.Options, aLock, bLock locking.Lock) (a, b *leadership.Elector) {
	t.Helper()
	a = mustElector(t, "r", aLock, o, leadership.WithIdentity("a"))
	b = mustElector(t, "r", bLock, o, leadership.WithIdentity("b"))
	mustStart(t, a)
	t.Cleanup(func() { mustStop(t, a) })
	synctest.Wait()
	mustStart(t, b)
	t.Cleanup(func() { mustStop(t, b) })
	synctest.Wait()
	if !a.IsLeader() || b.IsLeader() {
		t.Fatal("a should lead, b follow")
	}
	return a, b
}

func TestElector_Q1_AcquisitionByAnotherOwnerEndsTheTermAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newLockServer(t)
		o := leadership.DefaultOptions()
		a, b := leaderAndCandidate(t, o, srv.view(silently), srv.view(10*time.Millisecond))
		aChanges := subscribe(a)
		aToken := a.Token()
		srv.restart()
		// b's subscription comes back after 10ms and b tries after its
		// head start; a, told nothing, renews at 5s only.
		deadline := time.Now().Add(o.RetryInterval + time.Millisecond)
		for !b.IsLeader() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
			synctest.Wait()
			if n := leaders(a, b); n > 1 {
				t.Fatalf("two leaders at %v", time.Now())
			}
		}
		if !b.IsLeader() {
			t.Fatal("b did not take the role the server forgot")
		}
		took := time.Now()
		if a.IsLeader() || aToken.Err() == nil {
			t.Fatal("a still leads after b's acquisition was announced")
		}
		if !errors.Is(context.Cause(aToken), leadership.ErrNotLeader) {
			t.Fatalf("a's token cause %v", context.Cause(aToken))
		}
		all := aChanges.all()
		last := all[len(all)-1]
		if last.IsLeader || last.Reason != leadership.Refused || !last.At.Equal(took) {
			t.Fatalf("a's last change %+v, want a loss (refused) at %v", last, took)
		}
		// a contended again at once and learned that b holds the role.
		if id, ok := a.Leader(); !ok || id != "b" {
			t.Fatalf("a observes leader %q %v, want b", id, ok)
		}
	})
}

// TestElector_Q1_CandidateWaitsForItsLinkWhileTheLeaderVerifies: after the
// server restarted without its data, a candidate whose subscription has not
// come back does not take the role (the leader, which may still be working
// for it, learns of the loss first); the leader's renewal is refused, it
// contends again at once and leads again. Never two leaders.
func TestElector_Q1_CandidateWaitsForItsLinkWhileTheLeaderVerifies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newLockServer(t)
		o := leadership.DefaultOptions()
		a, b := leaderAndCandidate(t, o, srv.view(silently), srv.view(time.Hour))
		aChanges := subscribe(a)
		restarted := time.Now()
		srv.restart()
		// For a lease after its subscription dropped, b waits for it; a
		// renews at its cadence (5s), is refused and takes the role again.
		for time.Since(restarted) < o.Lease+o.RetryInterval {
			time.Sleep(time.Millisecond)
			synctest.Wait()
			if b.IsLeader() {
				t.Fatalf("b took the role %v after the restart, with its subscription down", time.Since(restarted))
			}
		}
		if !a.IsLeader() {
			t.Fatal("a does not lead again after its refused renewal")
		}
		var lost, again bool
		for _, c := range aChanges.all() {
			switch {
			case !c.IsLeader && c.Reason == leadership.Refused:
				lost = true
			case c.IsLeader && lost:
				again = true
			}
		}
		if !lost || !again {
			t.Fatalf("a's changes %+v: want a refused renewal, then a new term", aChanges.all())
		}
	})
}

// durableView is a serverView over a backend that says it keeps its
// leases across restarts (locking.Durable).
type durableView struct{ *serverView }

func (durableView) Durable() bool { return true }

// takeFreedRole starts b over the lock view makes of srv while another
// process holds role "r", restarts srv without that lease (nobody
// announces it) with b's subscription down for an hour, and returns how
// long after the restart b led.
func takeFreedRole(t *testing.T, o leadership.Options, view func(*lockServer) locking.Lock) time.Duration {
	t.Helper()
	srv := newLockServer(t)
	if _, err := srv.view(silently).TryAcquireAs(context.Background(), "leader:r", o.Lease, "gone"); err != nil {
		t.Fatal(err)
	}
	b := mustElector(t, "r", view(srv), o, leadership.WithIdentity("b"))
	mustStart(t, b)
	t.Cleanup(func() { mustStop(t, b) })
	synctest.Wait()
	if b.IsLeader() {
		t.Fatal("b leads a role another process holds")
	}
	restarted := time.Now()
	srv.restart()
	for !b.IsLeader() && time.Since(restarted) < 2*o.Lease {
		time.Sleep(time.Millisecond)
		synctest.Wait()
	}
	if !b.IsLeader() {
		t.Fatalf("b does not lead %v after the restart", time.Since(restarted))
	}
	return time.Since(restarted)
}

// TestElector_Q1_CandidateTriesALeaseAfterItsLinkDropped: a subscription
// that does not come back keeps a candidate from a free role for one lease
// after it dropped, no longer: a leader cut off that long has lost its term
// by its own deadline. Over a backend that keeps its leases across
// restarts (locking.Durable) nothing was lost, so the candidate keeps its
// cadence: it takes the role one RetryInterval after the drop.
func TestElector_Q1_CandidateTriesALeaseAfterItsLinkDropped(t *testing.T) {
	o := leadership.DefaultOptions()
	for _, c := range []struct {
		name     string
		view     func(*lockServer) locking.Lock
		min, max time.Duration
	}{
		{"volatile", func(s *lockServer) locking.Lock { return s.view(time.Hour) }, o.Lease, o.Lease + time.Millisecond},
		{"durable", func(s *lockServer) locking.Lock { return durableView{s.view(time.Hour)} }, 0, o.RetryInterval + time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if took := takeFreedRole(t, o, c.view); took < c.min || took > c.max {
					t.Fatalf("b took the free role %v after its subscription dropped, want %v to %v", took, c.min, c.max)
				}
			})
		})
	}
}

// stallingView is a serverView whose acquisitions wait, while stalled,
// until they are let go or their context ends: a call waiting for a
// connection to a server that is down.
type stallingView struct {
	*serverView
	mu    sync.Mutex
	stall chan struct{} // nil: not stalled
}

func (v *stallingView) TryAcquire(ctx context.Context, key string, d time.Duration) (locking.Lease, error) {
	return v.TryAcquireAs(ctx, key, d, "")
}

func (v *stallingView) TryAcquireAs(ctx context.Context, key string, d time.Duration, owner string) (locking.Lease, error) {
	v.mu.Lock()
	stall := v.stall
	v.mu.Unlock()
	if stall != nil {
		select {
		case <-stall:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return v.serverView.TryAcquireAs(ctx, key, d, owner)
}

// TestElector_Q1_AttemptUnderWayWhenTheLinkDropsIsAbandoned: a candidate's
// acquisition still under way when its subscription drops (waiting for a
// connection to a restarting server) is abandoned, not sent the moment the
// server is back ahead of the leader's verification; the next attempt
// waits for the link.
func TestElector_Q1_AttemptUnderWayWhenTheLinkDropsIsAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newLockServer(t)
		o := leadership.DefaultOptions()
		bv := &stallingView{serverView: srv.view(time.Hour)}
		_, b := leaderAndCandidate(t, o, srv.view(silently), bv)
		// b's next attempt stalls; a release notice makes it try now.
		stall := make(chan struct{})
		bv.mu.Lock()
		bv.stall = stall
		bv.mu.Unlock()
		bv.inject("leader:r", locking.Event{Kind: locking.EventReleased})
		synctest.Wait()
		restarted := time.Now()
		srv.restart() // b's subscription drops and stays down
		synctest.Wait()
		close(stall) // the server is back: a stalled call would go out now
		for time.Since(restarted) < o.Lease {
			time.Sleep(time.Millisecond)
			synctest.Wait()
			if b.IsLeader() {
				t.Fatalf("b took the role %v after the restart with the attempt it began before its link dropped", time.Since(restarted))
			}
		}
	})
}

// TestElector_Q1_LateOrOwnAcquisitionNoticeKeepsTheTerm: an announcement
// with a smaller fence (an earlier acquisition delivered late) or with the
// term's own fence does not end the term.
func TestElector_Q1_LateOrOwnAcquisitionNoticeKeepsTheTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newLockServer(t)
		v := srv.view(0)
		a := mustElector(t, "r", v, fastOpts(), leadership.WithIdentity("a"))
		mustStart(t, a)
		defer mustStop(t, a)
		synctest.Wait()
		f := a.Fence()
		if f == 0 {
			t.Fatal("no fence")
		}
		v.inject(a.LockKey(), locking.Event{Kind: locking.EventAcquired, Owner: "b", Fence: f - 1})
		v.inject(a.LockKey(), locking.Event{Kind: locking.EventAcquired, Owner: "a", Fence: f})
		synctest.Wait()
		if !a.IsLeader() || a.Term() != 1 {
			t.Fatalf("leader %v term %d after a late and an own notice, want term 1", a.IsLeader(), a.Term())
		}
		v.inject(a.LockKey(), locking.Event{Kind: locking.EventAcquired, Owner: "b", Fence: f + 1})
		if a.IsLeader() {
			// The loop takes the event on its own goroutine; at the next
			// quiet instant it has.
			synctest.Wait()
		}
		if a.IsLeader() && a.Term() == 1 {
			t.Fatal("a larger fence did not end the term")
		}
	})
}

// TestElector_Q1_UnfencedNoticeGivesTheLeaseBack: over a lock whose events
// carry no fence, an acquisition by another owner ends the term too; the
// lease is given back first, so when the notice was a late one this
// instance takes the role again at once instead of being refused by its
// own lease for up to a lease.
func TestElector_Q1_UnfencedNoticeGivesTheLeaseBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newLockServer(t)
		v := srv.view(0)
		a := mustElector(t, "r", v, leadership.DefaultOptions(), leadership.WithIdentity("a"))
		changes := subscribe(a)
		mustStart(t, a)
		defer mustStop(t, a)
		synctest.Wait()
		v.inject(a.LockKey(), locking.Event{Kind: locking.EventAcquired, Owner: "b"}) // no fence
		synctest.Wait()
		if !a.IsLeader() || a.Term() != 2 {
			t.Fatalf("leader %v term %d, want term 2 at once", a.IsLeader(), a.Term())
		}
		got := changes.reasons()
		if len(got) != 3 || got[1] != leadership.Refused {
			t.Fatalf("changes %v, want acquired, refused, acquired", got)
		}
	})
}

// TestElector_Q1_RestartWithTwoReplicasLeavesNoOverlap: a leader and a
// candidate whose subscriptions come back 5ms and 5ms after a restart: at
// no instant do both lead, and one of them leads again within a few
// milliseconds.
func TestElector_Q1_RestartWithTwoReplicasLeavesNoOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newLockServer(t)
		o := leadership.DefaultOptions()
		a := mustElector(t, "r", srv.view(5*time.Millisecond), o, leadership.WithIdentity("a"))
		b := mustElector(t, "r", srv.view(5*time.Millisecond), o, leadership.WithIdentity("b"))
		mustStart(t, a)
		defer mustStop(t, a)
		synctest.Wait()
		mustStart(t, b)
		defer mustStop(t, b)
		synctest.Wait()
		time.Sleep(700 * time.Millisecond)
		srv.restart()
		for range 3000 {
			time.Sleep(time.Millisecond)
			synctest.Wait()
			if leaders(a, b) > 1 {
				t.Fatalf("two leaders at %v", time.Now())
			}
		}
		if leaders(a, b) != 1 {
			t.Fatal("nobody leads after the restart")
		}
	})
}

// deafView is a serverView whose acquisitions, while stalled, wait to be
// let go whatever their context says, then fail with the context's error:
// a call on the wire when the server went away, whose caller waits for
// the reply the reconnected client brings (redislock's pipelined calls
// do, up to its cleanup timeout).
type deafView struct {
	*serverView
	mu    sync.Mutex
	stall chan struct{} // nil: not stalled
}

func (v *deafView) TryAcquire(ctx context.Context, key string, d time.Duration) (locking.Lease, error) {
	return v.TryAcquireAs(ctx, key, d, "")
}

func (v *deafView) TryAcquireAs(ctx context.Context, key string, d time.Duration, owner string) (locking.Lease, error) {
	v.mu.Lock()
	stall := v.stall
	v.mu.Unlock()
	if stall != nil {
		<-stall
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return v.serverView.TryAcquireAs(ctx, key, d, owner)
}

// TestElector_Q1_AttemptReturningAfterTheLinkCameBackWaitsForTheHeadStart:
// a candidate's acquisition under way when its subscription dropped is
// abandoned, but its outcome may come only once the server is back (the
// reply to a call that was on the wire), after the subscription came
// back, and more than a RetryInterval after it was sent. The next attempt
// still waits for the head start after the link came back, the leader's
// time to verify its lease: it is not made at once on that outcome.
// (It was: in some of a restart probe's runs the candidate took the role
// tens of milliseconds before a leader whose own link came back later
// learned that the server had lost it.)
func TestElector_Q1_AttemptReturningAfterTheLinkCameBackWaitsForTheHeadStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := leadership.DefaultOptions()
		o.Lease, o.RenewInterval, o.RetryInterval = time.Second, 250*time.Millisecond, 250*time.Millisecond
		const reconnect, headStart = 400 * time.Millisecond, 50 * time.Millisecond
		srv := newLockServer(t)
		// Another process leads; the restart takes its lease away, and
		// it never learns of it here.
		if _, err := srv.view(silently).TryAcquireAs(context.Background(), "leader:r", o.Lease, "gone"); err != nil {
			t.Fatal(err)
		}
		bv := &deafView{serverView: srv.view(reconnect)}
		b := mustElector(t, "r", bv, o, leadership.WithIdentity("b"))
		mustStart(t, b)
		t.Cleanup(func() { mustStop(t, b) })
		synctest.Wait()
		if b.IsLeader() {
			t.Fatal("b leads a role another process holds")
		}
		// b's next attempt stalls; a release notice makes it try now.
		stall := make(chan struct{})
		bv.mu.Lock()
		bv.stall = stall
		bv.mu.Unlock()
		bv.inject("leader:r", locking.Event{Kind: locking.EventReleased})
		synctest.Wait()
		restarted := time.Now()
		srv.restart() // b's link drops; it comes back after reconnect
		time.Sleep(reconnect + headStart/5)
		synctest.Wait()
		bv.mu.Lock()
		bv.stall = nil
		bv.mu.Unlock()
		close(stall) // the abandoned attempt's outcome arrives now
		synctest.Wait()
		for time.Since(restarted) < reconnect+headStart {
			if b.IsLeader() {
				t.Fatalf("b took the role %v after its link came back, within the head start of %v",
					time.Since(restarted)-reconnect, headStart)
			}
			time.Sleep(time.Millisecond)
			synctest.Wait()
		}
		for !b.IsLeader() && time.Since(restarted) < reconnect+o.RetryInterval {
			time.Sleep(time.Millisecond)
			synctest.Wait()
		}
		if !b.IsLeader() {
			t.Fatalf("b does not lead %v after the restart", time.Since(restarted))
		}
	})
}

// TestElector_Q1_ExpiredLeaseIsVerifiedByItsLeaderFirst: the server ends
// the leader's lease early (an etcd member that revoked live leases) and
// announces it as an expiry, not a release. The leader verifies its lease
// at once and ends its term at the instant of the announcement; the
// candidate holds back for the head start instead of taking the role at
// once, so the two never lead together. (Taken as a release, the
// candidate would take the role at once, and the leader, which ignores
// releases, would learn of its loss only from the candidate's
// acquisition: in real time, two leaders for as long as that notice
// takes. Here, in fake time, that shows as b leading at the end.)
func TestElector_Q1_ExpiredLeaseIsVerifiedByItsLeaderFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newLockServer(t)
		o := leadership.DefaultOptions() // 15s lease, 5s renew, 2s retry
		va, vb := srv.view(silently), srv.view(silently)
		a, b := leaderAndCandidate(t, o, va, vb)
		aChanges := subscribe(a)
		aToken, oldFence := a.Token(), a.Fence()
		time.Sleep(time.Second) // the next renewal is due at 5s
		srv.restart()           // the lease is gone, nobody told
		expired := locking.Event{Kind: locking.EventReleased, Expired: true}
		va.inject("leader:r", expired)
		vb.inject("leader:r", expired)
		at := time.Now()
		synctest.Wait()
		if aToken.Err() == nil {
			t.Fatal("a's term still runs after its lease was announced expired")
		}
		all := aChanges.all()
		if len(all) == 0 || all[0].IsLeader || all[0].Reason != leadership.Refused || !all[0].At.Equal(at) {
			t.Fatalf("a's changes %+v, want a loss (refused) at %v", all, at)
		}
		for end := at.Add(o.RetryInterval); time.Now().Before(end); {
			if n := leaders(a, b); n > 1 {
				t.Fatalf("two leaders at %v", time.Since(at))
			}
			time.Sleep(time.Millisecond)
			synctest.Wait()
		}
		// a contended again at once and leads a new term; b, which held
		// back, was refused.
		if !a.IsLeader() || a.Fence() <= oldFence || b.IsLeader() {
			t.Fatalf("a leads %v (fence %d, was %d), b leads %v; want a in a new term", a.IsLeader(), a.Fence(), oldFence, b.IsLeader())
		}
	})
}

// TestElector_Q1_CandidateGivesAnExpiredHolderAHeadStart: a candidate
// told that the holder's lease expired tries after the head start (50 ms
// at the defaults), not at once, and not at the end of the lease it had
// learned.
func TestElector_Q1_CandidateGivesAnExpiredHolderAHeadStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newLockServer(t)
		o := leadership.DefaultOptions()
		vb := srv.view(silently)
		if _, err := vb.TryAcquireAs(context.Background(), "leader:r", o.Lease, "x"); err != nil {
			t.Fatal(err)
		}
		b := mustElector(t, "r", vb, o, leadership.WithIdentity("b"))
		mustStart(t, b)
		t.Cleanup(func() { mustStop(t, b) })
		synctest.Wait()
		if b.IsLeader() {
			t.Fatal("b leads a held role")
		}
		time.Sleep(time.Second)
		srv.restart()
		vb.inject("leader:r", locking.Event{Kind: locking.EventReleased, Expired: true})
		at := time.Now()
		time.Sleep(49 * time.Millisecond)
		synctest.Wait()
		if b.IsLeader() {
			t.Fatalf("b took the role %v after the expiry, within the holder's head start", time.Since(at))
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if !b.IsLeader() {
			t.Fatalf("b does not lead %v after the expiry", time.Since(at))
		}
	})
}

// TestDescribe_Q1_SubscribedFollowsTheLink: Describe reports whether the
// elector's subscription to its role's events is live: not before Start,
// once it came up, not while a restarted server's subscription is down,
// again once it is back, and not after Stop. Tests and tools that must
// not send a request through the lock before the leader can hear it (a
// resign, a hand-over) wait for it.
func TestDescribe_Q1_SubscribedFollowsTheLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newLockServer(t)
		e := mustElector(t, "r", srv.view(time.Second), fastOpts())
		if leadership.Describe(e).Subscribed {
			t.Fatal("Subscribed before Start")
		}
		mustStart(t, e)
		synctest.Wait()
		if !leadership.Describe(e).Subscribed {
			t.Fatal("not Subscribed once started")
		}
		srv.restart() // the subscription comes back a second later
		synctest.Wait()
		if leadership.Describe(e).Subscribed {
			t.Fatal("Subscribed while the restarted server's subscription is down")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if !leadership.Describe(e).Subscribed {
			t.Fatal("not Subscribed once the subscription came back")
		}
		mustStop(t, e)
		if leadership.Describe(e).Subscribed {
			t.Fatal("Subscribed after Stop")
		}
	})
}
