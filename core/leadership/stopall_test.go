package leadership_test

import (
	"context"
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
}

func (p *orderProvider) record(op, key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, op+" "+key[strings.LastIndex(key, ":")+1:])
}

func (p *orderProvider) Release(ctx context.Context, r locking.ReleaseRequest) (bool, error) {
	p.record("release", r.Key)
	return p.Provider.Release(ctx, r)
}

func (p *orderProvider) Deregister(ctx context.Context, key, owner string) error {
	if owner == "a" {
		p.record("deregister", key)
	}
	return p.Provider.Deregister(ctx, key, owner)
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
		p := &orderProvider{Provider: memlock.New()}
		lock, err := locking.New(p, locking.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
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
		// The candidates withdraw before the first release, and stop
		// (deregistering again) after the last.
		calls := p.log()
		rel1, rel2 := slices.Index(calls, "release r1"), slices.Index(calls, "release r2")
		if rel1 < 0 || rel2 < 0 {
			t.Fatalf("calls %v: want both leases released", calls)
		}
		firstRelease, lastRelease := min(rel1, rel2), max(rel1, rel2)
		for _, r := range []string{"r3", "r4"} {
			first := slices.Index(calls, "deregister "+r)
			last := -1
			for i, c := range calls {
				if c == "deregister "+r {
					last = i
				}
			}
			if first < 0 || first > firstRelease || last < lastRelease {
				t.Fatalf("calls %v: want the candidate of %s to withdraw before the releases and stop after them", calls, r)
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
