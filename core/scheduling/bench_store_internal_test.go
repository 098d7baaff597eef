package scheduling

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/scheduling/slotstore"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// roundTrips counts the commands and pipelines a client sends: one round
// trip each.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

var _ redis.Hook = (*roundTrips)(nil)

// stateOnly hides the job records of a store: the claim-only path (one
// Advance per run) the scheduler takes for a plain StateStore.
type stateOnly struct{ st slotstore.State }

func (s stateOnly) Advance(ctx context.Context, key string, value int64) (bool, int64, error) {
	return s.st.Advance(ctx, key, value)
}

func (s stateOnly) State(ctx context.Context, key string) (int64, bool, error) {
	return s.st.State(ctx, key)
}

// BenchmarkStoreRun measures the per-run overhead of the slot store: the
// claim-only run (Advance, the path for a plain StateStore) against the
// store-backed run (ClaimSlot before, CompleteSlot after), over memlock and
// over a real redis-server on loopback. round-trips/op counts the commands
// sent to Redis per run (the first claim of a term is excluded: the
// benchmark stays in one term after a warm-up run).
func BenchmarkStoreRun(b *testing.B) {
	stores := []struct {
		name string
		new  func(b *testing.B) (*locking.DistributedLock, *roundTrips)
	}{
		{"memlock", func(b *testing.B) (*locking.DistributedLock, *roundTrips) {
			l, err := memlock.NewLock(locking.DefaultOptions())
			if err != nil {
				b.Fatal(err)
			}
			return l, nil
		}},
		{"redis", func(b *testing.B) (*locking.DistributedLock, *roundTrips) {
			srv := redistest.Start(b)
			c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			rt := &roundTrips{}
			c.AddHook(rt)
			o := locking.DefaultOptions()
			o.Namespace = "bench"
			l, err := redislock.NewLock(c, o)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = l.Close(); _ = c.Close() })
			return l, rt
		}},
	}
	for _, st := range stores {
		for _, mode := range []string{"claim-only", "claim+completion"} {
			b.Run(st.name+"/"+mode, func(b *testing.B) {
				l, rt := st.new(b)
				var store slotstore.State = l
				if mode == "claim-only" {
					store = stateOnly{l}
				}
				s, _ := benchScheduler(b, true, WithSlotStore(store))
				if err := s.Add(Job{Name: "j", Schedule: sparse{}, Run: nop}); err != nil {
					b.Fatal(err)
				}
				if (s.js != nil) != (mode != "claim-only") {
					b.Fatalf("job store in use: %v, mode %s", s.js != nil, mode)
				}
				slot := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
				run := func() {
					slot = slot.Add(time.Millisecond)
					s.due(slot)
					s.tickNow()
					for s.busy() {
						runtime.Gosched()
					}
				}
				run() // the term's first claim
				var before int64
				if rt != nil {
					before = rt.n.Load()
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					run()
				}
				b.StopTimer()
				if rt != nil {
					b.ReportMetric(float64(rt.n.Load()-before)/float64(b.N), "round-trips/op")
				}
				if info := s.Jobs()[0]; info.LastOutcome != Success || !info.LastSlot.Equal(slot) {
					b.Fatalf("job = %+v, want the last slot %v run", info, slot)
				}
			})
		}
	}
}
