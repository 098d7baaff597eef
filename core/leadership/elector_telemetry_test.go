package leadership_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hostloom/hostloom/core/internal/oteltest"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
)

const electorScope = "github.com/hostloom/hostloom/core/leadership"

// electorMetrics collects the elector's metrics by name.
func electorMetrics(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != electorScope {
			continue
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// sumBy returns a counter's value per value of attribute key.
func sumBy(t *testing.T, a metricdata.Aggregation, key string) map[string]int64 {
	t.Helper()
	s, ok := a.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("not an int64 sum: %T", a)
	}
	out := map[string]int64{}
	for _, dp := range s.DataPoints {
		if role, _ := dp.Attributes.Value("hostloom.role"); role.AsString() != "billing" {
			t.Fatalf("data point without role billing: %v", dp.Attributes)
		}
		v, _ := dp.Attributes.Value(attribute.Key(key))
		out[v.AsString()] += dp.Value
	}
	return out
}

func gaugeValue(t *testing.T, a metricdata.Aggregation) int64 {
	t.Helper()
	g, ok := a.(metricdata.Gauge[int64])
	if !ok || len(g.DataPoints) != 1 {
		t.Fatalf("is_leader: %#v", a)
	}
	return g.DataPoints[0].Value
}

func TestElector_O6_Telemetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		fl := leadershiptest.NewFaultLock(memLock(t))
		e := mustElector(t, "billing", fl, fastOpts(), leadership.WithMeterProvider(mp), leadership.WithTracerProvider(tp))
		if got := gaugeValue(t, electorMetrics(t, reader)[leadership.MetricIsLeader]); got != 0 {
			t.Fatalf("is_leader before start = %d", got)
		}
		mustStart(t, e)
		defer mustStop(t, e)
		time.Sleep(2500 * time.Millisecond) // renewals at 1s and 2s succeed
		synctest.Wait()
		m := electorMetrics(t, reader)
		if got := gaugeValue(t, m[leadership.MetricIsLeader]); got != 1 {
			t.Fatalf("is_leader = %d, want 1", got)
		}
		// O6: the gauge names the identity; the fence gauge shows the term's fence.
		g := m[leadership.MetricIsLeader].(metricdata.Gauge[int64])
		if id, ok := g.DataPoints[0].Attributes.Value("hostloom.identity"); !ok || id.AsString() != e.Identity() {
			t.Fatalf("is_leader identity attribute = %v, %v; want %q", id, ok, e.Identity())
		}
		if got := gaugeValue(t, m[leadership.MetricFence]); got != int64(e.Fence()) || got == 0 {
			t.Fatalf("fence gauge = %d, want the term's fence %d", got, e.Fence())
		}
		// O6: the participants gauge comes from the renewals themselves.
		if got := gaugeValue(t, m[leadership.MetricParticipants]); got != 1 {
			t.Fatalf("participants gauge = %d, want 1", got)
		}
		fl.Set(leadershiptest.OpExtend, leadershiptest.FaultError)
		time.Sleep(time.Second) // 3s: error, keeps leadership
		fl.Set(leadershiptest.OpExtend, leadershiptest.FaultRefuse)
		time.Sleep(time.Second) // 4s: refused, loses
		synctest.Wait()
		fl.Clear()
		if err := e.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		m = electorMetrics(t, reader)
		if got := gaugeValue(t, m[leadership.MetricIsLeader]); got != 0 {
			t.Fatalf("is_leader after loss = %d, want 0", got)
		}
		if got := sumBy(t, m[leadership.MetricTransitions], "hostloom.reason"); got["acquired"] != 1 || got["refused"] != 1 {
			t.Fatalf("transitions = %v", got)
		}
		if got := sumBy(t, m[leadership.MetricRenewals], "hostloom.outcome"); got["ok"] != 2 || got["error"] != 1 || got["refused"] != 1 {
			t.Fatalf("renewals = %v", got)
		}
		if got := sumBy(t, m[leadership.MetricAcquireAttempts], "hostloom.outcome"); got["acquired"] != 1 || got["held"] < 1 {
			t.Fatalf("acquire attempts = %v", got)
		}
		h, ok := m[leadership.MetricRenewalDuration].(metricdata.Histogram[float64])
		if !ok {
			t.Fatalf("renewal duration: %T", m[leadership.MetricRenewalDuration])
		}
		var n uint64
		for _, dp := range h.DataPoints {
			n += dp.Count
		}
		if n != 4 {
			t.Fatalf("renewal latency observations = %d, want 4", n)
		}
		names := map[string]int{}
		for _, s := range spans.Ended() {
			if s.InstrumentationScope().Name != electorScope {
				t.Fatalf("span scope %q", s.InstrumentationScope().Name)
			}
			names[s.Name()]++
		}
		if names[leadership.SpanAcquire] < 2 || names[leadership.SpanRenew] != 4 {
			t.Fatalf("spans = %v", names)
		}
	})
}

func TestElector_Telemetry_ReleaseSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		e := mustElector(t, "billing", memLock(t), fastOpts(), leadership.WithTracerProvider(tp))
		mustStart(t, e)
		synctest.Wait()
		mustStop(t, e)
		n := 0
		for _, s := range spans.Ended() {
			if s.Name() == leadership.SpanRelease {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("release spans = %d, want 1", n)
		}
	})
}

// TestElector_O6_HandoverAndParticipants: the leader's renewals report
// both participants; after a graceful handover the new leader records
// one handover observation and, at its first renewal, one participant.
func TestElector_O6_HandoverAndParticipants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		readerA, readerB := sdkmetric.NewManualReader(), sdkmetric.NewManualReader()
		a := mustElector(t, "billing", lock, fastOpts(), leadership.WithIdentity("a"),
			leadership.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(readerA))))
		b := mustElector(t, "billing", lock, fastOpts(), leadership.WithIdentity("b"),
			leadership.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(readerB))))
		mustStart(t, a)
		synctest.Wait()
		mustStart(t, b)
		defer mustStop(t, b)
		time.Sleep(1500 * time.Millisecond) // a renews at 1s with b registered
		synctest.Wait()
		if got := gaugeValue(t, electorMetrics(t, readerA)[leadership.MetricParticipants]); got != 2 {
			t.Fatalf("a's participants gauge = %d, want 2", got)
		}
		mustStop(t, a) // hands over to b at once
		synctest.Wait()
		if !b.IsLeader() {
			t.Fatal("b did not take over")
		}
		h, ok := electorMetrics(t, readerB)[leadership.MetricHandoverDuration].(metricdata.Histogram[float64])
		if !ok || len(h.DataPoints) != 1 || h.DataPoints[0].Count != 1 {
			t.Fatalf("b's handover histogram = %#v, want one observation", h)
		}
		if kind, _ := h.DataPoints[0].Attributes.Value("hostloom.kind"); kind.AsString() != "handover" {
			t.Fatalf("handover kind = %q, want handover", kind.AsString())
		}
		time.Sleep(1500 * time.Millisecond) // b's first renewal
		synctest.Wait()
		if got := gaugeValue(t, electorMetrics(t, readerB)[leadership.MetricParticipants]); got != 1 {
			t.Fatalf("b's participants gauge = %d, want 1 (a deregistered at Stop)", got)
		}
	})
}

// TestElector_O6_TelemetryConventions: every instrument of the elector and
// the leader channel has a unit, and every metric attribute, span name and
// span attribute carries the hostloom. prefix.
func TestElector_O6_TelemetryConventions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		e := mustElector(t, "billing", memLock(t), fastOpts(), leadership.WithMeterProvider(mp), leadership.WithTracerProvider(tp))
		c, err := leadership.NewChannel[int]("orders", e, leadership.ChannelOptions{Capacity: 1, FullMode: leadership.DropWrite}, leadership.WithMeterProvider(mp))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.TryWrite(1) // a follower's write is dropped and counted
		mustStart(t, e)
		time.Sleep(1500 * time.Millisecond) // one renewal
		synctest.Wait()
		mustStop(t, e)

		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		seen := oteltest.CheckMetrics(t, rm)
		for _, name := range []string{leadership.MetricIsLeader, leadership.MetricFence, leadership.MetricTransitions,
			leadership.MetricRenewals, leadership.MetricRenewalDuration, leadership.MetricAcquireAttempts,
			leadership.MetricParticipants, leadership.MetricChannelDropped} {
			if !seen[name] {
				t.Errorf("metric %s not recorded", name)
			}
		}
		names := map[string]bool{}
		for _, s := range spans.Ended() {
			names[s.Name()] = true
			if !strings.HasPrefix(s.Name(), "hostloom.") {
				t.Errorf("span %q lacks the hostloom. prefix", s.Name())
			}
			for _, kv := range s.Attributes() {
				if !strings.HasPrefix(string(kv.Key), "hostloom.") {
					t.Errorf("span %s: attribute %q lacks the hostloom. prefix", s.Name(), kv.Key)
				}
			}
		}
		if !names[leadership.SpanAcquire] || !names[leadership.SpanRenew] || !names[leadership.SpanRelease] {
			t.Errorf("spans = %v, want acquire, renew and release", names)
		}
	})
}

// refusingMeter is a meter whose gauges cannot be created.
type refusingMeter struct{ noop.Meter }

func (refusingMeter) Int64Gauge(name string, _ ...metric.Int64GaugeOption) (metric.Int64Gauge, error) {
	return noop.Int64Gauge{}, fmt.Errorf("gauge %s refused", name)
}

type refusingMeters struct{ noop.MeterProvider }

func (refusingMeters) Meter(string, ...metric.MeterOption) metric.Meter { return refusingMeter{} }

// TestElector_O6_InstrumentErrorFailsNewElector: an instrument the meter
// refuses fails NewElector naming it, instead of a metric silently absent.
func TestElector_O6_InstrumentErrorFailsNewElector(t *testing.T) {
	_, err := leadership.NewElector("billing", memLock(t), fastOpts(), leadership.WithMeterProvider(refusingMeters{}))
	if err == nil || !strings.Contains(err.Error(), leadership.MetricIsLeader) || !strings.Contains(err.Error(), `role "billing"`) {
		t.Fatalf("NewElector with a refusing meter: %v", err)
	}
	_, err = leadership.NewChannel[int]("orders", leadershiptest.NewFake("billing"), leadership.ChannelOptions{Capacity: 1, FullMode: leadership.DropWrite},
		leadership.WithMeterProvider(refusingCounters{}))
	if err == nil || !strings.Contains(err.Error(), "drop counter") {
		t.Fatalf("NewChannel with a refusing meter: %v", err)
	}
}

// refusingCounterMeter is a meter whose counters cannot be created.
type refusingCounterMeter struct{ noop.Meter }

func (refusingCounterMeter) Int64Counter(name string, _ ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return noop.Int64Counter{}, fmt.Errorf("counter %s refused", name)
}

type refusingCounters struct{ noop.MeterProvider }

func (refusingCounters) Meter(string, ...metric.MeterOption) metric.Meter {
	return refusingCounterMeter{}
}
