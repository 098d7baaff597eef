package leadership

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync/atomic"
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
	// refused, error, fault, unacknowledged).
	MetricRenewals = "hostloom.leadership.renewals"
	// MetricRenewalDuration is the latency of renewal attempts, in
	// seconds, by role and outcome.
	MetricRenewalDuration = "hostloom.leadership.renewal.duration"
	// MetricAcquireAttempts counts acquisition attempts by role and outcome
	// (acquired, held, error, fault, unacknowledged).
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
	// MetricUnacknowledged counts acquisitions and renewals that fewer
	// replicas acknowledged than the backend requires (Q2; Redis
	// locking.redis.min_replicas), by role and op (acquire, renew).
	MetricUnacknowledged = "hostloom.leadership.unacknowledged"
)

// Span names of the elector: one client span per lock call, with the
// attributes AttrRole and AttrLockKey, and AttrOutcome when the call returns.
const (
	SpanAcquire = "hostloom.leadership.acquire"
	SpanRenew   = "hostloom.leadership.renew"
	SpanRelease = "hostloom.leadership.release"
	// SpanWatch and SpanUnwatch open and close the subscription to the
	// lock's release notifications; SpanDeregister removes this instance
	// from the role's participants at Stop.
	SpanWatch      = "hostloom.leadership.watch"
	SpanUnwatch    = "hostloom.leadership.unwatch"
	SpanDeregister = "hostloom.leadership.deregister"
)

// Attribute keys of the elector's and the leader channel's metrics and
// spans. Every key carries the hostloom. prefix, as the OpenTelemetry
// naming conventions ask of a library's own attributes.
const (
	// AttrRole is the role (bounded: the roles the service declares).
	AttrRole = "hostloom.role"
	// AttrLockKey is the role's lock key (one per role), on spans only.
	AttrLockKey = "hostloom.lock_key"
	// AttrIdentity is this instance's identity; it is per process, so a
	// series carrying it is replaced at every restart.
	AttrIdentity = "hostloom.identity"
	// AttrOutcome is the outcome of a lock call (ok, acquired, held,
	// refused, error, fault, unacknowledged).
	AttrOutcome = "hostloom.outcome"
	// AttrReason is the reason of a transition (acquired, released,
	// resigned, refused, expired) or of a channel drop (follower, full,
	// loss).
	AttrReason = "hostloom.reason"
	// AttrKind is how a new leader found the role free: handover or
	// takeover.
	AttrKind = "hostloom.kind"
	// AttrChannel is a leader channel's name.
	AttrChannel = "hostloom.channel"
	// AttrOp is the lock call a count is about: acquire or renew.
	AttrOp = "hostloom.op"
)

// Outcomes of lock calls, as metric attribute values.
const (
	outcomeOK       = "ok"
	outcomeAcquired = "acquired"
	outcomeHeld     = "held"
	outcomeRefused  = "refused"
	outcomeError    = "error"
	outcomeFault    = "fault"
	outcomeUnacked  = "unacknowledged" // Q2: too few replicas acknowledged
)

// electorTelemetry holds one elector's instruments and what its
// attributes are made of. The attribute sets are built when a reader
// first wants a measurement (an instrument's Enabled), so an elector in a
// process without a metrics SDK neither holds them nor builds an
// attribute set per renewal or attempt.
type electorTelemetry struct {
	*instruments
	role, key, identity string
	sets                atomic.Pointer[telemetrySets]
	tracer              trace.Tracer
}

// telemetrySets are an elector's attribute sets that do not change.
type telemetrySets struct {
	role   metric.MeasurementOption // role
	leader metric.MeasurementOption // role and identity
}

// instruments are the elector's instruments of one meter, shared by the
// electors that use it.
type instruments struct {
	meter       metric.Meter
	fence       metric.Int64Gauge
	handover    metric.Float64Histogram
	members     metric.Int64Gauge
	isLeader    metric.Int64Gauge
	transitions metric.Int64Counter
	renewals    metric.Int64Counter
	renewDur    metric.Float64Histogram
	acquires    metric.Int64Counter
	unacked     metric.Int64Counter
}

// lastInstruments are the instruments the latest elector created: the
// next elector of the same meter shares them rather than holding its own
// (a meter returns the same instrument for the same name anyway). One
// entry, so a process that replaces its meter provider keeps nothing of
// the old one but this.
var lastInstruments atomic.Pointer[instruments]

// instrumentsOf returns m's instruments, shared when the latest elector
// used m too. Only a meter that is a pointer is compared: any other kind
// might not be comparable.
func instrumentsOf(m metric.Meter) (*instruments, error) {
	shareable := m != nil && reflect.TypeOf(m).Kind() == reflect.Pointer
	if last := lastInstruments.Load(); shareable && last != nil && last.meter == m {
		return last, nil
	}
	var errs []error
	check := func(name string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("instrument %s: %w", name, err))
		}
	}
	t := &instruments{meter: m}
	var err error
	t.isLeader, err = m.Int64Gauge(MetricIsLeader, metric.WithUnit("{leader}"),
		metric.WithDescription("1 while this instance leads the role, else 0"))
	check(MetricIsLeader, err)
	t.fence, err = m.Int64Gauge(MetricFence, metric.WithUnit("{fence}"),
		metric.WithDescription("The fencing token of the term this instance leads, else 0"))
	check(MetricFence, err)
	t.handover, err = m.Float64Histogram(MetricHandoverDuration, metric.WithUnit("s"),
		metric.WithDescription("Leaderless time before this instance took the role, as it observed it"))
	check(MetricHandoverDuration, err)
	t.members, err = m.Int64Gauge(MetricParticipants, metric.WithUnit("{participant}"),
		metric.WithDescription("Participants of the role at the latest lookup"))
	check(MetricParticipants, err)
	t.transitions, err = m.Int64Counter(MetricTransitions, metric.WithUnit("{transition}"),
		metric.WithDescription("Leadership transitions by reason"))
	check(MetricTransitions, err)
	t.renewals, err = m.Int64Counter(MetricRenewals, metric.WithUnit("{renewal}"),
		metric.WithDescription("Lease renewal attempts by outcome"))
	check(MetricRenewals, err)
	t.renewDur, err = m.Float64Histogram(MetricRenewalDuration, metric.WithUnit("s"),
		metric.WithDescription("Lease renewal latency by outcome"))
	check(MetricRenewalDuration, err)
	t.acquires, err = m.Int64Counter(MetricAcquireAttempts, metric.WithUnit("{attempt}"),
		metric.WithDescription("Lease acquisition attempts by outcome"))
	check(MetricAcquireAttempts, err)
	t.unacked, err = m.Int64Counter(MetricUnacknowledged, metric.WithUnit("{call}"),
		metric.WithDescription("Acquisitions and renewals too few replicas acknowledged"))
	check(MetricUnacknowledged, err)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if shareable {
		lastInstruments.Store(t)
	}
	return t, nil
}

// newElectorTelemetry keeps what the elector's attributes are made of
// and finds its instruments. A meter that refuses one (an invalid name or
// unit for its SDK) fails NewElector, naming the instrument, rather than
// leaving the metric silently absent.
func newElectorTelemetry(s settings, role, key, identity string) (*electorTelemetry, error) {
	in, err := instrumentsOf(s.meters.Meter(instrumentationScope))
	if err != nil {
		return nil, err
	}
	return &electorTelemetry{
		instruments: in,
		role:        role,
		key:         key,
		identity:    identity,
		tracer:      s.tracers.Tracer(instrumentationScope),
	}, nil
}

// fixed returns the elector's attribute sets, built on first use.
func (t *electorTelemetry) fixed() *telemetrySets {
	if s := t.sets.Load(); s != nil {
		return s
	}
	role := attribute.String(AttrRole, t.role)
	s := &telemetrySets{
		role:   metric.WithAttributeSet(attribute.NewSet(role)),
		leader: metric.WithAttributeSet(attribute.NewSet(role, attribute.String(AttrIdentity, t.identity))),
	}
	if t.sets.CompareAndSwap(nil, s) {
		return s
	}
	return t.sets.Load()
}

// with returns the role's attributes plus k = v, for a measurement.
func (t *electorTelemetry) with(k, v string) metric.MeasurementOption {
	return metric.WithAttributes(attribute.String(AttrRole, t.role), attribute.String(k, v))
}

// Each record below first asks its instruments whether any reader wants
// the measurement: without a metrics SDK (or with a view that drops the
// instrument) it builds no attributes.

func (t *electorTelemetry) leader(v bool, fence uint64) {
	ctx := context.Background()
	leading, fenced := t.isLeader.Enabled(ctx), t.fence.Enabled(ctx)
	if !leading && !fenced {
		return
	}
	n := int64(0)
	if v {
		n = 1
	} else {
		fence = 0
	}
	set := t.fixed().leader
	if leading {
		t.isLeader.Record(ctx, n, set)
	}
	if fenced {
		t.fence.Record(ctx, int64(min(fence, math.MaxInt64)), set)
	}
}

// leaderless records how long the role was free before this instance
// took it.
func (t *electorTelemetry) leaderless(kind string, d time.Duration) {
	if ctx := context.Background(); t.handover.Enabled(ctx) {
		t.handover.Record(ctx, d.Seconds(), t.with(AttrKind, kind))
	}
}

func (t *electorTelemetry) participants(n int) {
	if ctx := context.Background(); t.members.Enabled(ctx) {
		t.members.Record(ctx, int64(n), t.fixed().role)
	}
}

func (t *electorTelemetry) transition(r Reason) {
	if ctx := context.Background(); t.transitions.Enabled(ctx) {
		t.transitions.Add(ctx, 1, t.with(AttrReason, r.String()))
	}
}

func (t *electorTelemetry) renewal(outcome string, d time.Duration) {
	ctx := context.Background()
	count, timed := t.renewals.Enabled(ctx), t.renewDur.Enabled(ctx)
	if !count && !timed {
		return
	}
	o := t.with(AttrOutcome, outcome)
	if count {
		t.renewals.Add(ctx, 1, o)
	}
	if timed {
		t.renewDur.Record(ctx, d.Seconds(), o)
	}
}

func (t *electorTelemetry) acquire(outcome string) {
	if ctx := context.Background(); t.acquires.Enabled(ctx) {
		t.acquires.Add(ctx, 1, t.with(AttrOutcome, outcome))
	}
}

func (t *electorTelemetry) unacknowledged(op string) {
	if ctx := context.Background(); t.unacked.Enabled(ctx) {
		t.unacked.Add(ctx, 1, t.with(AttrOp, op))
	}
}

func (t *electorTelemetry) span(ctx context.Context, name string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, name, trace.WithAttributes(attribute.String(AttrRole, t.role), attribute.String(AttrLockKey, t.key)),
		trace.WithSpanKind(trace.SpanKindClient))
}

// endSpan records the call's outcome and ends the span.
func endSpan(sp trace.Span, outcome string, err error) {
	sp.SetAttributes(attribute.String(AttrOutcome, outcome))
	if err != nil && outcome != outcomeHeld {
		sp.RecordError(err)
		sp.SetStatus(codes.Error, outcome)
	}
	sp.End()
}
