package leadership_test

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// BenchmarkRedis_MemoryCallsInFlight is BenchmarkElector_MemoryCallsInFlight
// over a real redis-server: 10,000 electors start while the server is
// frozen (SIGSTOP), so each one's first lock calls are in flight (one
// round trip on the wire, the rest queued behind it), then the server
// resumes and every elector leads and idles, then they stop together
// (StopAll) while the server is frozen again, their releases in flight.
// It reports heap and stack bytes and goroutines per elector at the three
// instants; it asserts nothing (a figure, not a rule). The cadence is
// long enough that no call's bound ends while the server is frozen. Run
// it alone:
//
//	go test ./leadership/ -run '^$' -bench Redis_MemoryCallsInFlight -benchtime 1x
func BenchmarkRedis_MemoryCallsInFlight(b *testing.B) {
	const n = 10_000
	srv := redistest.Start(b)
	node := newRedisNode(b, srv)
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval = 60*time.Second, 20*time.Second, 20*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i := 0; b.Loop(); i++ {
		g0, m0, s0 := memNow()
		freeze(b, srv)
		es := make([]*leadership.Elector, n)
		for j := range es {
			e, err := leadership.NewElector(fmt.Sprintf("mem-%d-%d", i, j), node.lock, o)
			if err != nil {
				b.Fatal(err)
			}
			if err := e.Start(ctx); err != nil {
				b.Fatal(err)
			}
			es[j] = e
		}
		waitGoroutines(b, g0+n) // each elector's first call holds a goroutine
		g1, m1, s1 := memNow()
		thaw(b, srv)
		for _, e := range es {
			if err := e.WaitForLeadership(ctx); err != nil {
				b.Fatal(err)
			}
		}
		for runtime.NumGoroutine() > g0+64 {
			time.Sleep(time.Millisecond) // a measurement: the calls' goroutines end after their outcome
		}
		g2, m2, s2 := memNow()
		freeze(b, srv)
		stopped := make(chan error, 1)
		go func() { stopped <- leadership.StopAll(ctx, es...) }()
		waitGoroutines(b, g2+n) // each leader's release holds a goroutine
		g3, m3, s3 := memNow()
		thaw(b, srv)
		if err := <-stopped; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(m1-m0)/n, "B/elector-in-flight")
		b.ReportMetric(float64(s1-s0)/n, "stack-B/elector-in-flight")
		b.ReportMetric(float64(g1-g0)/n, "goroutines/elector-in-flight")
		b.ReportMetric(float64(m2-m0)/n, "B/elector-at-rest")
		b.ReportMetric(float64(s2-s0)/n, "stack-B/elector-at-rest")
		b.ReportMetric(float64(g2-g0)/n, "goroutines/elector-at-rest")
		b.ReportMetric(float64(m3-m0)/n, "B/elector-leaving")
		b.ReportMetric(float64(s3-s0)/n, "stack-B/elector-leaving")
		b.ReportMetric(float64(g3-g0)/n, "goroutines/elector-leaving")
	}
}

// freeze stops srv's process (SIGSTOP): calls sent stay on the wire.
func freeze(b *testing.B, srv *redistest.Server) {
	b.Helper()
	if err := srv.Signal(syscall.SIGSTOP); err != nil {
		b.Fatal(err)
	}
}

// thaw resumes srv's process (SIGCONT).
func thaw(b *testing.B, srv *redistest.Server) {
	b.Helper()
	if err := srv.Signal(syscall.SIGCONT); err != nil {
		b.Fatal(err)
	}
}

// waitGoroutines waits until at least want goroutines run.
func waitGoroutines(b *testing.B, want int) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for runtime.NumGoroutine() < want {
		if time.Now().After(deadline) {
			b.Fatalf("%d goroutines after a minute, want %d", runtime.NumGoroutine(), want)
		}
		time.Sleep(time.Millisecond) // a measurement: no event tells when all n calls are in
	}
}
