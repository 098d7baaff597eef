package leadership_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// countingLock counts acquisition attempts and forwards everything else,
// optional interfaces included, to the DistributedLock it embeds.
type countingLock struct {
	*locking.DistributedLock
	attempts atomic.Int64
}

func (c *countingLock) TryAcquireAs(ctx context.Context, key string, d time.Duration, owner string) (locking.Lease, error) {
	c.attempts.Add(1)
	return c.DistributedLock.TryAcquireAs(ctx, key, d, owner)
}

func (c *countingLock) TryAcquirePriority(ctx context.Context, key string, d time.Duration, owner string, priority int, yield time.Duration) (locking.Lease, error) {
	c.attempts.Add(1)
	return c.DistributedLock.TryAcquirePriority(ctx, key, d, owner, priority, yield)
}

// identities records what OnNewLeader reports.
type identities struct {
	mu  sync.Mutex
	ids []string
}

func watchLeaders(e *leadership.Elector) *identities {
	r := &identities{}
	e.OnNewLeader(func(id string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.ids = append(r.ids, id)
	})
	return r
}

func (r *identities) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ids)
}

func TestElector_P2_EveryInstanceLearnsTheLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		a := mustElector(t, "r", lock, fastOpts(), leadership.WithIdentity("a"))
		b := mustElector(t, "r", lock, fastOpts(), leadership.WithIdentity("b"))
		seenA, seenB := watchLeaders(a), watchLeaders(b)
		mustStart(t, a)
		synctest.Wait()
		mustStart(t, b)
		defer mustStop(t, b)
		synctest.Wait()
		if id, ok := b.Leader(); !ok || id != "a" {
			t.Fatalf("candidate's Leader() = %q, %v; want a (learned without I/O)", id, ok)
		}
		if d := leadership.Describe(b); d.Leader != "a" {
			t.Fatalf("Describe(b).Leader = %q", d.Leader)
		}
		mustStop(t, a) // graceful handover: b leads at once
		synctest.Wait()
		if id, ok := b.Leader(); !ok || id != "b" || !b.IsLeader() {
			t.Fatalf("after the handover Leader() = %q, %v, IsLeader %v", id, ok, b.IsLeader())
		}
		if got := seenA.all(); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("OnNewLeader on a = %v, want [a]", got)
		}
		if got := seenB.all(); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("OnNewLeader on b = %v, want [a b] (never empty, once per change)", got)
		}
	})
}

func TestElector_P3_QuietCandidateSleepsUntilTheLearnedExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := &countingLock{DistributedLock: memLock(t)}
		o := leadership.DefaultOptions() // 15s lease, 5s renew, 2s retry
		a := mustElector(t, "r", lock, o, leadership.WithIdentity("a"))
		mustStart(t, a)
		synctest.Wait()
		b := mustElector(t, "r", lock, o, leadership.WithIdentity("b"))
		before := lock.attempts.Load()
		mustStart(t, b)
		defer mustStop(t, b)
		time.Sleep(time.Minute)
		synctest.Wait()
		// The RetryInterval cadence would be 30 attempts; the learned
		// expiry (up to 15s) allows a handful.
		if n := lock.attempts.Load() - before; n > 8 {
			t.Fatalf("candidate made %d attempts in a minute with a live subscription", n)
		}
		// It still takes over at once on a release.
		mustStop(t, a)
		synctest.Wait()
		if !b.IsLeader() {
			t.Fatal("the quiet candidate did not take over on the release")
		}
	})
}

func TestElector_P3_CrashTakeoverAtTheLearnedExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		// A crashed holder: its lease runs out in 7s and nobody releases it.
		if _, err := lock.TryAcquireAs(bg, "leader:r", 7*time.Second, "crashed"); err != nil {
			t.Fatal(err)
		}
		e := mustElector(t, "r", lock, leadership.DefaultOptions())
		start := time.Now()
		mustStart(t, e)
		defer mustStop(t, e)
		if err := e.WaitForLeadership(bg); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 7*time.Second {
			t.Fatalf("took over after %v, want at the expiry", got)
		}
	})
}

// shortLock reports each refusal's remaining time short by the
// millisecond, as Redis reports the time until the expiry millisecond
// begins and frees the key only once it has passed.
type shortLock struct {
	countingLock
}

func (s *shortLock) TryAcquirePriority(ctx context.Context, key string, d time.Duration, owner string, priority int, yield time.Duration) (locking.Lease, error) {
	l, err := s.countingLock.TryAcquirePriority(ctx, key, d, owner, priority, yield)
	if held := (*locking.HeldError)(nil); errors.As(err, &held) {
		held.Remaining = max(held.Remaining-time.Millisecond, time.Microsecond)
	}
	return l, err
}

func TestElector_P3_FinalMillisecondRetriedAtOnceBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := &shortLock{countingLock{DistributedLock: memLock(t)}}
		// A crashed holder: its lease runs out in 7s and nobody releases it.
		if _, err := lock.TryAcquireAs(bg, "leader:r", 7*time.Second, "crashed"); err != nil {
			t.Fatal(err)
		}
		e := mustElector(t, "r", lock, leadership.DefaultOptions())
		start := time.Now()
		before := lock.attempts.Load()
		mustStart(t, e)
		defer mustStop(t, e)
		if err := e.WaitForLeadership(bg); err != nil {
			t.Fatal(err)
		}
		// Told 6.999s, the candidate tries then; the key is held for one
		// more millisecond, and fake time does not pass between tries, so
		// it retries at once as many times as allowed, then waits the
		// millisecond past the reported 1µs.
		if got, want := time.Since(start), 7*time.Second+time.Microsecond; got != want {
			t.Fatalf("took over after %v, want %v", got, want)
		}
		// The first attempt (and one more when the subscription comes up),
		// the one at 6.999s, the bounded immediate tries, the timed one.
		least := int64(1 + 1 + leadership.MaxFinalTries + 1)
		if n := lock.attempts.Load() - before; n < least || n > least+1 {
			t.Fatalf("%d attempts, want %d or %d", n, least, least+1)
		}
	})
}

// slowRefusalLock returns the outcome of an acquisition attempt by owner
// slow only after a delay, as over a slow link: a release the holder makes
// meanwhile arrives while the attempt is under way.
type slowRefusalLock struct {
	*locking.DistributedLock
	slow  string
	delay time.Duration
}

func (s *slowRefusalLock) TryAcquireAs(ctx context.Context, key string, d time.Duration, owner string) (locking.Lease, error) {
	l, err := s.DistributedLock.TryAcquireAs(ctx, key, d, owner)
	if owner == s.slow {
		time.Sleep(s.delay)
	}
	return l, err
}

func (s *slowRefusalLock) TryAcquirePriority(ctx context.Context, key string, d time.Duration, owner string, priority int, yield time.Duration) (locking.Lease, error) {
	l, err := s.DistributedLock.TryAcquirePriority(ctx, key, d, owner, priority, yield)
	if owner == s.slow {
		time.Sleep(s.delay)
	}
	return l, err
}

func TestElector_P3_E8_ReleaseDuringARefusedAttemptStillWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := &slowRefusalLock{DistributedLock: memLock(t), slow: "b", delay: 50 * time.Millisecond}
		o := leadership.DefaultOptions() // 15s lease, 5s renew, 2s retry
		a := mustElector(t, "r", lock, o, leadership.WithIdentity("a"))
		b := mustElector(t, "r", lock, o, leadership.WithIdentity("b"))
		mustStart(t, a)
		defer mustStop(t, a)
		synctest.Wait()
		mustStart(t, b) // b's first attempt is refused, and the refusal takes 50ms to arrive
		defer mustStop(t, b)
		time.Sleep(10 * time.Millisecond)
		if err := a.Resign(bg); err != nil { // released while b's attempt is under way
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		// Without the wake b would sleep until the lease it was told about
		// ran out (15s), and a would take the role back after sitting out
		// one RetryInterval.
		if !b.IsLeader() || a.IsLeader() {
			t.Fatalf("b leads %v, a leads %v: the release during b's attempt was lost", b.IsLeader(), a.IsLeader())
		}
	})
}

// lateSubscriptionLock subscribes to a key's events only after a delay,
// as a new process's first SUBSCRIBE may complete after its first
// acquisition attempt: events before that are not seen.
type lateSubscriptionLock struct {
	*locking.DistributedLock
	delay time.Duration
}

func (l *lateSubscriptionLock) Subscribe(key string, fn func(locking.Event)) (func(), error) {
	var mu sync.Mutex
	var stop func()
	stopped := false
	t := time.AfterFunc(l.delay, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			stop, _ = l.DistributedLock.Subscribe(key, fn)
		}
	})
	return func() {
		t.Stop()
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		if stop != nil {
			stop()
		}
	}, nil
}

func TestElector_P3_B1_ReleaseBeforeTheFirstSubscriptionIsNotMissed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := memLock(t)
		o := leadership.DefaultOptions() // 15s lease, 5s renew, 2s retry
		a := mustElector(t, "r", inner, o, leadership.WithIdentity("a"))
		mustStart(t, a)
		defer mustStop(t, a)
		synctest.Wait()
		late := &lateSubscriptionLock{DistributedLock: inner, delay: 100 * time.Millisecond}
		b := mustElector(t, "r", late, o, leadership.WithIdentity("b"))
		mustStart(t, b) // refused at once; its subscription comes up at 100ms
		defer mustStop(t, b)
		time.Sleep(10 * time.Millisecond)
		if err := a.Resign(bg); err != nil { // b cannot hear this release
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if !b.IsLeader() {
			t.Fatal("b did not try when its subscription came up after a release it could not hear")
		}
	})
}

func TestElector_P1_Participants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		a := mustElector(t, "r", lock, fastOpts(), leadership.WithIdentity("a"))
		b := mustElector(t, "r", lock, fastOpts(), leadership.WithIdentity("b"))
		started := time.Now()
		mustStart(t, a)
		synctest.Wait()
		mustStart(t, b)
		synctest.Wait()
		ps, err := b.Participants(bg)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(ps, func(x, y leadership.Participant) int { return cmpStr(x.Identity, y.Identity) })
		want := []leadership.Participant{{Identity: "a", Leader: true, Since: started}, {Identity: "b", Since: started}}
		if !slices.Equal(ps, want) {
			t.Fatalf("Participants = %+v, want %+v", ps, want)
		}
		if err := a.Resign(bg); err != nil { // still a participant (P1 pinned)
			t.Fatal(err)
		}
		synctest.Wait()
		if ps, _ := b.Participants(bg); len(ps) != 2 {
			t.Fatalf("after Resign: %+v, want both still registered", ps)
		}
		mustStop(t, a) // deregisters at once
		ps, _ = b.Participants(bg)
		if len(ps) != 1 || ps[0].Identity != "b" || !ps[0].Leader {
			t.Fatalf("after a's Stop: %+v, want only b, leading", ps)
		}
		mustStop(t, b)
	})
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Over a real redis-server: when the pub/sub connection is killed, the
// candidate falls back to the RetryInterval cadence, and when it is back it
// makes one immediate attempt (P3).
func TestElector_P3_Redis_SubscriptionDropFallsBackAndRetriesOnce(t *testing.T) {
	srv := redistest.Start(t)
	node := newRedisNode(t, srv)
	lock := &countingLock{DistributedLock: node.lock}
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval = 20*time.Second, 5*time.Second, 300*time.Millisecond
	a := mustElector(t, "p3", lock, o, leadership.WithIdentity("a"))
	mustStart(t, a)
	defer mustStop(t, a)
	if err := a.WaitForLeadership(bg); err != nil {
		t.Fatal(err)
	}
	b := mustElector(t, "p3", lock, o, leadership.WithIdentity("b"))
	mustStart(t, b)
	defer mustStop(t, b)
	waitFor(t, func() bool { id, ok := b.Leader(); return ok && id == "a" })
	// Quiet: with a live subscription and a 20s lease, no attempt for a
	// while after the first refusal.
	time.Sleep(time.Second)
	quiet := lock.attempts.Load()
	time.Sleep(1500 * time.Millisecond)
	if n := lock.attempts.Load() - quiet; n != 0 {
		t.Fatalf("%d attempts while quiet; want none before the learned expiry", n)
	}
	// Kill the pub/sub connections: the candidate learns the subscription
	// dropped (and would retry on the 300ms cadence while it stays down),
	// and tries once as soon as it is back (go-redis reconnects on its
	// own): a release published meanwhile may have been lost.
	if err := srv.Client(t).Do(bg, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return lock.attempts.Load()-quiet >= 1 })
	if b.IsLeader() {
		t.Fatal("two leaders")
	}
	// Back to quiet once the subscription is live again.
	waitFor(t, func() bool {
		n := lock.attempts.Load()
		time.Sleep(1200 * time.Millisecond)
		return lock.attempts.Load() == n
	})
	// A release still wakes it at once.
	mustStop(t, a)
	waitFor(t, b.IsLeader)
}

// waitFor polls cond for up to 10s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestElector_P1_ParticipantsMarkTheHolderTheLockRead: an instance that
// has learned nothing yet (not started) still sees who leads, because
// the lock reads the holder in the same step as the participants.
func TestElector_P1_ParticipantsMarkTheHolderTheLockRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		a := mustElector(t, "r", lock, fastOpts(), leadership.WithIdentity("a"))
		b := mustElector(t, "r", lock, fastOpts(), leadership.WithIdentity("b"))
		mustStart(t, a)
		defer mustStop(t, a)
		mustStart(t, b)
		defer mustStop(t, b)
		synctest.Wait()
		observer := mustElector(t, "r", lock, fastOpts(), leadership.WithIdentity("observer"))
		if _, ok := observer.Leader(); ok {
			t.Fatal("an elector that never ran has learned a leader")
		}
		ps, err := observer.Participants(bg)
		if err != nil {
			t.Fatal(err)
		}
		leaders := 0
		for _, p := range ps {
			if p.Leader {
				leaders++
				if want := map[bool]string{true: "a", false: "b"}[a.IsLeader()]; p.Identity != want {
					t.Fatalf("leader marked %q, want %s", p.Identity, want)
				}
			}
		}
		if len(ps) != 2 || leaders != 1 {
			t.Fatalf("Participants = %+v, want a and b, one of them leading", ps)
		}
	})
}

// TestElector_P2_EveryInstanceLogsTheNewLeader: the leader and every
// follower log LeadershipNewLeader at Info when the leader they observe
// changes, naming the role, the leader, the one before it, and (on the
// leader itself, where it is known) the term and fence.
func TestElector_P2_EveryInstanceLogsTheNewLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		type instance struct {
			e    *leadership.Elector
			logs *observer.ObservedLogs
		}
		var ins []instance
		for _, id := range []string{"a", "b", "c"} {
			log, logs := observed()
			ins = append(ins, instance{mustElector(t, "r", lock, fastOpts(), leadership.WithIdentity(id), leadership.WithLogger(log)), logs})
		}
		a, b, c := ins[0], ins[1], ins[2]
		mustStart(t, a.e)
		synctest.Wait()
		fenceA := a.e.Fence()
		mustStart(t, b.e)
		mustStart(t, c.e)
		defer mustStop(t, c.e)
		synctest.Wait()
		mustStop(t, a.e) // hands over to b or c
		time.Sleep(3 * time.Second)
		synctest.Wait()
		next := b
		if c.e.IsLeader() {
			next = c
		}
		defer mustStop(t, b.e)
		if !next.e.IsLeader() {
			t.Fatal("nobody took over")
		}
		fenceNext := next.e.Fence()

		type line struct {
			leader, previous string
			self             bool
			fence            uint64
		}
		lines := func(logs *observer.ObservedLogs) []line {
			var out []line
			for _, en := range logs.FilterMessage("LeadershipNewLeader").All() {
				if en.Level != zapcore.InfoLevel {
					t.Errorf("LeadershipNewLeader at %v, want Info", en.Level)
				}
				f := en.ContextMap()
				if f["role"] != "r" {
					t.Errorf("LeadershipNewLeader without role r: %v", f)
				}
				l := line{leader: fmt.Sprint(f["leader"]), self: f["self"] == true}
				if p, ok := f["previous"]; ok {
					l.previous = fmt.Sprint(p)
				}
				if fe, ok := f["fence"]; ok {
					l.fence = fe.(uint64)
				}
				out = append(out, l)
			}
			return out
		}
		nextID := next.e.Identity()
		if got, want := lines(a.logs), []line{{leader: "a", self: true, fence: fenceA}}; !slices.Equal(got, want) {
			t.Errorf("a logged %+v, want %+v", got, want)
		}
		for _, in := range []instance{b, c} {
			want := []line{{leader: "a"}, {leader: nextID, previous: "a"}}
			if in.e == next.e {
				want[1].self, want[1].fence = true, fenceNext
			}
			if got := lines(in.logs); !slices.Equal(got, want) {
				t.Errorf("%s logged %+v, want %+v", in.e.Identity(), got, want)
			}
		}
	})
}

// announcingLock is a countingLock whose subscribers can be sent events
// the lock itself does not publish (EventExtended, as pglock's renewals
// announce).
type announcingLock struct {
	*countingLock
	mu  sync.Mutex
	fns []func(locking.Event)
}

func (a *announcingLock) Subscribe(key string, fn func(locking.Event)) (func(), error) {
	a.mu.Lock()
	a.fns = append(a.fns, fn)
	a.mu.Unlock()
	return a.countingLock.Subscribe(key, fn)
}

func (a *announcingLock) announce(ev locking.Event) {
	a.mu.Lock()
	fns := slices.Clone(a.fns)
	a.mu.Unlock()
	for _, fn := range fns {
		fn(ev)
	}
}

func TestElector_P3_P1_ExtendedLeaseKeepsTheCandidateAsleepButRegistered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := &announcingLock{countingLock: &countingLock{DistributedLock: memLock(t)}}
		o := leadership.DefaultOptions() // 15s lease, 5s renew, 2s retry
		a := mustElector(t, "r", lock, o, leadership.WithIdentity("a"))
		mustStart(t, a)
		synctest.Wait()
		b := mustElector(t, "r", lock, o, leadership.WithIdentity("b"))
		mustStart(t, b)
		defer mustStop(t, b)
		synctest.Wait()
		before := lock.attempts.Load()
		// a's renewals, announced every RenewInterval as pglock's are.
		for range 36 { // 3 minutes
			time.Sleep(o.RenewInterval)
			lock.announce(locking.Event{Kind: locking.EventExtended, Owner: "a", Remaining: o.Lease})
			synctest.Wait()
		}
		// Waking at each learned expiry would be one attempt per
		// 10-15s (12 or more); the announcements leave only the attempts
		// that keep b's registration (two leases) alive: one per 3/2 of
		// a Lease (22.5s), 8 in 3 minutes.
		if n := lock.attempts.Load() - before; n < 7 || n > 9 {
			t.Fatalf("candidate made %d attempts in 3 minutes of announced extensions, want 7 to 9", n)
		}
		ps, err := lock.Participants(bg, "leader:r")
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != 2 {
			t.Fatalf("participants = %v, want a and b (b's registration kept alive)", ps)
		}
		mustStop(t, a) // a release still wakes b at once
		synctest.Wait()
		if !b.IsLeader() {
			t.Fatal("the candidate did not take over on the release")
		}
	})
}

// outageLock is an announcingLock whose acquisition attempts by one owner
// fail while down is set, as that replica's attempts do while its
// connection to the server is lost.
type outageLock struct {
	*announcingLock
	owner string
	down  atomic.Bool
}

var errServerDown = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

func (o *outageLock) TryAcquirePriority(ctx context.Context, key string, d time.Duration, owner string, priority int, yield time.Duration) (locking.Lease, error) {
	if owner == o.owner && o.down.Load() {
		o.attempts.Add(1)
		return nil, errServerDown
	}
	return o.announcingLock.TryAcquirePriority(ctx, key, d, owner, priority, yield)
}

// TestElector_P1_P3_RegistrationRenewedAfterAnOutage: a sleeping
// candidate's registration is kept alive by an attempt every 3/2 of a
// Lease, counted from its last attempt the lock answered. When that attempt
// fell in an outage, the renewals announced once the server is back must
// not put it to sleep for another 3/2 of a Lease counted from the failed
// attempt: it registers again on its retry cadence, and stays listed.
func TestElector_P1_P3_RegistrationRenewedAfterAnOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := &outageLock{announcingLock: &announcingLock{countingLock: &countingLock{DistributedLock: memLock(t)}}, owner: "b"}
		o := leadership.DefaultOptions() // 15s lease, 5s renew, 2s retry
		a := mustElector(t, "r", lock, o, leadership.WithIdentity("a"))
		mustStart(t, a)
		defer mustStop(t, a)
		synctest.Wait()
		b := mustElector(t, "r", lock, o, leadership.WithIdentity("b"))
		mustStart(t, b)
		defer mustStop(t, b)
		synctest.Wait()
		announce := func() {
			time.Sleep(o.RenewInterval)
			lock.announce(locking.Event{Kind: locking.EventExtended, Owner: "a", Remaining: o.Lease})
			synctest.Wait()
		}
		listed := func() bool {
			ps, err := lock.Participants(bg, "leader:r")
			if err != nil {
				t.Fatal(err)
			}
			return slices.ContainsFunc(ps, func(p locking.Participant) bool { return p.Owner == "b" })
		}
		for range 4 {
			announce()
		}
		// 20s after b's first attempt, its connection is down for one
		// RenewInterval: its keep-alive attempt, due 3/2 of a Lease
		// (22.5s) after the first, fails, and so does its retry; a's
		// renewal is announced as the server comes back.
		lock.down.Store(true)
		failedBefore := lock.attempts.Load()
		time.Sleep(o.RenewInterval)
		synctest.Wait()
		lock.down.Store(false)
		lock.announce(locking.Event{Kind: locking.EventExtended, Owner: "a", Remaining: o.Lease})
		synctest.Wait()
		if lock.attempts.Load() == failedBefore {
			t.Fatal("b made no attempt during the outage: the test does not test anything")
		}
		// Back: b retries within a RetryInterval and registers again
		// before its registration of 0s (two leases) runs out at 30s; from
		// then on it stays listed, a's renewals announced all along.
		time.Sleep(o.RetryInterval + time.Second)
		synctest.Wait()
		for i := range 24 { // two minutes
			if !listed() {
				t.Fatalf("%v after the server came back, b is not a participant", o.RetryInterval+time.Second+time.Duration(i)*o.RenewInterval)
			}
			announce()
		}
	})
}
