// Package oteltest checks, in tests, the naming conventions every package
// of the module follows for its OpenTelemetry metrics: names and data
// point attribute keys carry the "hostloom." prefix, and every instrument
// has a unit. The elector, the leader channel (O6) and the scheduler (S4)
// are checked with it.
package oteltest

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Prefix starts every metric name and attribute key of the module.
const Prefix = "hostloom."

// TB is the part of testing.TB the checks report to.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// CheckMetrics reports to t, as errors, every metric of rm whose name
// lacks Prefix or whose unit is empty and every data point attribute key
// without Prefix, and returns the names of the metrics it saw. Data of a
// kind it cannot read (other than sums, gauges and histograms of int64 or
// float64) fails t.
func CheckMetrics(t TB, rm metricdata.ResourceMetrics) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			seen[m.Name] = true
			if !strings.HasPrefix(m.Name, Prefix) || m.Unit == "" {
				t.Errorf("metric %q unit %q: want a %s name and a unit", m.Name, m.Unit, Prefix)
			}
			for _, set := range pointAttributes(t, m) {
				for _, kv := range set.ToSlice() {
					if !strings.HasPrefix(string(kv.Key), Prefix) {
						t.Errorf("metric %s: attribute %q lacks the %s prefix", m.Name, kv.Key, Prefix)
					}
				}
			}
		}
	}
	return seen
}

// pointAttributes returns the attribute sets of m's data points.
func pointAttributes(t TB, m metricdata.Metrics) []attribute.Set {
	t.Helper()
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		return attributes(d.DataPoints)
	case metricdata.Sum[float64]:
		return attributes(d.DataPoints)
	case metricdata.Gauge[int64]:
		return attributes(d.DataPoints)
	case metricdata.Gauge[float64]:
		return attributes(d.DataPoints)
	case metricdata.Histogram[int64]:
		return histogramAttributes(d.DataPoints)
	case metricdata.Histogram[float64]:
		return histogramAttributes(d.DataPoints)
	default:
		t.Fatalf("metric %s: unexpected data %T", m.Name, m.Data)
		return nil
	}
}

func attributes[N int64 | float64](dps []metricdata.DataPoint[N]) []attribute.Set {
	out := make([]attribute.Set, 0, len(dps))
	for _, dp := range dps {
		out = append(out, dp.Attributes)
	}
	return out
}

func histogramAttributes[N int64 | float64](dps []metricdata.HistogramDataPoint[N]) []attribute.Set {
	out := make([]attribute.Set, 0, len(dps))
	for _, dp := range dps {
		out = append(out, dp.Attributes)
	}
	return out
}
