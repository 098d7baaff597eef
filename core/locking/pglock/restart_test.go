package pglock_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
	"github.com/hostloom/hostloom/core/testing/pgtest"
)

// attemptLog is a lock that records when each acquisition attempt was
// made, so a test can time an outage to fall on one.
type attemptLog struct {
	*locking.DistributedLock
	mu    sync.Mutex
	times []time.Time
}

func (a *attemptLog) TryAcquirePriority(ctx context.Context, key string, d time.Duration, owner string, priority int, yield time.Duration) (locking.Lease, error) {
	a.mu.Lock()
	a.times = append(a.times, time.Now())
	a.mu.Unlock()
	return a.DistributedLock.TryAcquirePriority(ctx, key, d, owner, priority, yield)
}

func (a *attemptLog) last() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.times[len(a.times)-1]
}

// TestElector_P1_CandidateStaysListedAcrossARestart: PostgreSQL restarts
// (fast shutdown) just as the candidate makes the attempt that keeps its
// participant registration alive, while the leader's lease outlives the
// outage. Once the server is back the leader's renewals are announced
// again; the candidate must register again before its registration runs
// out, not sleep on for 3/2 of a lease counted from the failed attempt:
// it stays in the role's participants (what hostloom status shows).
func TestElector_P1_CandidateStaysListedAcrossARestart(t *testing.T) {
	srv, err := pgtest.Start()
	if err != nil {
		if pgtest.Required() {
			t.Fatalf("PostgreSQL is required here but did not start: %v", err)
		}
		t.Skipf("PostgreSQL did not start, skipping: %v", err)
	}
	t.Cleanup(srv.Stop)
	o := leadership.DefaultOptions()
	// Renewals (announced) come more often than the candidate's retries,
	// so one is announced before the candidate retries after the outage,
	// as with the defaults (5s renewals, 2s retries) on a busy server.
	o.Lease, o.RenewInterval, o.RetryInterval = 4*time.Second, 250*time.Millisecond, time.Second
	po := pglock.Options{ReconnectMax: 50 * time.Millisecond}
	start := func(id string) (*leadership.Elector, *attemptLog) {
		pool, err := pgxpool.New(context.Background(), srv.ConnString("postgres")+" connect_timeout=2")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		l, _ := newLock(t, pool, po, "restart")
		log := &attemptLog{DistributedLock: l}
		e, err := leadership.NewElector("billing", log, o, leadership.WithIdentity(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Stop(context.Background()) })
		return e, log
	}
	a, _ := start("a")
	if err := a.WaitForLeadership(t.Context()); err != nil {
		t.Fatal(err)
	}
	b, bLog := start("b")
	listed := func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ps, err := a.Participants(ctx)
		return slices.ContainsFunc(ps, func(p leadership.Participant) bool { return p.Identity == "b" }), err
	}
	for ok, _ := listed(); !ok; ok, _ = listed() {
		time.Sleep(10 * time.Millisecond) // b's first attempt registers it
	}
	// b now sleeps under a's announced renewals until its keep-alive
	// attempt, 3/2 of a Lease after its last one. Stop the server just
	// before that attempt and bring it back after it.
	keepAlive := bLog.last().Add(o.Lease * 3 / 2)
	time.Sleep(time.Until(keepAlive.Add(-o.Lease / 8))) // the outage's start, not a wait for an event
	if err := srv.Shutdown(pgtest.ShutdownFast); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(keepAlive.Add(o.Lease / 8)))
	if err := srv.Restart(); err != nil {
		t.Fatalf("restart: %v\n%s", err, srv.Log())
	}
	if bLog.last().Before(keepAlive.Add(-o.Lease / 8)) {
		t.Skip("b made no attempt during the outage (a slow machine moved it): nothing to test")
	}
	// b's registration from before the outage runs out two leases after
	// it was made; a restart that took long may pass that, and b then
	// registers again on its retry cadence. From one retry interval
	// after the server is back, for two leases, b is listed in every read
	// that succeeds (without the fix it slept on, unlisted, for most of a
	// lease).
	back := time.Now()
	from, end := back.Add(o.RetryInterval), back.Add(o.RetryInterval+2*o.Lease)
	reads := 0
	for now := time.Now(); now.Before(end); now = time.Now() {
		ok, err := listed()
		if err == nil && now.After(from) {
			reads++
			if !ok {
				t.Fatalf("b is not a participant %v after the server came back (a leads: %v, b leads: %v)", time.Since(back), a.IsLeader(), b.IsLeader())
			}
		}
		time.Sleep(50 * time.Millisecond) // the cadence of the reads
	}
	if reads == 0 {
		t.Fatal("no participants read succeeded after the restart")
	}
}
