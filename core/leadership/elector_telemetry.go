package leadership

import (
	"context"
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Metric names of the elector. The meter and tracer scope is the package
// import path.
const (
	// MetricIsLeader is a gauge per role: 1 while this instance leads.
	MetricIsLeader = "hostloom.leadership.is_leader"
	// MetricTransitions counts transitions by role and reason (acquired,
	// released, resigned, refused, expired).
	MetricTransitions = "hostloom.leadership.transitions"
	// MetricRenewals counts renewal attempts by role and outcome (ok,
	// refused, error, fault).
	MetricRenewals = "hostloom.leadership.renewals"
	// MetricRenewalDuration is the latency of renewal attempts, in
	// seconds, by role and outcome.
	MetricRenewalDuration = "hostloom.leadership.renewal.duration"
	// MetricAcquireAttempts counts acquisition attempts by role and outcome
	// (acquired, held, error, fault).
	MetricAcquireAttempts = "hostloom.leadership.acquire.attempts"
	// MetricFence is a gauge per role and identity: the current term's
	// fencing token while this instance leads, 0 otherwise (O6, G2).
	MetricFence = "hostloom.leadership.fence"
	// MetricHandoverDuration is how long the role was leaderless before this
	// instance took it, as the new leader observed it, in seconds, by kind:
	// "handover" (from the release notification to the acquisition) or
	// "takeover" (from the expiry of the lease it learned to the
	// acquisition) (O6).
	MetricHandoverDuration = "hostloom.leadership.handover.duration"
	// MetricParticipants is a gauge per role: the participants the latest
	// Participants call listed (O6, P1).
	MetricParticipants = "hostloom.leadership.participants"
)

// Span names of the elector.
const (
	SpanAcquire = "leadership.acquire"
	SpanRenew   = "leadership.renew"
	SpanRelease = "leadership.release"
)

// Outcomes of lock calls, as metric attribute values.
const (
	outcomeOK       = "ok"
	outcomeAcquired = "acquired"
	outcomeHeld     = "held"
	outcomeRefused  = "refused"
	outcomeError    = "error"
	outcomeFault    = "fault"
)

// electorTelemetry holds one elector's instruments. Instrument creation
// errors leave a no-op instrument in place (the otel API returns usable
// instruments alongside errors), so telemetry never stops an election.
type electorTelemetry struct {
	role        attribute.KeyValue
	key         attribute.KeyValue
	roleSet     metric.MeasurementOption
	leaderSet   metric.MeasurementOption // role and identity
	fence       metric.Int64Gauge
	handover    metric.Float64Histogram
	members     metric.Int64Gauge
	tracer      trace.Tracer
	isLeader    metric.Int64Gauge
	transitions metric.Int64Counter
	renewals    metric.Int64Counter
	renewDur    metric.Float64Histogram
	acquires    metric.Int64Counter
}

func newElectorTelemetry(s settings, role, key, identity string) *electorTelemetry {
	m := s.meters.Meter(instrumentationScope)
	t := &electorTelemetry{
		role:   attribute.String("role", role),
		key:    attribute.String("lock_key", key),
		tracer: s.tracers.Tracer(instrumentationScope),
	}
	t.roleSet = metric.WithAttributeSet(attribute.NewSet(t.role))
	t.leaderSet = metric.WithAttributeSet(attribute.NewSet(t.role, attribute.String("identity", identity)))
	t.isLeader, _ = m.Int64Gauge(MetricIsLeader,
		metric.WithDescription("1 while this instance leads the role, else 0"))
	t.fence, _ = m.Int64Gauge(MetricFence,
		metric.WithDescription("The fencing token of the term this instance leads, else 0"))
	t.handover, _ = m.Float64Histogram(MetricHandoverDuration, metric.WithUnit("s"),
		metric.WithDescription("Leaderless time before this instance took the role, as it observed it"))
	t.members, _ = m.Int64Gauge(MetricParticipants,
		metric.WithDescription("Participants of the role at the latest lookup"))
	t.transitions, _ = m.Int64Counter(MetricTransitions,
		metric.WithDescription("Leadership transitions by reason"))
	t.renewals, _ = m.Int64Counter(MetricRenewals,
		metric.WithDescription("Lease renewal attempts by outcome"))
	t.renewDur, _ = m.Float64Histogram(MetricRenewalDuration, metric.WithUnit("s"),
		metric.WithDescription("Lease renewal latency by outcome"))
	t.acquires, _ = m.Int64Counter(MetricAcquireAttempts,
		metric.WithDescription("Lease acquisition attempts by outcome"))
	return t
}

func (t *electorTelemetry) leader(v bool, fence uint64) {
	n := int64(0)
	if v {
		n = 1
	} else {
		fence = 0
	}
	t.isLeader.Record(context.Background(), n, t.leaderSet)
	t.fence.Record(context.Background(), int64(min(fence, math.MaxInt64)), t.leaderSet)
}

// leaderless records how long the role was free before this instance
// took it.
func (t *electorTelemetry) leaderless(kind string, d time.Duration) {
	t.handover.Record(context.Background(), d.Seconds(), metric.WithAttributes(t.role, attribute.String("kind", kind)))
}

func (t *electorTelemetry) participants(n int) {
	t.members.Record(context.Background(), int64(n), t.roleSet)
}

func (t *electorTelemetry) transition(r Reason) {
	t.transitions.Add(context.Background(), 1, metric.WithAttributes(t.role, attribute.String("reason", r.String())))
}

func (t *electorTelemetry) renewal(outcome string, d time.Duration) {
	o := metric.WithAttributes(t.role, attribute.String("outcome", outcome))
	t.renewals.Add(context.Background(), 1, o)
	t.renewDur.Record(context.Background(), d.Seconds(), o)
}

func (t *electorTelemetry) acquire(outcome string) {
	t.acquires.Add(context.Background(), 1, metric.WithAttributes(t.role, attribute.String("outcome", outcome)))
}

// span starts a span for a lock call.
func (t *electorTelemetry) span(ctx context.Context, name string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, name, trace.WithAttributes(t.role, t.key), trace.WithSpanKind(trace.SpanKindClient))
}

// endSpan records the call's outcome and ends the span.
func endSpan(sp trace.Span, outcome string, err error) {
	sp.SetAttributes(attribute.String("outcome", outcome))
	if err != nil && outcome != outcomeHeld {
		sp.RecordError(err)
		sp.SetStatus(codes.Error, outcome)
	}
	sp.End()
}
