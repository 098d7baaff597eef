package leadership_test

import (
	"sync"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/internal/redistest"
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
	type span struct {
		who        int
		start, end time.Time
	}
	var mu sync.Mutex
	var spans []span
	open := map[int]time.Time{}
	var electors []*leadership.Elector
	for i := range 3 {
		n := newRedisNode(t, srv)
		e := mustElector(t, "q1", n.lock, o, leadership.WithIdentity(string(rune('a'+i))))
		e.OnChange(func(c leadership.Change) {
			mu.Lock()
			defer mu.Unlock()
			if c.IsLeader {
				open[i] = c.At
				return
			}
			spans = append(spans, span{i, open[i], c.At})
			delete(open, i)
		})
		electors = append(electors, e)
	}
	for _, e := range electors {
		mustStart(t, e)
		defer mustStop(t, e)
	}
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
	mu.Lock()
	defer mu.Unlock()
	now := time.Now()
	for i, at := range open {
		spans = append(spans, span{i, at, now})
	}
	var overlap time.Duration
	for _, a := range spans {
		for _, b := range spans {
			if a.who != b.who && b.start.After(a.start) && b.start.Before(a.end) {
				end := a.end
				if b.end.Before(end) {
					end = b.end
				}
				overlap = max(overlap, end.Sub(b.start))
			}
		}
	}
	t.Logf("old term ended %v after the restart began; longest overlap of two terms %v", ended.Round(time.Millisecond), overlap)
}
