package leadership

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/locking"
)

// A refused candidate sleeps until the holder's lease runs out as the
// refusal reported it (E1, P3), then tries. The remaining time is measured
// from when the backend read its clock, and the candidate counts it from
// when the refusal arrived, so the attempt does not land early by the
// round trip. Redis reports it to the microsecond up to the start of the
// expiry millisecond and frees the key once its clock has passed that
// millisecond, so the key may still be held for up to 1ms after: a
// refusal reporting at most finalWait left is tried again at once, up to
// maxFinalTries times in a row, rather than after a timer, which the Go
// runtime fires up to a millisecond late. After that many the next try
// waits finalWait past the reported time, as for a backend that reports
// too little.
const (
	finalWait     = time.Millisecond
	maxFinalTries = 32
)

// Elector elects this instance leader of one role over a locking.Lock. It
// implements Leadership and adds Start, Stop, Resign, Run, Fence, Leader,
// Participants and Check. It is safe for concurrent use.
//
// One state machine per elector owns the term: it alone reads and writes
// the lease, the term and the deadlines, one message at a time. Lock calls
// run on short-lived goroutines that post their outcome to it; Stop and
// Resign post requests that carry their reply channel; a timer posts when
// something falls due. An idle elector has no goroutine (see loop). Readers (IsLeader, Term, Token, Fence,
// Describe, Check) read the snapshot the loop publishes in one atomic
// pointer, and check the term's deadline against the clock themselves
// (G3). OnChange and OnNewLeader subscribers are called on a separate
// delivery goroutine, so a slow subscriber never delays the election.
type Elector struct {
	role       string
	key        string
	lock       locking.Lock
	caps       *capabilities // resolved once per lock: shared by a Process's electors
	opts       Options       // effective options (lease capped by the lock)
	askedLease time.Duration // Options.Lease as given, before the lock's cap (T2)
	margin     time.Duration
	identity   string
	log        *zap.Logger
	tel        *electorTelemetry

	group *BalanceGroup // B1: nil unless Options.Balance
	// procGate is the gate of the Process that created the elector: its
	// acquisition attempts, subscriptions and renewals run through it, so a
	// process starting, or taking over, 50,000 roles holds no goroutine
	// per role while the lock works through them. nil for an elector of
	// its own.
	procGate *processGates

	state    atomic.Pointer[termState]    // written by the loop only
	progress atomic.Pointer[loopProgress] // written by the loop only
	observed atomic.Pointer[observation]  // written by the loop only
	notes    notifier

	loop        *loop       // the state machine; Start and Stop are messages to it
	running     atomic.Bool // written by the loop only: started, and no Stop yet (CheckWithin)
	regs        regCalls
	coordinated bool
	capped      bool // opts.Lease is the lock's cap, below askedLease (T2)
}

// regCalls counts the calls that may register an elector as a participant
// of its role (P1): its acquisition attempts and renewals, begun (by the
// loop, before the call is sent) and answered (by the call's goroutine,
// once the lock answered it or it was never sent; see settled). A leave's
// withdrawal made while every begun call was answered removes the last
// registration for good when no call begins after it (a leaving elector
// begins none): its Stop then has nothing to deregister (see
// Elector.withdraw). A call that failed without an answer is never
// counted answered, so every later withdrawal of that elector is followed
// by Stop's deregistration, as before.
type regCalls struct {
	begun, answered atomic.Uint32
	// withdrawnAt is begun+1 as it was when a withdrawal with no call
	// under way succeeded; 0 when none did.
	withdrawnAt atomic.Uint32
}

// withdrawnForGood reports whether a withdrawal succeeded after the last
// call that may have registered the elector, so that deregistering again
// would remove nothing.
func (r *regCalls) withdrawnForGood() bool {
	w := r.withdrawnAt.Load()
	return w != 0 && w-1 == r.begun.Load()
}

// notLeading is the Token of an elector that has not led yet: cancelled,
// with ErrNotLeader as its cause. Every such elector shares it.
var notLeading = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrNotLeader)
	return ctx
}()

// neverLed is the state of an elector that has not led yet; shared, and
// never written (a state is replaced, never changed: see publish and
// WaitForLeadership).
var neverLed = &termState{token: notLeading}

// noObservation is what an elector has learned of who leads before it
// learned anything; shared, and never written.
var noObservation = &observation{}

// loopProgress is the loop's latest promise: it acts again by at+wait.
type loopProgress struct {
	at   time.Time
	wait time.Duration
}

// observation is what the elector learned about who leads (P2).
type observation struct {
	identity string
	until    time.Time // the learned lease runs out then
}

// request is a call from Stop or Resign to the loop. The loop closes
// ended once the term has ended (no I/O happens before), then sends the
// outcome of the release on reply.
// lifeRequest is Start or Stop, as a message to the loop.
type lifeRequest struct {
	ctx   context.Context
	reply chan lifeReply // buffered
}

// lifeReply answers a lifeRequest. For Stop: idle when the elector never
// started (it is now stopped, nothing to do), first for the Stop that
// stops a running elector; any other Stop waits for the first (done).
type lifeReply struct {
	err   error
	idle  bool
	first bool
	done  chan struct{} // Stop, not idle: closed once the first Stop returned
}

type request struct {
	stop   bool   // Stop; else Resign
	target string // the participant the release hands the role to (B1), "" for any
	ctx    context.Context
	ended  chan struct{}
	reply  chan error // buffered: the loop never blocks on a caller that gave up
}

var _ Leadership = (*Elector)(nil)

// NewElector returns an elector for role over lock; Start starts it. It
// validates opts and the resolved key against the lock's MaxKeyLength (T1,
// T3, K4, K5, G4) and returns an error naming the field and the value. A
// lease longer than the lock's MaxLease is capped at MaxLease (T2), logged
// once at Warn when the elector starts; the renewal interval is then capped
// at half the capped lease. Use CheckLease or CheckComposition to refuse
// such a lease instead.
func NewElector(role string, lock locking.Lock, opts Options, o ...Option) (*Elector, error) {
	if lock == nil {
		return nil, fmt.Errorf("leadership: role %q: nil lock", role)
	}
	opts = opts.withDefaults() // L10: zero fields are defaults
	s := newSettings(o)
	caps := s.caps
	if caps == nil {
		c := resolveCapabilities(lock)
		caps = &c
	}
	if err := opts.ValidateFor(role, caps.maxKeyLength); err != nil {
		return nil, err
	}
	key, err := opts.ResolveLockKey(role, caps.maxKeyLength)
	if err != nil {
		return nil, err
	}
	coordinated, err := lockCoordinated(lock)
	if err != nil {
		return nil, fmt.Errorf("leadership: role %q: %w", role, err)
	}
	if s.identity == "" {
		s.identity = locking.DefaultOwner()
	}
	if err := checkIdentity(s.identity); err != nil {
		return nil, fmt.Errorf("leadership: role %q: %w", role, err)
	}
	if opts.Balance && s.balance == nil {
		return nil, fmt.Errorf("leadership: role %q: balance needs a balance group: pass WithBalanceGroup (leadershipfx does)", role)
	}
	e := &Elector{
		role:        role,
		key:         key,
		lock:        lock,
		caps:        caps,
		coordinated: coordinated,
		opts:        opts,
		askedLease:  opts.Lease,
		identity:    s.identity,
		procGate:    s.gates,
	}
	if opts.Balance {
		e.group = s.balance
	}
	if caps.maxLease > 0 && opts.Lease > caps.maxLease {
		e.capped = true
		e.opts.Lease = caps.maxLease
		e.opts.RenewInterval = max(min(opts.RenewInterval, caps.maxLease/2), time.Nanosecond)
	}
	e.margin = e.opts.EffectiveSafetyMargin()
	if e.margin >= e.opts.RenewInterval {
		// Only a lease capped by the lock gets here (Validate checked the
		// options as given): keep the default rule for the capped values.
		e.margin = Options{Lease: e.opts.Lease, RenewInterval: e.opts.RenewInterval}.EffectiveSafetyMargin()
	}
	e.log = s.logger
	if s.loggerSet {
		// The default no-op logger drops the fields anyway; With would
		// only copy it.
		e.log = s.logger.With(zap.String("role", role), zap.String("lock_key", key), zap.String("identity", e.identity))
	}
	e.notes.log = e.log
	e.notes.queue.handle = e.notes.deliver
	if s.gates != nil {
		e.notes.queue.spawn = s.gates.notices.spawn
	}
	if e.tel, err = newElectorTelemetry(s, role, key, e.identity); err != nil {
		return nil, fmt.Errorf("leadership: role %q: telemetry: %w", role, err)
	}
	e.state.Store(neverLed)
	e.observed.Store(noObservation)
	e.tel.leader(false, 0)
	e.loop = newLoop(e, s.clock, s.gates)
	return e, nil
}

// heldBack reports whether this elector's balance group leads at least its
// share, so it takes a free role only after one RetryInterval (B1).
func (e *Elector) heldBack() bool { return e.group != nil && e.group.held() }

// maxIdentityLength is the longest identity an elector accepts, in bytes.
const maxIdentityLength = 256

// checkIdentity rejects identities that cannot be stored and shown safely.
func checkIdentity(id string) error {
	if len(id) > maxIdentityLength {
		return fmt.Errorf("identity of %d bytes exceeds %d bytes", len(id), maxIdentityLength)
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("identity %q has a control character", id)
		}
	}
	return nil
}

// lockCoordinated asks the lock once, turning a panic into an error.
func lockCoordinated(lock locking.Lock) (c bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("lock Coordinated panicked: %v", r)
		}
	}()
	return lock.Coordinated(), nil
}

// Role implements Leadership.
func (e *Elector) Role() string { return e.role }

// LockKey is the consumer key (before namespacing), captured at
// construction (K6).
func (e *Elector) LockKey() string { return e.key }

// Identity is the identity this elector stores with its lease.
func (e *Elector) Identity() string { return e.identity }

// Lease is the effective lease: Options.Lease capped by the lock (T2), as
// Describe reports it. A term that is not renewed ends within one lease of
// its latest renewal.
func (e *Elector) Lease() time.Duration { return e.opts.Lease }

// retryInterval is the candidate cadence (a BalanceGroup rounds at its
// members' shortest).
func (e *Elector) retryInterval() time.Duration { return e.opts.RetryInterval }

// IsLeader implements Leadership. It reads one atomic pointer and the
// monotonic clock: at and after the term's local deadline it reports false
// even before the loop has noticed (G3). It does not allocate.
func (e *Elector) IsLeader() bool { return e.state.Load().live(time.Now()) }

// IsCoordinated implements Leadership: false over a lock that does not
// coordinate (E9).
func (e *Elector) IsCoordinated() bool { return e.coordinated }

// Term implements Leadership: this instance's acquisitions so far. It is
// not a fencing token; see Fence.
func (e *Elector) Term() uint64 { return e.state.Load().term }

// Fence returns the current term's fencing token (G2): 0 when this
// instance does not lead, or when the lock issues no fences.
func (e *Elector) Fence() uint64 {
	if s := e.state.Load(); s.live(time.Now()) {
		return s.fence
	}
	return 0
}

// Token implements Leadership. The context of a term is cancelled no later
// than the local lease deadline, also while a lock call hangs, and its Err
// checks the deadline when called (G3). Assert and FenceFrom work on it and
// on every context derived from it.
func (e *Elector) Token() context.Context { return e.state.Load().token }

// WaitForLeadership implements Leadership: it returns nil at the next
// acquisition (at once when leading) or ctx's error.
func (e *Elector) WaitForLeadership(ctx context.Context) error {
	var led chan struct{}
	for led == nil {
		s := e.state.Load()
		if s.live(time.Now()) {
			return nil
		}
		led = s.led
		if led == nil {
			// The first waiter of this state makes the channel the next
			// acquisition closes (see termState.led).
			w := *s
			w.led = make(chan struct{})
			if e.state.CompareAndSwap(s, &w) {
				led = w.led
			}
		}
	}
	select {
	case <-led:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// OnChange implements Leadership. Subscribers are called in transition
// order, one at a time, on the elector's delivery goroutine. A slow
// subscriber delays the notifications after it (they queue, one Change per
// transition) but never the election; a panicking subscriber is logged and
// the others still run. The electors of a Process deliver on at most 256
// goroutines between them, so a subscriber that blocks delays the other
// roles' notifications only once 256 block at once.
func (e *Elector) OnChange(fn func(Change)) (unsubscribe func()) {
	if fn == nil {
		return func() {}
	}
	return subscribe(&e.notes, &e.notes.changes, fn)
}

// OnNewLeader calls fn with the leader's identity each time the identity
// this instance observes changes (P2): on every instance, leader and
// candidates alike, and with this instance's own identity when it becomes
// leader; never with "". Calls are made in order on the same delivery
// goroutine as OnChange. The returned function unsubscribes. The same
// change is logged at Info on every instance, subscribed or not, as
// LeadershipNewLeader (fields leader, previous, self; term and fence on
// the leader itself).
func (e *Elector) OnNewLeader(fn func(identity string)) (unsubscribe func()) {
	if fn == nil {
		return func() {}
	}
	return subscribe(&e.notes, &e.notes.leaders, fn)
}

// Leader reports the leader's identity as this instance learned it, without
// I/O (P2): from its own term, from refused acquisitions and from the
// lock's acquisition notifications. ok is false when no lease is known to
// run now. LookupLeader asks the backend instead.
func (e *Elector) Leader() (identity string, ok bool) {
	o := e.observed.Load()
	if o.identity == "" || !time.Now().Before(o.until) {
		return "", false
	}
	return o.identity, true
}

// learnedLeader is Leader for counting leads (B1): the identity this
// instance last learned, also up to one lease after the expiry it learned,
// since a candidate learns the renewed expiry only when it next tries.
func (e *Elector) learnedLeader() (string, bool) {
	o := e.observed.Load()
	if o.identity == "" || !time.Now().Before(o.until.Add(e.opts.Lease)) {
		return "", false
	}
	return o.identity, true
}

// LookupLeader asks the lock who holds the role's lease and its remaining
// time to live, in one round trip (L7). ok is false when nobody holds it.
// It returns an error matching locking.ErrNotSupported when the lock
// cannot look holders up.
func (e *Elector) LookupLeader(ctx context.Context) (h locking.Holder, ok bool, err error) {
	if e.caps.holders == nil {
		return locking.Holder{}, false, fmt.Errorf("leadership: role %q: holder lookup: %w", e.role, locking.ErrNotSupported)
	}
	defer func() {
		if r := recover(); r != nil {
			h, ok, err = locking.Holder{}, false, fmt.Errorf("leadership: role %q: holder lookup panicked: %v", e.role, r)
		}
	}()
	h, ok, err = e.caps.holders.Holder(ctx, e.key)
	if err != nil {
		return locking.Holder{}, false, fmt.Errorf("leadership: role %q: holder lookup: %w", e.role, err)
	}
	return h, ok, nil
}

// Start starts the election loop; its first attempt is immediate (E1).
// ctx bounds starting only: the loop runs until Stop. Start fails when ctx
// is already done, when the elector runs already, and after Stop.
func (e *Elector) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("leadership: start role %q: %w", e.role, err)
	}
	reply := make(chan lifeReply, 1)
	e.loop.post(message{kind: msgStart, life: &lifeRequest{ctx: ctx, reply: reply}})
	return (<-reply).err
}

// Stop ends the election: it cancels the current Token first, ends the
// loop, then releases the lease (E8, E11) so a waiting candidate takes over
// at once, and deregisters this participant (P1). On return IsLeader is
// false and Token is done. It is idempotent, safe before Start and
// concurrently; a concurrent call waits for the first. ctx bounds the wait
// for lock calls under way, the release and the delivery of queued
// notifications; when it ends first Stop returns its error (an unreleased
// lease then expires on its own).
func (e *Elector) Stop(ctx context.Context) error {
	s := e.beginStop(ctx)
	s.request()
	return s.await()
}

// stopCall is one Stop in three steps, so that StopAll can stop many
// electors from one goroutine: beginStop posts Stop's first message,
// request takes its reply and sends the stop request (no I/O is waited
// for), await waits for the release and the notifications.
type stopCall struct {
	e     *Elector
	ctx   context.Context
	reply chan lifeReply
	life  lifeRequest   // Stop's first message
	req   request       // the stop request, once sent
	idle  bool          // the elector never started: it is stopped, nothing to wait for
	other bool          // another Stop is the first: await waits for it
	done  chan struct{} // closed by the first Stop once it returns (stopping.done)
}

// beginStop posts Stop's first message.
func (e *Elector) beginStop(ctx context.Context) *stopCall {
	s := &stopCall{e: e, ctx: ctx, reply: make(chan lifeReply, 1)}
	s.life = lifeRequest{ctx: ctx, reply: s.reply}
	m := message{kind: msgStop, life: &s.life}
	if e.group == nil {
		// No successor to name: the stop request rides on the first
		// message, and the first Stop's release goes out one hand-off
		// sooner.
		s.req = request{stop: true, ctx: ctx, ended: make(chan struct{}), reply: make(chan error, 1)}
		m.req = &s.req
	}
	e.loop.post(m)
	return s
}

// request takes the reply to Stop's first message and, for the first
// Stop of a balancing elector, names the successor and sends the stop
// request.
func (s *stopCall) request() {
	e := s.e
	r := <-s.reply
	switch {
	case r.idle:
		s.idle = true
		return
	case !r.first:
		s.other, s.done = true, r.done
		return
	}
	s.done = r.done
	if e.group != nil {
		var target string
		if e.IsLeader() {
			target = e.group.successor(e)
		}
		e.group.leave(e)
		s.req = request{stop: true, target: target, ctx: s.ctx, ended: make(chan struct{}), reply: make(chan error, 1)}
		e.loop.post(message{kind: msgRequest, req: &s.req})
	}
}

// await waits for the Stop request's outcome and the delivery of the
// notifications queued, bounded by the Stop's context.
func (s *stopCall) await() error {
	e, ctx := s.e, s.ctx
	switch {
	case s.idle:
		return nil
	case s.other:
		select {
		case <-s.done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("leadership: stop role %q: %w", e.role, ctx.Err())
		}
	}
	<-s.req.ended // the machine ends the term before any I/O
	var err error
	select {
	case err = <-s.req.reply:
	case <-ctx.Done():
		err = fmt.Errorf("leadership: stop role %q: waiting for lock calls: %w", e.role, ctx.Err())
	}
	select {
	case <-e.notes.idle():
	case <-ctx.Done():
		err = errors.Join(err, fmt.Errorf("leadership: stop role %q: waiting for subscribers: %w", e.role, ctx.Err()))
	}
	close(s.done)
	return err
}

// Resign steps down when this instance leads: it cancels Token, releases
// the lease, and sits out one RetryInterval before contending again, so
// another instance gets the first chance (E8). On return IsLeader is false
// and Token is done. It does nothing when the instance does not lead, and
// is safe before Start, after Stop and concurrently. ctx bounds the
// release.
func (e *Elector) Resign(ctx context.Context) error {
	return e.resign(ctx, "")
}

// ErrNotParticipant is HandOver's error for an identity that is not a
// live participant of the role.
var ErrNotParticipant = errors.New("not a participant")

// HandOver steps down handing the role to identity, a live participant
// of it (H4): it ends the term as Resign does (Token first) and releases
// the lease naming identity as the successor, which takes the role at
// once; the other candidates hold back one RetryInterval, then any may
// take it; this instance sits out two RetryIntervals (the others'
// hold-back, then one as after Resign), so should the successor not take
// the role, another candidate gets the first chance. It reads the role's
// participants first (one round trip): an identity that is not one of
// them, or is this instance's own, is an error matching
// ErrNotParticipant that lists them. Over a lock with a
// locking.ParticipantProbe (etcd), a cheaper check that finds identity
// among them (the leader's own latest read of them, at most a lease old,
// or a member's copy) replaces that read; one that does not is confirmed
// by it. It fails with ErrNotLeader when this instance does not lead, and with locking.ErrNotSupported when the
// lock keeps no participants. ctx bounds the read and the release.
func (e *Elector) HandOver(ctx context.Context, identity string) error {
	if !e.IsLeader() {
		return fmt.Errorf("leadership: hand over role %q to %q: %w", e.role, identity, ErrNotLeader)
	}
	if identity != e.identity && e.caps.probe != nil {
		if ok, err := e.caps.probe.IsParticipant(ctx, e.key, identity); err == nil && ok {
			return e.handOver(ctx, identity)
		}
		// Not found in the nearest copy, or not read: the full read
		// decides, and names the participants.
	}
	ps, err := e.Participants(ctx)
	if err != nil {
		return fmt.Errorf("leadership: hand over role %q to %q: %w", e.role, identity, err)
	}
	names := make([]string, 0, len(ps))
	found := false
	for _, p := range ps {
		names = append(names, strconv.Quote(p.Identity))
		found = found || p.Identity == identity
	}
	if !found || identity == e.identity {
		what := ErrNotParticipant.Error()
		if identity == e.identity {
			what = "the leader itself"
		}
		return fmt.Errorf("leadership: hand over role %q to %q: %s (participants: %s): %w",
			e.role, identity, what, strings.Join(names, ", "), ErrNotParticipant)
	}
	return e.handOver(ctx, identity)
}

// handOver is HandOver once identity is known to be a participant.
func (e *Elector) handOver(ctx context.Context, identity string) error {
	if err := e.resign(ctx, identity); err != nil {
		return fmt.Errorf("leadership: hand over role %q to %q: %w", e.role, identity, err)
	}
	return nil
}

// resign is Resign naming the participant the release hands the role to
// (B1); "" for any.
func (e *Elector) resign(ctx context.Context, target string) error {
	if !e.state.Load().leader { // also before Start and after Stop
		return nil
	}
	req := &request{ctx: ctx, target: target, ended: make(chan struct{}), reply: make(chan error, 1)}
	e.loop.post(message{kind: msgRequest, req: req})
	<-req.ended // the machine ends the term before any I/O
	select {
	case err := <-req.reply:
		return err
	case <-ctx.Done():
		return fmt.Errorf("leadership: resign role %q: %w", e.role, ctx.Err())
	}
}

// Run starts the elector, leads whenever it wins while ctx lives, and stops
// when ctx ends, releasing the lease so a successor takes over at once
// (G7). It returns the start error if the elector never started, nil after
// a clean handover, and the release's error if the release failed. The
// release is bounded by one Lease.
func (e *Elector) Run(ctx context.Context) error {
	if err := e.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.Lease)
	defer cancel()
	return e.Stop(stopCtx)
}

// Participants lists the role's live participants, in one round trip
// (P1): every running elector of the role, leader and candidates, with the
// time it registered. Leader marks the holder of the lease the lock read
// in the same round trip (redislock, memlock); over a lock that cannot
// tell, the identity this instance learned leads (see Leader). It returns an error matching locking.ErrNotSupported
// when the lock keeps no participants.
func (e *Elector) Participants(ctx context.Context) (ps []Participant, err error) {
	if e.caps.participants == nil {
		return nil, fmt.Errorf("leadership: role %q: participants: %w", e.role, locking.ErrNotSupported)
	}
	defer func() {
		if r := recover(); r != nil {
			ps, err = nil, fmt.Errorf("leadership: role %q: participants lookup panicked: %v", e.role, r)
		}
	}()
	list, err := e.caps.participants.Participants(ctx, e.key)
	if err != nil {
		return nil, fmt.Errorf("leadership: role %q: participants: %w", e.role, err)
	}
	// The lock marks the holder it read in the same step; a lock that
	// cannot leaves that to what this instance learned (no second round
	// trip).
	marked := slices.ContainsFunc(list, func(p locking.Participant) bool { return p.Leader })
	leader, _ := e.Leader()
	e.tel.participants(len(list))
	ps = make([]Participant, 0, len(list))
	for _, p := range list {
		ps = append(ps, Participant{Identity: p.Owner, Leader: p.Leader || (!marked && p.Owner == leader), Since: p.Since, Priority: p.Priority})
	}
	return ps, nil
}

// Participant is one live contender of a role (P1).
type Participant struct {
	// Identity is the participant's identity (WithIdentity).
	Identity string
	// Leader reports whether it holds the role's lease.
	Leader bool
	// Since is when it registered: its Start.
	Since time.Time
	// Priority is the priority it registered with (B2).
	Priority int
}
