package leadership_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
)

// BenchmarkElector_MemoryCallsInFlight measures what an elector costs
// while its lock call is under way, against what it costs at rest: 10,000
// electors over memlock, each with its first acquisition held in the lock
// (leadershiptest.FaultStall), then released so that every one leads and
// idles, then stopped together (StopAll) with their releases held in the
// lock. It reports heap and stack bytes and goroutines per elector at the
// three instants; it asserts nothing (a figure, not a rule). Run it alone:
//
//	go test ./leadership/ -run '^$' -bench MemoryCallsInFlight -benchtime 1x
func BenchmarkElector_MemoryCallsInFlight(b *testing.B) {
	const n = 10_000
	for b.Loop() {
		fl := leadershiptest.NewFaultLock(memLock(b))
		fl.Set(leadershiptest.OpAcquire, leadershiptest.FaultStall)
		g0, m0, s0 := memNow()
		es := make([]*leadership.Elector, n)
		for i := range es {
			e, err := leadership.NewElector(fmt.Sprintf("role-%d", i), fl, leadership.DefaultOptions())
			if err != nil {
				b.Fatal(err)
			}
			if err := e.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			es[i] = e
		}
		for fl.Calls(leadershiptest.OpAcquire) < n {
			time.Sleep(time.Millisecond) // a measurement: no event tells when all n calls are in
		}
		g1, m1, s1 := memNow()
		fl.Set(leadershiptest.OpAcquire, leadershiptest.FaultNone)
		fl.Unstall()
		for _, e := range es {
			if err := e.WaitForLeadership(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		for runtime.NumGoroutine() > g0+16 {
			time.Sleep(time.Millisecond) // the calls' goroutines end after their outcome
		}
		g2, m2, s2 := memNow()
		b.ReportMetric(float64(m1-m0)/n, "B/elector-in-flight")
		b.ReportMetric(float64(s1-s0)/n, "stack-B/elector-in-flight")
		b.ReportMetric(float64(s2-s0)/n, "stack-B/elector-at-rest")
		b.ReportMetric(float64(g1-g0)/n, "goroutines/elector-in-flight")
		b.ReportMetric(float64(m2-m0)/n, "B/elector-at-rest")
		b.ReportMetric(float64(g2-g0)/n, "goroutines/elector-at-rest")
		// The leave: every elector leads, so StopAll's first wave stops
		// them all; their releases are held in the lock.
		fl.Set(leadershiptest.OpRelease, leadershiptest.FaultStall)
		stopped := make(chan error, 1)
		go func() { stopped <- leadership.StopAll(context.Background(), es...) }()
		for fl.Calls(leadershiptest.OpRelease) < n {
			time.Sleep(time.Millisecond) // a measurement: no event tells when all n releases are in
		}
		g3, m3, s3 := memNow()
		b.ReportMetric(float64(m3-m0)/n, "B/elector-leaving")
		b.ReportMetric(float64(s3-s0)/n, "stack-B/elector-leaving")
		b.ReportMetric(float64(g3-g0)/n, "goroutines/elector-leaving")
		fl.Set(leadershiptest.OpRelease, leadershiptest.FaultNone)
		fl.Unstall()
		if err := <-stopped; err != nil {
			b.Fatal(err)
		}
	}
}

// memNow returns the goroutines, the heap and stack bytes in use and
// the stack bytes alone, after a collection.
func memNow() (goroutines int, bytes, stack int64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), int64(ms.HeapInuse + ms.StackInuse), int64(ms.StackInuse)
}
