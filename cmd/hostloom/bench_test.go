package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/testing/redistest"
)

// BenchmarkCLI_O1_Resign measures a cooperative handover through
// "hostloom resign" between two electors over a real redis-server: from
// the resign request being published to the next leader's acquisition, as
// the CLI observes it (the acquisition's notification). Reported as
// p50-ms, p99-ms and max-ms; ns/op includes loading the config and
// connecting, which the latency does not.
//
//	go test -run '^$' -bench CLI_O1_Resign -benchtime 50x ./cmd/hostloom
func BenchmarkCLI_O1_Resign(b *testing.B) {
	srv := redistest.Start(b)
	cfg := writeConfig(b, srv.Addr(), "bench")
	a := startReplica(b, srv, "bench", "billing", "replica-a")
	c := startReplica(b, srv, "bench", "billing", "replica-b")
	retry := testOptions().RetryInterval
	var lat []float64
	b.ResetTimer()
	for range b.N {
		// The replica that resigned last sits out one retry interval;
		// wait so both contend and the next leader is the other one.
		b.StopTimer()
		time.Sleep(retry + 50*time.Millisecond)
		for !a.elector.IsLeader() && !c.elector.IsLeader() {
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"resign", "billing", "--config", cfg, "--json"}, stdio{in: strings.NewReader(""), out: &out, err: &errOut})
		if code != exitOK {
			b.Fatalf("resign: exit %d: %s", code, errOut.String())
		}
		var h handoverJSON
		if err := json.Unmarshal(out.Bytes(), &h); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, h.LatencyMillis)
	}
	b.StopTimer()
	slices.Sort(lat)
	q := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(lat[len(lat)-1], "max-ms")
}
