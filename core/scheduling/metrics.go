package scheduling

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names. Every instrument carries the attributes role and job.
const (
	// MetricRuns counts finished runs by outcome (attribute outcome).
	MetricRuns = "hostloom.scheduling.runs"
	// MetricRunDuration is the duration of finished runs in seconds, by
	// outcome.
	MetricRunDuration = "hostloom.scheduling.run.duration"
	// MetricSkipped counts slots that fell due and were not run, by reason
	// (attribute reason): overlap, follower, started, store_error.
	MetricSkipped = "hostloom.scheduling.skipped"
	// MetricMissed counts slots nobody started that were not run: slots
	// older than the misfire window when a new leader took over, slots the
	// window held but a later one superseded, and slots that passed while
	// the scheduler could not tick (process suspended).
	MetricMissed = "hostloom.scheduling.missed"
	// MetricLastSuccess is the Unix time, in seconds, at which the job's
	// latest successful run started; absent until one succeeds.
	MetricLastSuccess = "hostloom.scheduling.last_success"
)

// Skip reasons (attribute reason of MetricSkipped).
const (
	// SkipOverlap: the previous run of the job was still going (S2).
	SkipOverlap = "overlap"
	// SkipFollower: the slot fell due while this instance did not lead.
	SkipFollower = "follower"
	// SkipStarted: the slot store shows some replica already started the
	// slot (or a later one).
	SkipStarted = "started"
	// SkipStoreError: the slot could not be claimed because the slot
	// store failed; the slot is not run rather than risk running it twice.
	SkipStoreError = "store_error"
)

// instruments holds the scheduler's OpenTelemetry instruments.
type instruments struct {
	runs     metric.Int64Counter
	duration metric.Float64Histogram
	skipped  metric.Int64Counter
	missed   metric.Int64Counter
	success  metric.Float64ObservableGauge
}

func newInstruments(m metric.Meter) (instruments, error) {
	var in instruments
	var err error
	if in.runs, err = m.Int64Counter(MetricRuns,
		metric.WithDescription("Finished runs of scheduled jobs, by outcome."),
		metric.WithUnit("{run}")); err != nil {
		return in, err
	}
	if in.duration, err = m.Float64Histogram(MetricRunDuration,
		metric.WithDescription("Duration of runs of scheduled jobs, by outcome."),
		metric.WithUnit("s")); err != nil {
		return in, err
	}
	if in.skipped, err = m.Int64Counter(MetricSkipped,
		metric.WithDescription("Slots that fell due and were not run, by reason."),
		metric.WithUnit("{slot}")); err != nil {
		return in, err
	}
	if in.missed, err = m.Int64Counter(MetricMissed,
		metric.WithDescription("Slots nobody started that will not be run."),
		metric.WithUnit("{slot}")); err != nil {
		return in, err
	}
	if in.success, err = m.Float64ObservableGauge(MetricLastSuccess,
		metric.WithDescription("Start time of the latest successful run, Unix seconds."),
		metric.WithUnit("s")); err != nil {
		return in, err
	}
	return in, nil
}

// jobAttrs are a job's precomputed attribute sets, so a run records its
// metrics without building attributes.
type jobAttrs struct {
	base    metric.MeasurementOption
	outcome [outcomeCount]metric.MeasurementOption
	skip    map[string]metric.MeasurementOption
}

func newJobAttrs(role, job string) jobAttrs {
	r, j := attribute.String("role", role), attribute.String("job", job)
	a := jobAttrs{
		base: metric.WithAttributeSet(attribute.NewSet(r, j)),
		skip: make(map[string]metric.MeasurementOption, 4),
	}
	for o := Outcome(1); o < outcomeCount; o++ {
		a.outcome[o] = metric.WithAttributeSet(attribute.NewSet(r, j, attribute.String("outcome", o.String())))
	}
	for _, reason := range []string{SkipOverlap, SkipFollower, SkipStarted, SkipStoreError} {
		a.skip[reason] = metric.WithAttributeSet(attribute.NewSet(r, j, attribute.String("reason", reason)))
	}
	return a
}

func (s *Scheduler) countSkip(j *job, reason string, n int64) {
	if n > 0 {
		s.ins.skipped.Add(context.Background(), n, j.attrs.skip[reason])
	}
}

func (s *Scheduler) countMissed(j *job, n int64) {
	if n > 0 {
		s.ins.missed.Add(context.Background(), n, j.attrs.base)
	}
}

func (s *Scheduler) countRun(j *job, o Outcome, d time.Duration) {
	s.ins.runs.Add(context.Background(), 1, j.attrs.outcome[o])
	s.ins.duration.Record(context.Background(), d.Seconds(), j.attrs.outcome[o])
}

// observe reports each job's last success time.
func (s *Scheduler) observe(_ context.Context, o metric.Observer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.order {
		if !j.lastSuccess.IsZero() {
			o.ObserveFloat64(s.ins.success, float64(j.lastSuccess.UnixNano())/1e9, j.attrs.base)
		}
	}
	return nil
}
