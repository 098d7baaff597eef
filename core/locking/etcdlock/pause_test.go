package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
	"github.com/hostloom/hostloom/core/locking/etcdlock/etcdtest"
)

// knownDefectsEnv names the environment variable that runs the tests of
// defects of the etcd server itself, which the provider cannot close:
// they fail while the server has the defect, so CI leaves them out; run
// them to check an etcd release.
const knownDefectsEnv = "HOSTLOOM_ETCD_KNOWN_DEFECTS"

// TestServer_N4_PausedLeaderRevokesNoLiveLease: a lease kept alive through
// the healthy members while the raft leader is stopped (SIGSTOP) must
// outlive every acknowledged keep-alive by its TTL after the leader
// resumes (SIGCONT). etcd 3.6 and 3.7 break it: the resumed member's
// lessor still counts itself primary, finds every lease expired by its own
// clock (none was renewed on it during the stop), and its check that it
// still leads before revoking is skipped because its raft clock ticked
// just now (the tick that was due during the stop runs at once on
// resume). The revocations it proposes once it has stepped down reach the
// new leader and are applied: each lease ends up to a TTL earlier than its
// holder was told, and a successor takes the key while the holder still
// believes it holds it. Sent as the stale leader instead, they time out
// (the request timeout, 5 s plus two election timeouts) and the rest of
// the batch goes out then. The provider cannot tell such a revocation from
// a release; see the package README.
func TestServer_N4_PausedLeaderRevokesNoLiveLease(t *testing.T) {
	if os.Getenv(knownDefectsEnv) != "1" {
		t.Skipf("a defect of the etcd server (revocations by a resumed ex-leader): set %s=1 to run it", knownDefectsEnv)
	}
	c := etcdtest.Start(t, etcdtest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const (
		rounds = 3
		leases = 100
		every  = 200 * time.Millisecond // keep-alive cadence, a fifth of the TTL
		paused = 1800 * time.Millisecond
		after  = 8 * time.Second // beyond the request timeout, for the late batch
	)
	var early []string
	for round := range rounds {
		pausedLeaderRound(t, ctx, c, 3*every, paused, after, func(cl *clientv3.Client, stop <-chan struct{}, wg *sync.WaitGroup) func() {
			keepLeasesAlive(t, ctx, cl, round, leases, every, stop, wg, &early)
			return nil
		})
	}
	if len(early) > 0 {
		n := min(len(early), 5)
		t.Fatalf("%d of %d leases kept alive through the healthy members were revoked early after the leader resumed; first %d:\n%s", len(early), rounds*leases, n, strings.Join(early[:n], "\n"))
	}
}

// pausedLeaderRound runs one round of the defect: a client of the members
// that are not the raft leader is given to start, which begins the
// traffic the round watches (its goroutines in wg, ending when stop
// closes); after warm the leader is stopped (SIGSTOP) for paused, then
// resumed, and after after the traffic ends, the function start returned
// (if any) runs, and the client closes.
func pausedLeaderRound(t *testing.T, ctx context.Context, c *etcdtest.Cluster, warm, paused, after time.Duration, start func(cl *clientv3.Client, stop <-chan struct{}, wg *sync.WaitGroup) (end func())) {
	t.Helper()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := c.ClientBut(leader)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cl.Close() }()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	end := start(cl, stop, &wg)
	time.Sleep(warm)
	if err := leader.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(paused)
	if err := leader.Resume(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(after)
	close(stop)
	wg.Wait()
	if end != nil {
		end()
	}
}

// keepLeasesAlive grants leases one-second leases over cl and keeps each
// alive every every until stop closes, appending to *early each lease
// found gone before its last acknowledged keep-alive ran out.
func keepLeasesAlive(t *testing.T, ctx context.Context, cl *clientv3.Client, round, leases int, every time.Duration, stop <-chan struct{}, wg *sync.WaitGroup, early *[]string) {
	t.Helper()
	ids := make([]clientv3.LeaseID, leases)
	for i := range ids {
		g, err := cl.Grant(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = g.ID
	}
	var mu sync.Mutex
	for _, id := range ids {
		wg.Go(func() {
			acked := time.Now() // the grant's send time bounds it from below
			for {
				select {
				case <-stop:
					return
				case <-time.After(every):
				}
				kctx, kcancel := context.WithTimeout(ctx, 2*every)
				sent := time.Now()
				r, err := cl.KeepAliveOnce(kctx, id)
				kcancel()
				switch {
				case err == nil:
					acked = sent.Add(time.Duration(r.TTL) * time.Second)
				case errors.Is(err, rpctypes.ErrLeaseNotFound):
					if gone := time.Now(); gone.Before(acked) {
						mu.Lock()
						*early = append(*early, fmt.Sprintf("round %d: lease %x gone %v before its last acknowledged keep-alive ran out", round, id, acked.Sub(gone)))
						mu.Unlock()
					}
					return
				}
			}
		})
	}
}

// pausedLeaderRun is what pausedLeaderOverlaps saw.
type pausedLeaderRun struct {
	early    int      // holders that found their lease gone before their last extension ran out
	overlaps []string // candidates that took a key before its holder's last extension ran out
}

// pausedLeaderOverlaps holds keys through one provider extending them
// every 200 ms (a tenth of their 2 s lease, which outlasts the healthy
// members' election of a new raft leader, so the holders keep their keys
// through it) while a second provider tries to take each every 50 ms,
// both over clients of the healthy members, and stops the raft leader
// for 2.5 s (longer than the lease, as the defect needs), as
// TestServer_N4_PausedLeaderRevokesNoLiveLease does, for up to rounds
// rounds until a holder saw its lease end early. Both providers run with
// quarantine as ExpiryQuarantine.
func pausedLeaderOverlaps(t *testing.T, quarantine bool, rounds int) pausedLeaderRun {
	t.Helper()
	c := etcdtest.Start(t, etcdtest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const (
		keys   = 60
		ttl    = 2 * time.Second
		every  = 200 * time.Millisecond
		try    = 50 * time.Millisecond
		paused = 2500 * time.Millisecond
		after  = 8 * time.Second
	)
	var run pausedLeaderRun
	var mu sync.Mutex
	for round := range rounds {
		early := 0
		pausedLeaderRound(t, ctx, c, 3*every, paused, after, func(cl *clientv3.Client, stop <-chan struct{}, wg *sync.WaitGroup) func() {
			o := etcdlock.Options{Prefix: fmt.Sprintf("paused%d/", round), ExpiryQuarantine: quarantine}
			holder, err := etcdlock.New(cl, o)
			if err != nil {
				t.Fatal(err)
			}
			taker, err := etcdlock.New(cl, o)
			if err != nil {
				t.Fatal(err)
			}
			for i := range keys {
				key := fmt.Sprintf("k%d", i)
				value := fmt.Sprintf("%04d:holder", i)
				sent := time.Now()
				r, err := holder.Acquire(ctx, locking.AcquireRequest{Key: key, Value: value, TTL: ttl, Owner: "holder"})
				if err != nil || !r.Acquired {
					t.Fatalf("the holder's Acquire of %s = %+v, %v", key, r, err)
				}
				var believed atomic.Int64 // the holder's deadline, UnixNano
				believed.Store(sent.Add(ttl).UnixNano())
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						case <-time.After(every):
						}
						if time.Now().UnixNano() >= believed.Load() {
							return // ran out: the holder believes nothing any more
						}
						sent := time.Now()
						ectx, ecancel := context.WithTimeout(ctx, 2*every)
						res, err := holder.Extend(ectx, locking.ExtendRequest{Key: key, Value: value, TTL: ttl})
						ecancel()
						switch {
						case err == nil && res.Extended:
							believed.Store(sent.Add(ttl).UnixNano())
						case err == nil:
							if time.Now().UnixNano() < believed.Load() {
								mu.Lock()
								early++
								mu.Unlock()
							}
							believed.Store(0)
							return
						}
					}
				})
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						case <-time.After(try):
						}
						actx, acancel := context.WithTimeout(ctx, 2*every)
						r, err := taker.Acquire(actx, locking.AcquireRequest{Key: key, Value: fmt.Sprintf("%04d:taker", i), TTL: ttl, Owner: "taker"})
						acancel()
						if err == nil && r.Acquired {
							if at, b := time.Now(), believed.Load(); at.UnixNano() < b {
								mu.Lock()
								run.overlaps = append(run.overlaps, fmt.Sprintf("round %d: %s taken %v before its holder's extension ran out", round, key, time.Unix(0, b).Sub(at)))
								mu.Unlock()
							}
							return
						}
					}
				})
			}
			return func() {
				_ = taker.Close()
				_ = holder.Close()
			}
		})
		run.early += early
		t.Logf("round %d: %d holders found their lease gone early, %d overlaps so far", round, early, len(run.overlaps))
		if run.early > 0 {
			break
		}
	}
	return run
}

// TestQuarantine_N5_PausedLeaderRevocationsOverlapNobody: with
// ExpiryQuarantine, the live leases a resumed ex-leader revokes (the
// server defect above) give no candidate the key while its holder still
// believes it holds it: a key freed by a lease's end waits a lease. The
// test stops the raft leader until holders see their leases end early
// (up to ten rounds of about 14 s; the defect showed in the first and in
// the fourth round of two runs), and skips when it did not show.
func TestQuarantine_N5_PausedLeaderRevocationsOverlapNobody(t *testing.T) {
	run := pausedLeaderOverlaps(t, true, 10)
	if len(run.overlaps) > 0 {
		n := min(len(run.overlaps), 5)
		t.Fatalf("%d overlaps with ExpiryQuarantine (holders that found their lease gone early: %d); first %d:\n%s", len(run.overlaps), run.early, n, strings.Join(run.overlaps[:n], "\n"))
	}
	if run.early == 0 {
		t.Skip("no lease was revoked early in ten pauses of the raft leader: nothing was checked")
	}
	t.Logf("%d holders found their lease gone early; no candidate took a key before its holder's extension ran out", run.early)
}

// TestServer_N4_PausedLeaderRevocationsOverlapWithoutQuarantine: without
// ExpiryQuarantine, the same revocations let candidates take keys their
// holders still believe they hold (a known defect of the server: run with
// HOSTLOOM_ETCD_KNOWN_DEFECTS=1).
func TestServer_N4_PausedLeaderRevocationsOverlapWithoutQuarantine(t *testing.T) {
	if os.Getenv(knownDefectsEnv) != "1" {
		t.Skipf("a defect of the etcd server (revocations by a resumed ex-leader): set %s=1 to run it", knownDefectsEnv)
	}
	run := pausedLeaderOverlaps(t, false, 10)
	if len(run.overlaps) > 0 {
		n := min(len(run.overlaps), 5)
		t.Fatalf("%d overlaps without ExpiryQuarantine (holders that found their lease gone early: %d); first %d:\n%s", len(run.overlaps), run.early, n, strings.Join(run.overlaps[:n], "\n"))
	}
}
