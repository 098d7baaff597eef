package scheduling

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
)

// Metric names. Every instrument carries the attributes AttrRole and
// AttrJob.
const (
	// MetricRuns counts finished runs by outcome (attribute outcome).
	MetricRuns = "hostloom.scheduling.runs"
	// MetricRunDuration is the duration of finished runs in seconds, by
	// outcome.
	MetricRunDuration = "hostloom.scheduling.run.duration"
	// MetricSkipped counts slots that fell due and were not run, by reason
	// (attribute reason): overlap, follower, started, store_error, paused.
	MetricSkipped = "hostloom.scheduling.skipped"
	// MetricOverlap counts slots that fell due while the job's previous
	// run was going, by what the Overlap policy did (attribute action):
	// skip, buffer, cancel (S7). A buffered slot superseded by a later one
	// is also counted as skipped (reason overlap).
	MetricOverlap = "hostloom.scheduling.overlap"
	// MetricLag is the time from a run's slot to its start, in seconds
	// (jitter, claim, catch-up and recovery delays), per job (S11).
	MetricLag = "hostloom.scheduling.lag"
	// MetricMissed counts slots nobody started that were not run: slots
	// older than the misfire window when a new leader took over, slots the
	// window held but a later one superseded, and slots that passed while
	// the scheduler could not tick (process suspended).
	MetricMissed = "hostloom.scheduling.missed"
	// MetricLastSuccess is the Unix time, in seconds, at which the job's
	// latest successful run started; absent until one succeeds.
	MetricLastSuccess = "hostloom.scheduling.last_success"
)

// SpanRun is the span of one run of a job, with the attributes AttrRole,
// AttrJob, AttrSlot and AttrAttempt.
const SpanRun = "hostloom.scheduling.run"

// Attribute keys of the scheduler's metrics and spans, prefixed hostloom.
// as the OpenTelemetry naming conventions ask of a library's own
// attributes. Their values are bounded by the jobs a service declares,
// except AttrSlot and AttrAttempt, which are on spans only.
const (
	// AttrRole is the role whose leader runs the job.
	AttrRole = "hostloom.role"
	// AttrJob is the job's name.
	AttrJob = "hostloom.job"
	// AttrOutcome is a run's outcome (MetricRuns, MetricRunDuration).
	AttrOutcome = "hostloom.outcome"
	// AttrReason is why a slot was skipped (MetricSkipped).
	AttrReason = "hostloom.reason"
	// AttrAction is what the Overlap policy did (MetricOverlap).
	AttrAction = "hostloom.action"
	// AttrSlot is the run's slot, Unix milliseconds (spans only).
	AttrSlot = "hostloom.slot_unix_ms"
	// AttrAttempt is the run's attempt, from 1 (spans only).
	AttrAttempt = "hostloom.attempt"
)

// Skip reasons (attribute AttrReason of MetricSkipped).
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
	// SkipPaused: the job is paused (Scheduler.Pause, S10).
	SkipPaused = "paused"
)

// Overlap actions (attribute AttrAction of MetricOverlap).
const (
	// OverlapActionSkip: the slot was skipped (OverlapSkip).
	OverlapActionSkip = "skip"
	// OverlapActionBuffer: the slot will run after the current run
	// (OverlapBufferOne).
	OverlapActionBuffer = "buffer"
	// OverlapActionCancel: the current run was cancelled for the slot
	// (OverlapCancelPrevious).
	OverlapActionCancel = "cancel"
)

// instruments holds the scheduler's OpenTelemetry instruments.
type instruments struct {
	runs     metric.Int64Counter
	duration metric.Float64Histogram
	skipped  metric.Int64Counter
	missed   metric.Int64Counter
	success  metric.Float64ObservableGauge
	overlap  metric.Int64Counter
	lag      metric.Float64Histogram
}

func newInstruments(m metric.Meter) (instruments, error) {
	var in instruments
	var err error
	if in.runs, err = m.Int64Counter(MetricRuns,
		metric.WithDescription("Finished runs of scheduled jobs, by outcome."),
		metric.WithUnit("{run}")); err != nil {
		return in, fmt.Errorf("instrument %s: %w", MetricRuns, err)
	}
	if in.duration, err = m.Float64Histogram(MetricRunDuration,
		metric.WithDescription("Duration of runs of scheduled jobs, by outcome."),
		metric.WithUnit("s")); err != nil {
		return in, fmt.Errorf("instrument %s: %w", MetricRunDuration, err)
	}
	if in.skipped, err = m.Int64Counter(MetricSkipped,
		metric.WithDescription("Slots that fell due and were not run, by reason."),
		metric.WithUnit("{slot}")); err != nil {
		return in, fmt.Errorf("instrument %s: %w", MetricSkipped, err)
	}
	if in.missed, err = m.Int64Counter(MetricMissed,
		metric.WithDescription("Slots nobody started that will not be run."),
		metric.WithUnit("{slot}")); err != nil {
		return in, fmt.Errorf("instrument %s: %w", MetricMissed, err)
	}
	if in.success, err = m.Float64ObservableGauge(MetricLastSuccess,
		metric.WithDescription("Start time of the latest successful run, Unix seconds."),
		metric.WithUnit("s")); err != nil {
		return in, fmt.Errorf("instrument %s: %w", MetricLastSuccess, err)
	}
	if in.overlap, err = m.Int64Counter(MetricOverlap,
		metric.WithDescription("Slots that fell due while the previous run was going, by overlap action."),
		metric.WithUnit("{slot}")); err != nil {
		return in, fmt.Errorf("instrument %s: %w", MetricOverlap, err)
	}
	if in.lag, err = m.Float64Histogram(MetricLag,
		metric.WithDescription("Time from a run's slot to its start."),
		metric.WithUnit("s")); err != nil {
		return in, fmt.Errorf("instrument %s: %w", MetricLag, err)
	}
	return in, nil
}

// Indices of a job's attribute sets: the base set (role, job), one per
// outcome, one per skip reason.
const (
	attrBase      = 0
	attrSkip      = int(outcomeCount) // first skip reason
	skipOverlap   = attrSkip + 0
	skipFollower  = attrSkip + 1
	skipStarted   = attrSkip + 2
	skipStore     = attrSkip + 3
	skipPaused    = attrSkip + 4
	attrAction    = attrSkip + len(skipReasons) // first overlap action
	overlapSkip   = attrAction + 0
	overlapBuffer = attrAction + 1
	overlapCancel = attrAction + 2
	attrCount     = attrAction + len(overlapActions)
)

// skipReasons names the skip reasons by index (minus attrSkip).
var skipReasons = [...]string{SkipOverlap, SkipFollower, SkipStarted, SkipStoreError, SkipPaused}

// overlapActions names the overlap actions by index (minus attrAction).
var overlapActions = [...]string{OverlapActionSkip, OverlapActionBuffer, OverlapActionCancel}

// jobAttrs are a job's attribute sets, built on first use (most jobs never
// see most outcomes) and kept, so recording a measurement allocates
// nothing.
type jobAttrs struct {
	role, job string
	sets      [attrCount]atomic.Pointer[attrSet]
}

// attrSet is one attribute set as the option lists the instruments take.
type attrSet struct {
	add []metric.AddOption
	rec []metric.RecordOption
	obs []metric.ObserveOption
}

func newJobAttrs(role, job string) *jobAttrs {
	return &jobAttrs{role: role, job: job}
}

// get returns attribute set i, building it on first use; concurrent first
// uses build equal sets and keep one.
func (a *jobAttrs) get(i int) *attrSet {
	if p := a.sets[i].Load(); p != nil {
		return p
	}
	kvs := []attribute.KeyValue{attribute.String(AttrRole, a.role), attribute.String(AttrJob, a.job)}
	switch {
	case i > attrBase && i < attrSkip:
		kvs = append(kvs, attribute.String(AttrOutcome, Outcome(i).String()))
	case i >= attrAction:
		kvs = append(kvs, attribute.String(AttrAction, overlapActions[i-attrAction]))
	case i >= attrSkip:
		kvs = append(kvs, attribute.String(AttrReason, skipReasons[i-attrSkip]))
	}
	opt := metric.WithAttributeSet(attribute.NewSet(kvs...))
	p := &attrSet{add: []metric.AddOption{opt}, rec: []metric.RecordOption{opt}, obs: []metric.ObserveOption{opt}}
	if a.sets[i].CompareAndSwap(nil, p) {
		return p
	}
	return a.sets[i].Load()
}

func (s *Scheduler) countSkip(j *job, reason int, n int64) {
	if n > 0 {
		s.ins.skipped.Add(context.Background(), n, j.attrs.get(reason).add...)
	}
}

// countMissed counts n missed slots and logs them (Info, with the count).
func (s *Scheduler) countMissed(j *job, n int64) {
	if n > 0 {
		s.ins.missed.Add(context.Background(), n, j.attrs.get(attrBase).add...)
		s.log.Info("SchedulerSlotsMissed", zap.String("job", j.Name), zap.Int64("count", n))
	}
}

func (s *Scheduler) countOverlap(j *job, action int) {
	s.ins.overlap.Add(context.Background(), 1, j.attrs.get(action).add...)
}

// recordLag records a run's lag behind its slot.
func (s *Scheduler) recordLag(j *job, lag time.Duration) {
	s.ins.lag.Record(context.Background(), max(lag, 0).Seconds(), j.attrs.get(attrBase).rec...)
}

func (s *Scheduler) countRun(j *job, o Outcome, d time.Duration) {
	set := j.attrs.get(int(o))
	s.ins.runs.Add(context.Background(), 1, set.add...)
	s.ins.duration.Record(context.Background(), d.Seconds(), set.rec...)
}

// observe reports each job's last success time.
func (s *Scheduler) observe(_ context.Context, o metric.Observer) error {
	type success struct {
		j  *job
		at time.Time
	}
	var seen []success
	s.ask(func() {
		for _, j := range s.order {
			if !j.lastSuccess.IsZero() {
				seen = append(seen, success{j, j.lastSuccess})
			}
		}
	})
	for _, v := range seen {
		o.ObserveFloat64(s.ins.success, float64(v.at.UnixNano())/1e9, v.j.attrs.get(attrBase).obs...)
	}
	return nil
}
