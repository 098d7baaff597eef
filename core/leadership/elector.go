package leadership

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/locking"
)

// wakeMargin is added to a holder's remaining lease before the next
// attempt, so the attempt lands just after the lease ran out (E1).
const wakeMargin = 2 * time.Millisecond

// Elector lifecycle phases.
const (
	phaseIdle = iota
	phaseRunning
	phaseStopping
	phaseStopped
)

// Elector elects this instance leader of one role over a locking.Lock. It
// implements Leadership and adds Start, Stop, Resign, LockKey, Leader and
// Check. It is safe for concurrent use; IsLeader, Term and Token read one
// atomic pointer and never allocate.
//
// One loop goroutine per elector, started by Start and ended by Stop, does
// every acquisition and renewal, one step at a time; each step runs on a
// short-lived goroutine the loop waits for, so the loop's own stack stays
// at its minimum while it waits between steps. OnChange subscribers are called on a
// separate delivery goroutine, so a slow subscriber delays later
// notifications but never the election.
type Elector struct {
	role        string
	key         string
	providerKey string
	lockType    string
	lock        locking.Lock
	coordinated bool
	opts        Options // effective options (lease capped by the lock)
	asked       Options // options as given (copied: K6)
	capped      bool
	identity    string
	log         *zap.Logger
	tel         *electorTelemetry

	state    atomic.Pointer[termState]
	progress atomic.Pointer[loopProgress]

	mu          sync.Mutex
	phase       int
	epoch       uint64 // bumped when a term ends or Stop begins; stale loop results are dropped
	lease       locking.Lease
	orphan      locking.Lease // acquired while stopping; Stop releases it
	cancelTerm  context.CancelFunc
	expiry      *time.Timer
	sitOutUntil time.Time
	loopCancel  context.CancelFunc
	opCancel    context.CancelFunc
	wake        chan struct{}
	loopDone    chan struct{}
	stopDone    chan struct{}
	stopErr     error
	subs        []*subscriber
	queue       []Change
	delivering  chan struct{} // non-nil while the delivery goroutine runs; closed when it ends
}

// termState is an immutable snapshot of this instance's leadership.
type termState struct {
	leader   bool
	term     uint64
	token    context.Context
	led      chan struct{} // follower: closed at the next acquisition
	deadline time.Time     // leader: local lease deadline (monotonic)
}

// loopProgress is the loop's latest promise: it acts again by at+wait.
type loopProgress struct {
	at   time.Time
	wait time.Duration
}

type subscriber struct{ fn func(Change) }

var _ Leadership = (*Elector)(nil)

// NewElector returns an elector for role over lock; Start starts it. It
// validates opts and the resolved key against the lock's MaxKeyLength (T1,
// T3, K4, K5) and returns an error naming the field and the value. A lease
// longer than the lock's MaxLease is capped at MaxLease (T2), logged once
// at Warn; the renewal interval is then capped at half the capped lease.
// Use CheckLease or CheckComposition to refuse such a lease instead.
func NewElector(role string, lock locking.Lock, opts Options, o ...Option) (*Elector, error) {
	if lock == nil {
		return nil, fmt.Errorf("leadership: role %q: nil lock", role)
	}
	key, err := resolveForLock(role, lock, opts)
	if err != nil {
		return nil, err
	}
	coordinated, err := electorCoordinated(lock)
	if err != nil {
		return nil, fmt.Errorf("leadership: role %q: %w", role, err)
	}
	s := newSettings(o)
	if s.identity == "" {
		s.identity = locking.DefaultOwner()
	}
	e := &Elector{
		role:        role,
		key:         key,
		providerKey: key,
		lockType:    fmt.Sprintf("%T", lock),
		lock:        lock,
		coordinated: coordinated,
		opts:        opts,
		asked:       opts,
		identity:    s.identity,
		wake:        make(chan struct{}, 1),
		stopDone:    make(chan struct{}),
	}
	if pk, ok := lock.(interface {
		ProviderKey(string) (string, error)
	}); ok {
		if k, err := pk.ProviderKey(key); err == nil {
			e.providerKey = k
		}
	}
	if maxLease := electorMaxLease(lock); maxLease > 0 && opts.Lease > maxLease {
		e.capped = true
		e.opts.Lease = maxLease
		e.opts.RenewInterval = max(min(opts.RenewInterval, maxLease/2), time.Nanosecond)
	}
	e.log = s.logger
	if s.loggerSet {
		// The default no-op logger drops the fields anyway; With would
		// only copy it.
		e.log = s.logger.With(zap.String("role", role), zap.String("lock_key", key), zap.String("identity", e.identity))
	}
	e.tel = newElectorTelemetry(s, role, key)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	e.state.Store(&termState{token: done, led: make(chan struct{})})
	e.tel.leader(false)
	if e.capped {
		e.log.Warn("LeadershipLeaseCapped",
			zap.Duration("lease", opts.Lease), zap.Duration("max_lease", e.opts.Lease),
			zap.Duration("renew_interval", e.opts.RenewInterval))
	}
	return e, nil
}

// resolveForLock validates opts for role against lock's key length limit.
func resolveForLock(role string, lock locking.Lock, opts Options) (string, error) {
	if err := opts.ValidateFor(role, electorMaxKeyLength(lock)); err != nil {
		return "", err
	}
	return opts.ResolveLockKey(role, electorMaxKeyLength(lock))
}

// electorCoordinated asks the lock once, turning a panic into an error.
func electorCoordinated(lock locking.Lock) (c bool, err error) {
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

// IsLeader implements Leadership. It reads one atomic pointer.
func (e *Elector) IsLeader() bool { return e.state.Load().leader }

// IsCoordinated implements Leadership: false over a lock that does not
// coordinate (E9).
func (e *Elector) IsCoordinated() bool { return e.coordinated }

// Term implements Leadership: this instance's acquisitions so far.
func (e *Elector) Term() uint64 { return e.state.Load().term }

// Token implements Leadership. The context of a term is cancelled no later
// than the local lease deadline, also while a lock call hangs.
func (e *Elector) Token() context.Context { return e.state.Load().token }

// WaitForLeadership implements Leadership: it returns nil at the next
// acquisition (at once when leading) or ctx's error.
func (e *Elector) WaitForLeadership(ctx context.Context) error {
	s := e.state.Load()
	if s.leader {
		return nil
	}
	select {
	case <-s.led:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// OnChange implements Leadership. Subscribers are called in transition
// order, one at a time, on the elector's delivery goroutine, never while
// the elector holds its lock. A slow subscriber delays the notifications
// after it (they queue, one Change per transition) but never the election;
// a panicking subscriber is logged and the others still run.
func (e *Elector) OnChange(fn func(Change)) (unsubscribe func()) {
	if fn == nil {
		return func() {}
	}
	sub := &subscriber{fn: fn}
	e.mu.Lock()
	e.subs = append(e.subs, sub)
	e.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			for i, s := range e.subs {
				if s == sub {
					e.subs = append(e.subs[:i:i], e.subs[i+1:]...)
					return
				}
			}
		})
	}
}

// Start starts the election loop; its first attempt is immediate (E1).
// ctx bounds starting only: the loop runs until Stop. Start fails when ctx
// is already done, when the elector runs already, and after Stop.
func (e *Elector) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("leadership: start role %q: %w", e.role, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch e.phase {
	case phaseRunning:
		return fmt.Errorf("leadership: start role %q: already started", e.role)
	case phaseStopping, phaseStopped:
		return fmt.Errorf("leadership: start role %q: elector stopped", e.role)
	}
	e.phase = phaseRunning
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.loopCancel = cancel
	e.loopDone = make(chan struct{})
	if !e.coordinated {
		e.log.Warn("LeadershipUncoordinated", zap.Stringer("when_uncoordinated", e.opts.WhenUncoordinated))
	}
	e.setProgress(time.Now(), 0)
	go e.run(loopCtx, e.loopDone)
	return nil
}

// Stop ends the election: it cancels the current Token first, ends the
// loop, then releases the lease (E8, E11) so a waiting candidate takes over
// at once. On return IsLeader is false and Token is done. It is
// idempotent, safe before Start and concurrently; a concurrent call waits
// for the first. ctx bounds the wait for the loop, the release and the
// delivery of queued OnChange notifications; when it ends first Stop
// returns its error (an unreleased lease then expires on its own).
func (e *Elector) Stop(ctx context.Context) error {
	e.mu.Lock()
	switch e.phase {
	case phaseIdle:
		e.phase = phaseStopped
		close(e.stopDone)
		e.mu.Unlock()
		return nil
	case phaseStopping, phaseStopped:
		done := e.stopDone
		e.mu.Unlock()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("leadership: stop role %q: %w", e.role, ctx.Err())
		}
	}
	e.phase = phaseStopping
	held, term := e.endTerm(Released)
	e.epoch++
	if e.opCancel != nil {
		e.opCancel()
	}
	e.loopCancel()
	loopDone := e.loopDone
	e.mu.Unlock()
	if held != nil {
		e.log.Info("LeadershipReleased", zap.Uint64("term", term))
	}

	var errs []error
	select {
	case <-loopDone:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("leadership: stop role %q: waiting for the loop: %w", e.role, ctx.Err()))
	}
	e.mu.Lock()
	orphan := e.orphan
	e.orphan = nil
	e.mu.Unlock()
	for _, l := range []locking.Lease{held, orphan} {
		if l != nil {
			if err := e.release(ctx, l); err != nil {
				errs = append(errs, err)
			}
		}
	}
	e.mu.Lock()
	delivering := e.delivering
	e.mu.Unlock()
	if delivering != nil {
		select {
		case <-delivering:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("leadership: stop role %q: waiting for OnChange subscribers: %w", e.role, ctx.Err()))
		}
	}
	err := errors.Join(errs...)
	e.mu.Lock()
	e.phase = phaseStopped
	e.stopErr = err
	close(e.stopDone)
	e.mu.Unlock()
	return err
}

// Resign steps down when this instance leads: it cancels Token, releases
// the lease, and sits out one RetryInterval before contending again, so
// another instance gets the first chance (E8). On return IsLeader is false
// and Token is done. It does nothing when the instance does not lead, and
// is safe before Start, after Stop and concurrently. ctx bounds the release.
func (e *Elector) Resign(ctx context.Context) error {
	e.mu.Lock()
	if e.phase != phaseRunning || !e.state.Load().leader {
		e.mu.Unlock()
		return nil
	}
	held, term := e.endTerm(Resigned)
	e.sitOutUntil = time.Now().Add(e.opts.RetryInterval)
	e.kick()
	e.mu.Unlock()
	e.log.Info("LeadershipResigned", zap.Uint64("term", term))
	err := e.release(ctx, held)
	e.mu.Lock()
	e.sitOutUntil = time.Now().Add(e.opts.RetryInterval)
	e.mu.Unlock()
	return err
}

// release gives l up, bounded by ctx, inside a span; a panic from the lock
// becomes an error.
func (e *Elector) release(ctx context.Context, l locking.Lease) (err error) {
	ctx, sp := e.tel.span(ctx, SpanRelease)
	outcome := outcomeOK
	defer func() {
		if r := recover(); r != nil {
			outcome = outcomeFault
			err = fmt.Errorf("leadership: release role %q: lock panicked: %v", e.role, r)
			e.log.Error("LeadershipLoopFaulted", zap.String("op", "release"), zap.Any("panic", r))
		}
		endSpan(sp, outcome, err)
	}()
	if err := l.Release(ctx); err != nil {
		outcome = outcomeError
		if errors.Is(err, locking.ErrLeaseLost) {
			outcome = outcomeRefused
		}
		e.log.Warn("LeadershipReleaseFailed", zap.Error(err))
		return fmt.Errorf("leadership: release role %q: %w", e.role, err)
	}
	return nil
}

// endTerm ends the current term with reason, if any: Token is cancelled,
// the state becomes follower, the expiry timer stops, the in-flight lock
// call is cancelled and the Change is queued. Callers outside the loop
// wake it with kick. It returns the lease the term held (nil when not leading). e.mu is held.
func (e *Elector) endTerm(reason Reason) (locking.Lease, uint64) {
	s := e.state.Load()
	if !s.leader {
		return nil, s.term
	}
	e.cancelTerm()
	e.cancelTerm = nil
	if e.expiry != nil {
		e.expiry.Stop()
		e.expiry = nil
	}
	e.state.Store(&termState{term: s.term, token: s.token, led: make(chan struct{})})
	e.epoch++
	if e.opCancel != nil {
		e.opCancel()
	}
	held := e.lease
	e.lease = nil
	e.tel.leader(false)
	e.tel.transition(reason)
	e.enqueue(Change{Role: e.role, IsLeader: false, Term: s.term, Reason: reason, At: time.Now()})
	return held, s.term
}

// beginTerm makes this instance leader with l until deadline. e.mu is held.
func (e *Elector) beginTerm(l locking.Lease, deadline time.Time) uint64 {
	old := e.state.Load()
	token, cancel := context.WithCancel(context.Background())
	e.cancelTerm = cancel
	e.lease = l
	term := old.term + 1
	e.state.Store(&termState{leader: true, term: term, token: token, deadline: deadline})
	close(old.led)
	epoch := e.epoch
	e.expiry = time.AfterFunc(time.Until(deadline), func() { e.expire(epoch) })
	e.tel.leader(true)
	e.tel.transition(Acquired)
	e.enqueue(Change{Role: e.role, IsLeader: true, Term: term, Reason: Acquired, At: time.Now()})
	return term
}

// expire ends the term of epoch when its deadline has passed (E5). It runs
// on the expiry timer, so Token is cancelled at the deadline even while the
// loop waits on a hanging lock call.
func (e *Elector) expire(epoch uint64) {
	e.mu.Lock()
	s := e.state.Load()
	if e.epoch != epoch || !s.leader || time.Now().Before(s.deadline) {
		e.mu.Unlock()
		return
	}
	_, term := e.endTerm(Expired)
	e.kick()
	e.mu.Unlock()
	e.log.Warn("LeadershipLost", zap.Stringer("reason", Expired), zap.Uint64("term", term))
}

// kick wakes the loop without blocking. e.mu may be held.
func (e *Elector) kick() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// enqueue queues c for the subscribers and starts the delivery goroutine
// when none runs. e.mu is held.
func (e *Elector) enqueue(c Change) {
	e.queue = append(e.queue, c)
	if e.delivering == nil {
		done := make(chan struct{})
		e.delivering = done
		go e.deliver(done)
	}
}

// deliver calls the subscribers for each queued Change, in order, then
// ends when the queue is empty.
func (e *Elector) deliver(done chan struct{}) {
	defer close(done)
	for {
		e.mu.Lock()
		if len(e.queue) == 0 {
			e.queue = nil // do not keep the drained backing array
			e.delivering = nil
			e.mu.Unlock()
			return
		}
		c := e.queue[0]
		e.queue[0] = Change{}
		e.queue = e.queue[1:]
		subs := append([]*subscriber(nil), e.subs...)
		e.mu.Unlock()
		for _, s := range subs {
			e.call(s.fn, c)
		}
	}
}

// call runs one subscriber, surviving its panic.
func (e *Elector) call(fn func(Change), c Change) {
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("LeadershipSubscriberPanicked", zap.Any("panic", r), zap.Uint64("term", c.Term))
		}
	}()
	fn(c)
}

func (e *Elector) setProgress(at time.Time, wait time.Duration) {
	e.progress.Store(&loopProgress{at: at, wait: wait})
}
