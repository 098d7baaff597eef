package scheduling

import (
	"cmp"
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

var (
	// ErrStopped is returned by Start and Add after Stop.
	ErrStopped = errors.New("scheduling: scheduler stopped")
	// ErrStarted is returned by a second Start.
	ErrStarted = errors.New("scheduling: scheduler already started")
)

// maxScan bounds how many slots of a cron schedule are walked to count
// missed slots or find the latest due one; Every schedules are counted
// arithmetically, without a bound.
const maxScan = 10_000

// slotKeyPrefix starts every slot store key: sched:{role}:{job}.
const slotKeyPrefix = "sched:"

// Scheduler runs jobs while a Leadership leads. It owns one goroutine (its
// loop, between Start and Stop) plus one per running job. Its methods are
// safe for concurrent use.
//
// Job state has one owner at a time (STYLE rule 10): before Start, the API
// callers, one at a time under life; from Start until the loop returned,
// the loop, which API callers and run chains reach with requests (s.asks,
// s.posts; a reply where they need one); after the loop returned, the API callers
// again. Run chains never touch job state: they post their progress and
// outcome to the loop.
type Scheduler struct {
	l      leadership.Leadership
	role   string
	set    settings
	log    *zap.Logger
	tracer trace.Tracer
	ins    instruments
	maxKey int
	js     slotstore.Jobs // the slot store's job records; nil without
	id     string         // identity recorded in run records
	inst   string         // random per scheduler: tells terms of equal identities apart
	hold   time.Duration  // WithRecoveryHold

	wake       chan struct{} // pokes the loop (leadership change, Add)
	asks       chan func()   // API callers' requests to the loop; unbuffered: taken only by a live loop
	posts      chan func()   // run chains' posts to the loop, in order
	quit       chan struct{} // closed by Stop
	done       chan struct{} // closed when the loop and every run returned after Stop
	runs       context.Context
	cancelRuns context.CancelFunc

	// life orders the API callers' lifecycle calls (Start, Stop, Add and
	// the requests of the others); the loop and the run chains never take
	// it.
	life        sync.Mutex
	state       int // stateNew, stateStarted, stateStopped
	unsubscribe func()
	reg         metric.Registration

	// Job state, owned as described above.
	jobs     map[string]*job
	order    []*job
	queue    queue
	term     uint64 // the term the loop last acted in
	leading  bool
	chains   int     // run chains going
	stopping bool    // the loop saw quit: it only serves requests until chains is 0
	starts   []start // runs launched by the current tick
}

const (
	stateNew = iota
	stateStarted
	stateStopped
)

// job is a Job with its scheduling state, owned by the owner of job state
// (see Scheduler) except for the immutable fields and badRecord.
type job struct {
	Job
	sched Schedule // bound to the scheduler's location
	spec  string   // ScheduleSpec(sched), kept in every run record
	key   string   // slot store key
	attrs *jobAttrs

	ttl time.Duration // time to live of the job's records in the store

	next     time.Time               // next slot to act on; zero when none
	index    int                     // in the queue; -1 when not queued
	running  bool                    // a run chain (execute) is going
	term     uint64                  // term of the latest launched run
	launched time.Time               // slot of the latest launched run
	pend     *pending                // slot to run when the chain's current run ends (S7)
	cancel   context.CancelCauseFunc // ends the chain's current segment (S7); nil when not running
	replaced bool                    // the current segment was cancelled by OverlapCancelPrevious
	paused   bool                    // as last seen (JobInfo.Paused)

	badRecord atomic.Bool // an unparsable history record was logged

	lastSlot, lastRun, lastSuccess time.Time
	lastOutcome                    Outcome
	lastErr                        error
}

// selfReporter is what a Leadership may report about itself for the
// scheduler's defaults: the identity recorded in run records
// (WithIdentity) and the lease bounding a term (WithRecoveryHold).
// *leadership.Elector implements it.
type selfReporter interface {
	Identity() string
	Lease() time.Duration
}

// New returns a scheduler over l. It starts nothing; Add jobs, then Start.
// It fails for a nil l or an invalid option, naming the value.
func New(l leadership.Leadership, opts ...Option) (*Scheduler, error) {
	if l == nil || (reflect.ValueOf(l).Kind() == reflect.Pointer && reflect.ValueOf(l).IsNil()) {
		return nil, errors.New("scheduling: nil Leadership")
	}
	set := newSettings(opts)
	if set.misfire < 0 {
		return nil, fmt.Errorf("scheduling: misfire window %v must not be negative", set.misfire)
	}
	if set.hold < 0 {
		return nil, fmt.Errorf("scheduling: recovery hold %v must not be negative", set.hold)
	}
	ins, err := newInstruments(set.meters.Meter(instrumentationScope))
	if err != nil {
		return nil, fmt.Errorf("scheduling: instruments: %w", err)
	}
	s := &Scheduler{
		l:      l,
		role:   l.Role(),
		set:    set,
		log:    set.logger.With(zap.String("role", l.Role())),
		tracer: set.tracers.Tracer(instrumentationScope),
		ins:    ins,
		wake:   make(chan struct{}, 1),
		asks:   make(chan func()),
		posts:  make(chan func(), 64),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
		jobs:   make(map[string]*job),
	}
	if lim, ok := set.store.(locking.Limits); ok {
		s.maxKey = lim.MaxKeyLength()
	}
	// The store's job records, found once (X3): a store that reports its
	// features (a *locking.DistributedLock) is believed over its method
	// set, so a lock whose provider keeps no job records is no slot store
	// at all.
	if set.store != nil {
		s.js = jobsOf(set.store)
		if _, reports := set.store.(interface{ Features() locking.Features }); reports && s.js == nil {
			s.set.store = nil
		}
	}
	// Identity and recovery hold come from the options; a Leadership that
	// reports its own (a *leadership.Elector), found once here, fills in
	// the ones not given.
	s.id, s.hold = set.id, set.hold
	self, reports := l.(selfReporter)
	if s.id == "" && reports {
		s.id = self.Identity()
	}
	if s.id == "" {
		s.id = locking.DefaultOwner()
	}
	if !set.holdSet {
		s.hold = leadership.DefaultLease
		if reports {
			s.hold = self.Lease()
		}
	}
	var nonce [6]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("scheduling: instance id: %w", err)
	}
	s.inst = hex.EncodeToString(nonce[:])
	s.runs, s.cancelRuns = context.WithCancel(context.Background())
	return s, nil
}

// Add adds a job. It rejects, with an error naming the job and the value,
// an empty, malformed or duplicate name, a nil Run, a nil or invalid
// Schedule (Every(d) with d ≤ 0, a schedule with no future slot), a
// negative Timeout or Jitter, and, with a slot store, an interval below the
// store's millisecond resolution or a slot key the store refuses. Jobs may
// be added before or after Start.
func (s *Scheduler) Add(j Job) error {
	if err := s.validate(&j); err != nil {
		return err
	}
	sched := j.Schedule
	if b, ok := sched.(locator); ok {
		sched = b.in(s.set.loc)
	}
	next := sched.Next(time.Now())
	if next.IsZero() {
		return fmt.Errorf("scheduling: job %q: schedule %s has no future slot", j.Name, sched)
	}
	spec, _ := ScheduleSpec(sched)
	nj := &job{
		Job:   j,
		sched: sched,
		spec:  spec,
		key:   JobKey(s.role, j.Name),
		attrs: newJobAttrs(s.role, j.Name),
		ttl:   max(SlotStateTTL, 2*s.set.misfire),
		next:  next,
		index: -1,
	}
	if after := sched.Next(next); !after.IsZero() {
		nj.ttl = max(nj.ttl, 3*after.Sub(next))
	}
	if s.set.store != nil {
		if err := locking.CheckKey(nj.key, s.maxKey); err != nil {
			return fmt.Errorf("scheduling: job %q: slot key: %w", j.Name, err)
		}
	}
	s.life.Lock()
	defer s.life.Unlock()
	if s.state == stateStopped {
		return fmt.Errorf("scheduling: job %q: %w", j.Name, ErrStopped)
	}
	var err error
	s.own(func() {
		if _, dup := s.jobs[j.Name]; dup {
			err = fmt.Errorf("scheduling: job %q: duplicate name", j.Name)
			return
		}
		s.jobs[j.Name] = nj
		s.order = append(s.order, nj)
		heap.Push(&s.queue, nj)
		s.poke()
	})
	return err
}

// own runs f as the owner of job state and returns when f did: directly
// before Start and after the loop returned, else as a request to the loop.
// s.life is held.
func (s *Scheduler) own(f func()) {
	if s.state == stateNew {
		f()
		return
	}
	replied := make(chan struct{})
	select {
	case s.asks <- func() { f(); close(replied) }:
		<-replied
	case <-s.done: // the loop returned: nobody else owns job state
		f()
	}
}

// ask runs f as the owner of job state for an API caller and returns when
// f did.
func (s *Scheduler) ask(f func()) {
	s.life.Lock()
	defer s.life.Unlock()
	s.own(f)
}

// post hands f to the loop, for a run chain: the loop runs as long as any
// chain does, and runs a chain's posts in order, the chain's last one (its
// end, through call) included.
func (s *Scheduler) post(f func()) {
	s.posts <- f
}

// call is post for a run chain that needs f's result: it returns when f
// ran.
func (s *Scheduler) call(f func()) {
	replied := make(chan struct{})
	s.posts <- func() { f(); close(replied) }
	<-replied
}

func (s *Scheduler) validate(j *Job) error {
	if j.Name == "" {
		return errors.New("scheduling: job name is empty")
	}
	if i := strings.IndexFunc(j.Name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return fmt.Errorf("scheduling: job %q: name has whitespace or control characters", j.Name)
	}
	if j.Run == nil {
		return fmt.Errorf("scheduling: job %q: nil Run", j.Name)
	}
	if j.Schedule == nil {
		return fmt.Errorf("scheduling: job %q: nil Schedule", j.Name)
	}
	if c, ok := j.Schedule.(checker); ok {
		if err := c.check(); err != nil {
			return fmt.Errorf("scheduling: job %q: schedule: %w", j.Name, err)
		}
	} else if v := reflect.ValueOf(j.Schedule); v.Kind() == reflect.Pointer && v.IsNil() {
		return fmt.Errorf("scheduling: job %q: nil Schedule (%T)", j.Name, j.Schedule)
	}
	if j.Timeout < 0 {
		return fmt.Errorf("scheduling: job %q: Timeout %v must not be negative", j.Name, j.Timeout)
	}
	if j.Jitter < 0 {
		return fmt.Errorf("scheduling: job %q: Jitter %v must not be negative", j.Name, j.Jitter)
	}
	if e, ok := j.Schedule.(every); ok && s.set.store != nil && e.d < time.Millisecond {
		return fmt.Errorf("scheduling: job %q: interval %v is below the slot store's 1ms resolution", j.Name, e.d)
	}
	if !j.Overlap.Valid() {
		return fmt.Errorf("scheduling: job %q: unknown Overlap policy %d", j.Name, int(j.Overlap))
	}
	if !j.CatchUp.Valid() {
		return fmt.Errorf("scheduling: job %q: unknown CatchUp policy %d", j.Name, int(j.CatchUp))
	}
	if j.Recover && s.js == nil {
		return fmt.Errorf("scheduling: job %q: Recover needs a slot store that keeps job records (WithSlotStore with *locking.DistributedLock over redislock or memlock)", j.Name)
	}
	return nil
}

// Start starts the loop and returns; ctx bounds starting only (S1). Jobs
// run while the Leadership leads, from this moment if it leads already. It
// returns ErrStopped after Stop and ErrStarted when already started.
func (s *Scheduler) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("scheduling: start %q: %w", s.role, err)
	}
	s.life.Lock()
	switch s.state {
	case stateStopped:
		s.life.Unlock()
		return ErrStopped
	case stateStarted:
		s.life.Unlock()
		return ErrStarted
	}
	// Slots between Add and Start are not the scheduler's: start from now.
	now := time.Now()
	for _, j := range s.order {
		j.next = j.sched.Next(now)
		if j.next.IsZero() {
			heap.Remove(&s.queue, j.index)
		}
	}
	heap.Init(&s.queue)
	// Job state passes to the loop.
	s.state = stateStarted
	go s.loop(true)
	s.life.Unlock()

	unsubscribe := s.l.OnChange(func(leadership.Change) { s.poke() })
	reg, err := s.set.meters.Meter(instrumentationScope).RegisterCallback(s.observe, s.ins.success)
	if err != nil {
		s.log.Warn("SchedulerMetricsRegisterFailed", zap.Error(err))
	}
	s.life.Lock()
	s.unsubscribe, s.reg = unsubscribe, reg
	s.life.Unlock()
	s.log.Info("SchedulerStarted")
	return nil
}

// Stop stops the loop, cancels the ctx of every run, and returns once every
// run has returned, or when ctx ends, with ctx's error (S5). Runs that
// outlive it are still waited for by later calls. It is idempotent and safe
// before Start; a stopped scheduler cannot be started again.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.life.Lock()
	var unsubscribe func()
	var reg metric.Registration
	if s.state != stateStopped {
		if s.state == stateStarted {
			s.log.Info("SchedulerStopping")
		} else {
			close(s.done) // no loop: nothing runs
		}
		s.state = stateStopped
		close(s.quit)
		s.cancelRuns()
	}
	unsubscribe, reg = s.unsubscribe, s.reg
	s.unsubscribe, s.reg = nil, nil
	s.life.Unlock()
	if unsubscribe != nil {
		unsubscribe()
	}
	if reg != nil {
		if err := reg.Unregister(); err != nil {
			s.log.Debug("SchedulerMetricsUnregisterFailed", zap.Error(err))
		}
	}
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("scheduling: stop %q: %w", s.role, ctx.Err())
	}
}

// Jobs describes every job, sorted by name.
func (s *Scheduler) Jobs() []JobInfo {
	var out []JobInfo
	s.ask(func() {
		out = make([]JobInfo, 0, len(s.order))
		for _, j := range s.order {
			out = append(out, JobInfo{
				Name:        j.Name,
				Schedule:    j.sched.String(),
				Next:        j.next,
				Running:     j.running,
				LastSlot:    j.lastSlot,
				LastRun:     j.lastRun,
				LastOutcome: j.lastOutcome,
				LastError:   j.lastErr,
				LastSuccess: j.lastSuccess,
				Paused:      j.paused,
				Upcoming:    upcoming(j.sched, j.next),
				Timeout:     j.Timeout,
				Jitter:      j.Jitter,
				Overlap:     cmp.Or(j.Overlap, OverlapSkip),
				CatchUp:     cmp.Or(j.CatchUp, CatchUpLatest),
				Recover:     j.Recover,
			})
		}
	})
	slices.SortFunc(out, func(a, b JobInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// upcoming returns next and the slots after it, UpcomingSlots at most.
func upcoming(sched Schedule, next time.Time) []time.Time {
	var out []time.Time
	for t := next; !t.IsZero() && len(out) < UpcomingSlots; t = sched.Next(t) {
		out = append(out, t)
	}
	return out
}

// poke wakes the loop without blocking.
func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loop is the scheduler's one goroutine and the owner of job state from
// Start on: it sleeps on one timer until the earliest slot, a leadership
// change or an Add, and serves the requests of API callers and run chains.
// After Stop it only serves requests, until the last chain ended; then it
// closes s.done and returns. With ticking false (benchmarks drive tick
// through requests) it never ticks on its own.
func (s *Scheduler) loop(ticking bool) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	quit := s.quit
	due := ticking
	for {
		if due && !s.stopping {
			if wait, ok := s.tick(); ok {
				timer.Reset(wait)
			} else {
				timer.Stop()
			}
		}
		due = false
		if s.stopping && s.chains == 0 {
			close(s.done)
			return
		}
		select {
		case <-quit:
			s.stopping, quit = true, nil
			timer.Stop()
		case <-s.wake:
			due = ticking
		case <-timer.C:
			due = ticking
		case f := <-s.asks:
			// An API caller sees every post made before its request (a
			// job's Run reading Jobs sees its own slot).
			for drained := false; !drained; {
				select {
				case p := <-s.posts:
					p()
				default:
					drained = true
				}
			}
			f()
		case f := <-s.posts:
			f()
		}
	}
}

// current reads the leadership's token and the term it belongs to.
func (s *Scheduler) current() (context.Context, uint64) {
	for {
		t1 := s.l.Term()
		tok := s.l.Token()
		if t2 := s.l.Term(); t1 == t2 {
			return tok, t1
		}
	}
}

// tick acts on every due slot and reports how long until the next one.
func (s *Scheduler) tick() (time.Duration, bool) {
	tok, term := s.current()
	now := time.Now()
	leading := tok.Err() == nil

	if s.stopping {
		return 0, false
	}
	wait, ok := s.act(now, tok, term, leading)
	// Runs start once every due slot was acted on.
	starts := s.starts
	s.starts = s.starts[:0:0]
	for _, st := range starts {
		go s.execute(st)
	}
	return wait, ok
}

// act acts on every due slot and reports how long until the next one.
func (s *Scheduler) act(now time.Time, tok context.Context, term uint64, leading bool) (time.Duration, bool) {
	if leading != s.leading {
		if leading {
			s.log.Info("SchedulerLeads", zap.Uint64("term", term))
		} else {
			s.log.Warn("SchedulerLeadershipLost", zap.Uint64("term", s.term))
		}
		s.leading = leading
	}
	if leading && term != s.term {
		s.term = term
		if s.set.store != nil {
			for _, j := range s.order {
				s.catchUp(j, now, tok, term)
			}
		}
	}
	for len(s.queue) > 0 && !s.queue[0].next.After(now) {
		j := s.queue[0]
		slot, late, ok := latestDue(j.sched, j.next, now)
		s.countMissed(j, late)
		switch {
		case !ok:
			// Too many slots passed to walk: act on none of them.
		case !leading:
			s.countSkip(j, skipFollower, 1)
		case j.running:
			s.overlap(j, slot, tok, term)
		default:
			s.launch(j, []time.Time{slot}, tok, term, false)
		}
		j.next = j.sched.Next(now)
		if j.next.IsZero() {
			heap.Remove(&s.queue, j.index)
			s.log.Info("SchedulerJobExhausted", zap.String("job", j.Name))
		} else {
			heap.Fix(&s.queue, j.index)
		}
	}
	if len(s.queue) == 0 {
		return 0, false
	}
	return max(s.queue[0].next.Sub(now), 0), true
}

// catchUp launches, when this instance starts leading, the slots j's
// CatchUp policy runs (S8) and, for a Recover job, a recovery check (S9).
// The slot store decides whether anyone started them.
func (s *Scheduler) catchUp(j *job, now time.Time, tok context.Context, term uint64) {
	if j.running {
		return
	}
	var slots []time.Time
	if s.set.misfire > 0 && j.CatchUp != CatchUpNone {
		from := now.Add(-s.set.misfire)
		first := j.sched.Next(from.Add(-time.Nanosecond))
		if j.CatchUp == CatchUpAll {
			slots = s.window(j, first, now)
		} else if prev, _, ok := latestDue(j.sched, first, now); ok && !prev.After(now) && !prev.Before(from) && prev.After(j.launched) {
			slots = []time.Time{prev}
		}
	}
	if len(slots) == 0 && j.Recover && s.js != nil {
		slots = []time.Time{{}} // recovery only
	}
	if len(slots) == 0 {
		return
	}
	s.launch(j, slots, tok, term, true)
	if j.index >= 0 && !j.next.After(now) {
		j.next = j.sched.Next(now)
		if j.next.IsZero() {
			heap.Remove(&s.queue, j.index)
		} else {
			heap.Fix(&s.queue, j.index)
		}
	}
}

// window lists j's slots from first to now that this instance has not
// launched, oldest first: the newest MaxCatchUp of them; the older ones
// are counted as missed.
func (s *Scheduler) window(j *job, first, now time.Time) []time.Time {
	var slots []time.Time
	dropped := int64(0)
	for t, n := first, 0; !t.IsZero() && !t.After(now) && n < maxScan; t, n = j.sched.Next(t), n+1 {
		if !t.After(j.launched) {
			continue
		}
		if len(slots) == MaxCatchUp {
			slots = slots[1:]
			dropped++
		}
		slots = append(slots, t)
	}
	s.countMissed(j, dropped)
	return slots
}

// overlap applies j's Overlap policy to slot, due while j's chain runs
// (S2, S7).
func (s *Scheduler) overlap(j *job, slot time.Time, tok context.Context, term uint64) {
	switch j.Overlap {
	case OverlapBufferOne, OverlapCancelPrevious:
		if j.pend != nil { // superseded by this later slot: never run
			s.countSkip(j, skipOverlap, 1)
		}
		j.pend = &pending{slot: slot, tok: tok, term: term}
		if j.Overlap == OverlapBufferOne {
			s.countOverlap(j, overlapBuffer)
			s.log.Debug("SchedulerSlotBuffered", zap.String("job", j.Name), zap.Time("slot", slot))
			return
		}
		s.countOverlap(j, overlapCancel)
		s.log.Debug("SchedulerRunCancelledForSlot", zap.String("job", j.Name), zap.Time("slot", slot))
		if j.cancel != nil && !j.replaced {
			j.replaced = true
			j.cancel(errReplaced)
		}
	default:
		s.countSkip(j, skipOverlap, 1)
		s.countOverlap(j, overlapSkip)
		s.log.Debug("SchedulerSlotSkippedOverlap", zap.String("job", j.Name), zap.Time("slot", slot))
	}
}

// pending is a slot that fell due during a run, to run after it (S7).
type pending struct {
	slot time.Time
	tok  context.Context
	term uint64
}

// latestDue walks from the due slot first to the latest slot at or before
// now. It returns that slot, how many earlier due slots it passed, and
// false when first is after now or the walk exceeded maxScan.
func latestDue(sched Schedule, first, now time.Time) (time.Time, int64, bool) {
	if first.IsZero() || first.After(now) {
		return first, 0, false
	}
	if e, ok := sched.(every); ok {
		last := now.Truncate(e.d)
		if last.Before(first) {
			return first, 0, true
		}
		return last, int64(last.Sub(first) / e.d), true
	}
	slot := first
	for n := int64(0); n < maxScan; n++ {
		next := sched.Next(slot)
		if next.IsZero() || next.After(now) {
			return slot, n, true
		}
		slot = next
	}
	return slot, maxScan, false
}

// slotsBetween counts the slots strictly between a and b, up to maxScan
// for schedules other than Every.
func slotsBetween(sched Schedule, a, b time.Time) int64 {
	if e, ok := sched.(every); ok {
		return e.slotsBetween(a, b)
	}
	n := int64(0)
	for t := sched.Next(a); !t.IsZero() && t.Before(b) && n < maxScan; t = sched.Next(t) {
		n++
	}
	return n
}

// launch starts a run chain of j for slots (ascending; a zero slot asks
// only for recovery) in term.
func (s *Scheduler) launch(j *job, slots []time.Time, tok context.Context, term uint64, catchUp bool) {
	first := j.term != term
	j.term = term
	j.running = true
	if last := slots[len(slots)-1]; !last.IsZero() {
		j.launched = last
	}
	s.chains++
	seg := s.segment(j, tok)
	s.starts = append(s.starts, start{j: j, slots: slots, tok: tok, seg: seg, term: term, first: first, catchUp: catchUp})
}

// errReplaced is the cause of a segment cancelled by OverlapCancelPrevious.
var errReplaced = errors.New("scheduling: replaced by a later slot")

// segment starts a segment of j's chain: the slots run under one
// cancellation, derived from tok, that OverlapCancelPrevious cancels (its
// cause errReplaced) when a later slot falls due (S7). It ends the
// previous segment's.
func (s *Scheduler) segment(j *job, tok context.Context) context.Context {
	if j.cancel != nil {
		j.cancel(nil)
	}
	seg, cancel := context.WithCancelCause(tok)
	j.cancel, j.replaced = cancel, false
	return seg
}

// start is a run chain launched by a tick, to be started once the tick
// acted on every due slot.
type start struct {
	j       *job
	slots   []time.Time
	tok     context.Context
	seg     context.Context // the first segment, from s.segment
	term    uint64
	first   bool
	catchUp bool
}

// queue is a min-heap of jobs by next slot.
type queue []*job

func (q queue) Len() int           { return len(q) }
func (q queue) Less(a, b int) bool { return q[a].next.Before(q[b].next) }
func (q queue) Swap(a, b int) {
	q[a], q[b] = q[b], q[a]
	q[a].index, q[b].index = a, b
}
func (q *queue) Push(x any) {
	j := x.(*job)
	j.index = len(*q)
	*q = append(*q, j)
}
func (q *queue) Pop() any {
	old := *q
	j := old[len(old)-1]
	old[len(old)-1] = nil
	j.index = -1
	*q = old[:len(old)-1]
	return j
}
