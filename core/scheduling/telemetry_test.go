package scheduling_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hostloom/hostloom/core/internal/oteltest"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/scheduling"
)

// TestScheduler_S4_TelemetryConventions: every instrument has a unit, and
// every metric attribute, span name and span attribute carries the
// hostloom. prefix.
func TestScheduler_S4_TelemetryConventions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter()
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		f := leadershiptest.NewFake("billing")
		s := newScheduler(t, f, scheduling.WithMeterProvider(m.provider), scheduling.WithTracerProvider(tp))
		var rec recorder
		mustAdd(t, s, scheduling.Job{Name: "report", Schedule: scheduling.Every(time.Minute), Run: rec.job("a", time.Second)})
		mustStart(t, s)
		time.Sleep(time.Minute + 30*time.Second) // one slot as follower
		f.SetLeader(true)
		time.Sleep(time.Minute) // one run
		synctest.Wait()

		seen := oteltest.CheckMetrics(t, m.collect(t))
		for _, name := range []string{scheduling.MetricRuns, scheduling.MetricRunDuration, scheduling.MetricSkipped,
			scheduling.MetricLag, scheduling.MetricLastSuccess} {
			if !seen[name] {
				t.Errorf("metric %s not recorded", name)
			}
		}
		ended := spans.Ended()
		if len(ended) != 1 || ended[0].Name() != scheduling.SpanRun {
			t.Fatalf("%d spans, want one %s", len(ended), scheduling.SpanRun)
		}
		keys := map[attribute.Key]bool{}
		for _, kv := range ended[0].Attributes() {
			keys[kv.Key] = true
		}
		for _, k := range []string{scheduling.AttrRole, scheduling.AttrJob, scheduling.AttrSlot, scheduling.AttrAttempt, scheduling.AttrOutcome} {
			if !strings.HasPrefix(k, "hostloom.") || !keys[attribute.Key(k)] {
				t.Errorf("span attribute %q missing (have %v)", k, keys)
			}
		}
	})
}

// refusingHistograms is a meter provider whose histograms cannot be created.
type refusingHistograms struct{ noop.MeterProvider }

type refusingHistogramMeter struct{ noop.Meter }

func (refusingHistograms) Meter(string, ...metric.MeterOption) metric.Meter {
	return refusingHistogramMeter{}
}

func (refusingHistogramMeter) Float64Histogram(string, ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	return noop.Float64Histogram{}, errors.New("histogram refused")
}

// TestNew_S4_InstrumentErrorFails: an instrument the meter refuses fails New
// rather than leaving the metric silently absent.
func TestNew_S4_InstrumentErrorFails(t *testing.T) {
	_, err := scheduling.New(leadershiptest.NewFake("billing"), scheduling.WithMeterProvider(refusingHistograms{}))
	if err == nil || !strings.Contains(err.Error(), "histogram refused") || !strings.Contains(err.Error(), scheduling.MetricRunDuration) || !strings.Contains(err.Error(), "scheduling:") {
		t.Fatalf("New with a refusing meter: %v", err)
	}
}
