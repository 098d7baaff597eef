package leadership

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// recordAll makes every record an elector makes, once.
func recordAll(t *electorTelemetry) {
	t.leader(true, 7)
	t.leaderless("handover", time.Millisecond)
	t.participants(3)
	t.transition(Acquired)
	t.renewal(outcomeOK, time.Millisecond)
	t.acquire(outcomeHeld)
	t.unacknowledged("renew")
}

// O6 without a reader: a process that installs no metrics SDK pays
// nothing per renewal or attempt, and its electors hold no attribute sets.
func TestTelemetry_O6_NoReaderBuildsNoAttributes(t *testing.T) {
	tel, err := newElectorTelemetry(settings{meters: metricnoop.NewMeterProvider(), tracers: tracenoop.NewTracerProvider()},
		"role-a", "role-a", "node-1")
	if err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { recordAll(tel) }); allocs != 0 {
		t.Errorf("records without a reader allocate %.1f times, want 0", allocs)
	}
	if tel.sets.Load() != nil {
		t.Error("attribute sets built without a reader")
	}
}

// O6 with a view that drops the renewal instruments: renewals build no
// attributes, the other instruments still record with the role.
func TestTelemetry_O6_DroppedInstrumentsBuildNoAttributes(t *testing.T) {
	drop := func(name string) sdkmetric.View {
		return sdkmetric.NewView(sdkmetric.Instrument{Name: name}, sdkmetric.Stream{Aggregation: sdkmetric.AggregationDrop{}})
	}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader),
		sdkmetric.WithView(drop(MetricRenewals), drop(MetricRenewalDuration)))
	tel, err := newElectorTelemetry(settings{meters: mp, tracers: tracenoop.NewTracerProvider()}, "role-b", "role-b", "node-1")
	if err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { tel.renewal(outcomeOK, time.Millisecond) }); allocs != 0 {
		t.Errorf("a renewal whose instruments are dropped allocates %.1f times, want 0", allocs)
	}
	recordAll(tel)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			seen[m.Name] = true
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == MetricIsLeader {
				want := attribute.NewSet(attribute.String(AttrRole, "role-b"), attribute.String(AttrIdentity, "node-1"))
				if len(g.DataPoints) != 1 || !g.DataPoints[0].Attributes.Equals(&want) || g.DataPoints[0].Value != 1 {
					t.Errorf("is_leader = %+v, want 1 with %v", g.DataPoints, want.ToSlice())
				}
			}
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == MetricAcquireAttempts {
				want := attribute.NewSet(attribute.String(AttrRole, "role-b"), attribute.String(AttrOutcome, outcomeHeld))
				if len(s.DataPoints) != 1 || !s.DataPoints[0].Attributes.Equals(&want) || s.DataPoints[0].Value != 1 {
					t.Errorf("acquire attempts = %+v, want 1 with %v", s.DataPoints, want.ToSlice())
				}
			}
		}
	}
	for _, name := range []string{MetricIsLeader, MetricFence, MetricHandoverDuration, MetricParticipants, MetricTransitions, MetricAcquireAttempts, MetricUnacknowledged} {
		if !seen[name] {
			t.Errorf("%s not recorded", name)
		}
	}
	for _, name := range []string{MetricRenewals, MetricRenewalDuration} {
		if seen[name] {
			t.Errorf("%s recorded although its view drops it", name)
		}
	}
}
