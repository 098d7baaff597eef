package oteltest_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hostloom/hostloom/core/internal/oteltest"
)

// recorder is a TB that keeps what the checks report.
type recorder struct {
	errs  []string
	fatal string
}

func (*recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// check runs CheckMetrics on its own goroutine (Fatalf ends it).
func check(rm metricdata.ResourceMetrics) (*recorder, map[string]bool) {
	r := &recorder{}
	var seen map[string]bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen = oteltest.CheckMetrics(r, rm)
	}()
	<-done
	return r, seen
}

func metrics(ms ...metricdata.Metrics) metricdata.ResourceMetrics {
	return metricdata.ResourceMetrics{ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: ms}}}
}

// TestCheckMetrics_O6_S4_ReportsEveryBreach: a name without the prefix, a
// missing unit and an attribute key without the prefix are each reported,
// for every kind of data; conforming metrics are not; all are seen.
func TestCheckMetrics_O6_S4_ReportsEveryBreach(t *testing.T) {
	good := attribute.NewSet(attribute.String("hostloom.role", "billing"))
	bad := attribute.NewSet(attribute.String("role", "billing"))
	r, seen := check(metrics(
		metricdata.Metrics{Name: "hostloom.ok", Unit: "1", Data: metricdata.Sum[int64]{DataPoints: []metricdata.DataPoint[int64]{{Attributes: good}}}},
		metricdata.Metrics{Name: "plain", Unit: "1", Data: metricdata.Gauge[int64]{}},
		metricdata.Metrics{Name: "hostloom.nounit", Data: metricdata.Gauge[float64]{}},
		metricdata.Metrics{Name: "hostloom.sumf", Unit: "1", Data: metricdata.Sum[float64]{DataPoints: []metricdata.DataPoint[float64]{{Attributes: bad}}}},
		metricdata.Metrics{Name: "hostloom.hist", Unit: "s", Data: metricdata.Histogram[float64]{DataPoints: []metricdata.HistogramDataPoint[float64]{{Attributes: bad}}}},
		metricdata.Metrics{Name: "hostloom.histi", Unit: "s", Data: metricdata.Histogram[int64]{DataPoints: []metricdata.HistogramDataPoint[int64]{{Attributes: good}}}},
	))
	if r.fatal != "" {
		t.Fatalf("fatal: %s", r.fatal)
	}
	want := []string{`metric "plain" unit "1"`, `metric "hostloom.nounit" unit ""`, `metric hostloom.sumf: attribute "role"`, `metric hostloom.hist: attribute "role"`}
	if len(r.errs) != len(want) {
		t.Fatalf("errors %q, want %d", r.errs, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(r.errs[i], w) {
			t.Errorf("error %d = %q, want it to start %q", i, r.errs[i], w)
		}
	}
	if len(seen) != 6 || !seen["plain"] || !seen["hostloom.histi"] {
		t.Errorf("seen = %v, want all six", seen)
	}
}

// TestCheckMetrics_UnknownDataFails: data it cannot read fails the test
// instead of passing unchecked.
func TestCheckMetrics_UnknownDataFails(t *testing.T) {
	r, _ := check(metrics(metricdata.Metrics{Name: "hostloom.x", Unit: "1", Data: metricdata.ExponentialHistogram[float64]{}}))
	if !strings.Contains(r.fatal, "unexpected data") {
		t.Fatalf("fatal = %q, want unexpected data", r.fatal)
	}
}
