package leadership_test

import (
	"iter"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// TestElector_Q1_Redis_RestartWithoutPersistenceEndsTheTermAtOnce: three
// processes (each its own client and provider) at the default cadences
// (15s lease, 5s renew, 2s retry); redis-server is restarted empty a
// second after the leader renewed. The leader's subscription comes back
// within milliseconds and it verifies its lease at once, so its term ends
// (or it takes the role again with a new fence) long before its next
// renewal would have been refused, 4s later. The overlap with another
// process's term, measured from the terms' OnChange times, is logged.
func TestElector_Q1_Redis_RestartWithoutPersistenceEndsTheTermAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	o := leadership.DefaultOptions()
	var locks []*locking.DistributedLock
	for range 3 {
		locks = append(locks, newRedisNode(t, srv).lock)
	}
	electors, terms := startWatched(t, "q1", o, locks)
	leader := waitLeader(t, electors, nil)
	fence := leader.Fence()
	time.Sleep(time.Second)
	restarted := time.Now()
	srv.Restart(t)
	// Within 4s the old term must have ended: without the verification it
	// would last until the renewal due 4s from now.
	waitFor(t, func() bool { return leader.Fence() != fence })
	ended := time.Since(restarted)
	if ended >= 4*time.Second {
		t.Fatalf("the old term lasted %v after the restart", ended)
	}
	next := waitLeader(t, electors, nil)
	if next.Fence() <= fence {
		t.Fatalf("new fence %d after %d", next.Fence(), fence)
	}
	time.Sleep(100 * time.Millisecond)
	var overlap time.Duration
	for a, b := range terms.overlaps() {
		end := a.end
		if b.end.Before(end) {
			end = b.end
		}
		overlap = max(overlap, end.Sub(b.start))
	}
	t.Logf("old term ended %v after the restart began; longest overlap of two terms %v", ended.Round(time.Millisecond), overlap)
}

// TestElector_Q3_Redis_QuarantineLeavesNoOverlapAfterRestart: three
// processes over providers with quarantine (lease 1s, renew 250ms, retry
// 250ms). After a restart without persistence nobody leads for about a
// lease, and no two terms overlap: the old leader's term ended before the
// quarantine let anyone in. The leaderless time is logged.
func TestElector_Q3_Redis_QuarantineLeavesNoOverlapAfterRestart(t *testing.T) {
	srv := redistest.Start(t)
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval = time.Second, 250*time.Millisecond, 250*time.Millisecond
	var locks []*locking.DistributedLock
	for range 3 {
		p := mustProvider(t, srv.Client(t), redislock.Options{Quarantine: true})
		t.Cleanup(func() { _ = p.Close() })
		lock, err := locking.New(p, locking.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		locks = append(locks, lock)
	}
	electors, terms := startWatched(t, "q3", o, locks)
	leader := waitLeader(t, electors, nil)
	fence := leader.Fence()
	time.Sleep(2 * time.Second) // the server is no longer young
	restarted := time.Now()
	srv.Restart(t)
	var next *leadership.Elector
	waitFor(t, func() bool {
		for _, e := range electors {
			if f := e.Fence(); f != 0 && f != fence {
				next = e
				return true
			}
		}
		return false
	})
	leaderless := time.Since(restarted)
	time.Sleep(100 * time.Millisecond)
	for a, b := range terms.overlaps() {
		t.Errorf("terms of %d [%v, %v] and %d [%v, %v] overlap", a.who, a.start, a.end, b.who, b.start, b.end)
	}
	if leaderless < o.Lease {
		t.Errorf("a new term %v after the restart, within the quarantine of one lease (%v)", leaderless, o.Lease)
	}
	t.Logf("with quarantine the role was leaderless %v after the restart began (lease %v); new leader %s", leaderless.Round(time.Millisecond), o.Lease, next.Identity())
}

// mustProvider is redislock.NewWithOptions, failing t on an error.
func mustProvider(t *testing.T, c redis.UniversalClient, o redislock.Options) *redislock.Provider {
	t.Helper()
	p, err := redislock.NewWithOptions(c, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startWatched starts an elector for role over each lock (identities a,
// b, c, …), stopped when t ends, and records their terms.
func startWatched(t *testing.T, role string, o leadership.Options, locks []*locking.DistributedLock) ([]*leadership.Elector, *termLog) {
	t.Helper()
	terms := &termLog{}
	var electors []*leadership.Elector
	for i, l := range locks {
		e := mustElector(t, role, l, o, leadership.WithIdentity(string(rune('a'+i))))
		terms.watch(i, e)
		electors = append(electors, e)
	}
	for _, e := range electors {
		mustStart(t, e)
		t.Cleanup(func() { mustStop(t, e) })
	}
	return electors, terms
}

// term is one elector's term, from its OnChange times.
type term struct {
	who        int
	start, end time.Time
}

// termLog records the terms of electors from their OnChange times.
type termLog struct {
	mu    sync.Mutex
	ended []term
	open  map[int]time.Time // who: start of the running term
}

// watch records e's terms as who's.
func (l *termLog) watch(who int, e *leadership.Elector) {
	e.OnChange(func(c leadership.Change) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.open == nil {
			l.open = map[int]time.Time{}
		}
		if c.IsLeader {
			l.open[who] = c.At
			return
		}
		l.ended = append(l.ended, term{who, l.open[who], c.At})
		delete(l.open, who)
	})
}

// overlaps yields every pair of terms of two electors where b began
// within a; terms still running count as ending now.
func (l *termLog) overlaps() iter.Seq2[term, term] {
	l.mu.Lock()
	terms := slices.Clone(l.ended)
	now := time.Now()
	for who, at := range l.open {
		terms = append(terms, term{who, at, now})
	}
	l.mu.Unlock()
	return func(yield func(a, b term) bool) {
		for _, a := range terms {
			for _, b := range terms {
				if a.who != b.who && b.start.After(a.start) && b.start.Before(a.end) {
					if !yield(a, b) {
						return
					}
				}
			}
		}
	}
}
