package scheduling

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// PanicError is the LastError of a run that panicked.
type PanicError struct {
	// Job is the job's name.
	Job string
	// Value is what the job panicked with.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
}

// Error names the job and the panic value.
func (e *PanicError) Error() string {
	return fmt.Sprintf("scheduling: job %q panicked: %v", e.Job, e.Value)
}

// completeTimeout bounds the write that records a run's end, which is
// made after the run's ctx may have ended.
const completeTimeout = 5 * time.Second

// execute is the goroutine of a run chain: each slot of st in turn (jitter,
// claim, recovery, the job, its bookkeeping), then the slots that fell due
// meanwhile and the overlap policy kept (S7). Each run's ctx derives from
// the token of its term (S1), through the chain's current segment. The
// chain owns no job state: it posts its progress to the loop and asks it,
// when its slots are done, for the next one; j.running stays true until
// the loop answers none.
func (s *Scheduler) execute(st start) {
	j, slots, tok, seg, term, first := st.j, st.slots, st.tok, st.seg, st.term, st.first
	if st.catchUp && len(slots) > 1 {
		slots = s.unrecorded(j, slots, tok)
	}
	for {
		for len(slots) > 0 {
			slot := slots[0]
			slots = slots[1:]
			if !s.runSlot(j, slot, tok, seg, term, first, st.catchUp) {
				s.countSkip(j, skipFollower, int64(len(slots)))
				slots = nil
			}
			if replaced(seg) { // OverlapCancelPrevious: the newer slot goes next, not older ones
				s.countSkip(j, skipOverlap, int64(len(slots)))
				slots = nil
			}
			first = first && slot.IsZero()
		}
		var p *pending
		var next context.Context
		s.call(func() {
			p, j.pend = j.pend, nil
			if p == nil {
				j.running = false
				j.cancel(nil)
				j.cancel = nil
				s.chains--
				return
			}
			if p.term != j.term {
				j.term = p.term
			}
			next = s.segment(j, p.tok)
		})
		if p == nil {
			return
		}
		seg = next
		if p.tok.Err() != nil || s.runs.Err() != nil {
			s.notStarted(j, p.slot, p.tok)
			continue
		}
		first = p.term != term
		slots, tok, term, st.catchUp = []time.Time{p.slot}, p.tok, p.term, false
	}
}

// replaced reports whether OverlapCancelPrevious cancelled the segment seg.
func replaced(seg context.Context) bool {
	return errors.Is(context.Cause(seg), errReplaced)
}

// unrecorded drops the catch-up slots the store already recorded (one
// read), so CatchUpAll claims only slots nobody started.
func (s *Scheduler) unrecorded(j *job, slots []time.Time, tok context.Context) []time.Time {
	var last int64
	var ok bool
	var err error
	if s.js != nil {
		var st slotstore.JobStatus
		st, err = s.js.JobStatus(tok, j.key)
		last, ok = st.Slot, st.HasSlot
	} else {
		last, ok, err = s.set.store.State(tok, j.key)
	}
	if err != nil || !ok {
		return slots // each claim decides
	}
	for len(slots) > 0 && !slots[0].IsZero() && slots[0].UnixMilli() <= last {
		slots = slots[1:]
	}
	return slots
}

// runSlot claims slot and runs it; a zero slot only asks the store for
// recovery. With Recover, an unfinished slot of an earlier term is run
// first (S9). It reports false when the chain must stop: its term ended
// or the scheduler stopped.
func (s *Scheduler) runSlot(j *job, slot time.Time, tok, seg context.Context, term uint64, first, catchUp bool) bool {
	ctx, cancel := context.WithCancel(seg)
	defer cancel()
	stop := context.AfterFunc(s.runs, cancel)
	defer stop()

	live := func() bool { return tok.Err() == nil && s.runs.Err() == nil }
	if j.Jitter > 0 && !slot.IsZero() {
		t := time.NewTimer(rand.N(j.Jitter))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			s.notStarted(j, slot, tok)
			return live()
		}
	}
	// The term ended, Stop came (AfterFunc may not have cancelled ctx
	// yet), or a later slot replaced this one.
	if ctx.Err() != nil || s.runs.Err() != nil {
		s.notStarted(j, slot, tok)
		return live()
	}
	switch {
	case s.js != nil:
		// Each pass recovers at most one unfinished slot; attempts are
		// bounded, so the loop is too.
		for range slotstore.MaxJobAttempts + 1 {
			c := s.claimJob(ctx, j, slot, tok, term, first, catchUp)
			first = false
			switch c.Status {
			case slotstore.ClaimGranted:
				s.run(ctx, seg, j, slot, c.Attempt, c.Seq, term)
				return live()
			case slotstore.ClaimRecoverable:
				if !s.recoverSlot(ctx, seg, j, time.UnixMilli(c.Slot), c.Attempt+1, c.Wait, term) || !live() {
					return live()
				}
				if !slot.IsZero() && time.Since(slot) > s.set.misfire {
					s.countMissed(j, 1) // fell due too long ago while the recovery ran
					return true
				}
			default:
				return live()
			}
		}
		return live()
	case s.set.store != nil:
		if slot.IsZero() || !s.claim(ctx, j, slot, tok, first, catchUp) {
			return live()
		}
	}
	s.run(ctx, seg, j, slot, 1, 0, term)
	return live()
}

// notStarted accounts for a run whose ctx ended before it started.
func (s *Scheduler) notStarted(j *job, slot time.Time, tok context.Context) {
	if tok.Err() != nil {
		s.countSkip(j, skipFollower, 1)
	}
	s.log.Debug("SchedulerRunNotStarted", zap.String("job", j.Name), zap.Time("slot", slot))
}

// claim records slot as started in the slot store; it reports whether this
// run may go ahead. On the first run of a term it also counts the slots
// nobody started since the last recorded one as missed.
func (s *Scheduler) claim(ctx context.Context, j *job, slot time.Time, tok context.Context, first, catchUp bool) bool {
	store := s.set.store
	if first {
		last, ok, err := store.State(ctx, j.key)
		if err == nil && ok {
			s.countMissed(j, slotsBetween(j.sched, time.UnixMilli(last), slot))
		}
	}
	advanced, current, err := store.Advance(ctx, j.key, slot.UnixMilli())
	switch {
	case err != nil && ctx.Err() != nil:
		s.notStarted(j, slot, tok)
		return false
	case err != nil:
		s.countSkip(j, skipStore, 1)
		s.log.Warn("SchedulerSlotStoreFailed", zap.String("job", j.Name), zap.Time("slot", slot), zap.Error(err))
		return false
	case !advanced:
		if !catchUp {
			s.countSkip(j, skipStarted, 1)
		}
		s.log.Debug("SchedulerSlotStartedElsewhere", zap.String("job", j.Name), zap.Time("slot", slot), zap.Time("recorded", time.UnixMilli(current)))
		return false
	}
	return true
}

// termID identifies term of this scheduler in the job store: a term never
// recovers its own attempts.
func (s *Scheduler) termID(term uint64) string {
	return s.id + "/" + s.inst + "/" + strconv.FormatUint(term, 10)
}

// claimJob claims slot (zero: recovery only) in the job store, with the
// paused check and, for a Recover job, the recovery check in the same
// atomic step. On the first claim of a term it counts the slots nobody
// started since the last recorded one as missed. A failed claim returns
// the zero result (no status).
func (s *Scheduler) claimJob(ctx context.Context, j *job, slot time.Time, tok context.Context, term uint64, first, catchUp bool) slotstore.SlotClaimResult {
	c := slotstore.SlotClaim{Attempt: 1, Recover: j.Recover, Term: s.termID(term), Hold: s.hold, TTL: j.ttl}
	if !slot.IsZero() {
		c.Slot = slot.UnixMilli()
		c.Record = RunRecord{Slot: slot, Started: time.Now(), Identity: s.id, Fence: fenceOf(tok), Attempt: 1, Schedule: j.spec}.encode()
	}
	r, err := s.js.ClaimSlot(ctx, j.key, c)
	switch {
	case err != nil && ctx.Err() != nil:
		s.notStarted(j, slot, tok)
		return slotstore.SlotClaimResult{}
	case err != nil:
		s.countSkip(j, skipStore, 1)
		s.log.Warn("SchedulerSlotStoreFailed", zap.String("job", j.Name), zap.Time("slot", slot), zap.Error(err))
		return slotstore.SlotClaimResult{}
	}
	if first && r.HasPrevious && !slot.IsZero() {
		s.countMissed(j, slotsBetween(j.sched, time.UnixMilli(r.Previous), slot))
	}
	paused := r.Status == slotstore.ClaimPaused
	s.post(func() { j.paused = paused })
	switch r.Status {
	case slotstore.ClaimPaused:
		if !slot.IsZero() {
			s.countSkip(j, skipPaused, 1)
			s.log.Debug("SchedulerSlotSkippedPaused", zap.String("job", j.Name), zap.Time("slot", slot))
		}
	case slotstore.ClaimStarted:
		if !catchUp && !slot.IsZero() {
			s.countSkip(j, skipStarted, 1)
		}
		s.log.Debug("SchedulerSlotStartedElsewhere", zap.String("job", j.Name), zap.Time("slot", slot), zap.Time("recorded", time.UnixMilli(r.Previous)))
	}
	return r
}

// recoverSlot re-runs slot, which an earlier term started and did not
// finish, as attempt (S9), after waiting until that term has certainly
// ended. It reports false when ctx ended or the store failed.
func (s *Scheduler) recoverSlot(ctx, seg context.Context, j *job, slot time.Time, attempt int, wait time.Duration, term uint64) bool {
	for range 2 * slotstore.MaxJobAttempts {
		if wait > 0 {
			s.log.Info("SchedulerRecoveryWaits", zap.String("job", j.Name), zap.Time("slot", slot), zap.Duration("wait", wait))
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return false
			}
		}
		rec := RunRecord{Slot: slot, Started: time.Now(), Identity: s.id, Fence: fenceOf(ctx), Attempt: attempt, Schedule: j.spec}
		r, err := s.js.ClaimSlot(ctx, j.key, slotstore.SlotClaim{
			Slot: slot.UnixMilli(), Attempt: attempt, Term: s.termID(term), Hold: s.hold, Record: rec.encode(), TTL: j.ttl,
		})
		if err != nil {
			if ctx.Err() == nil {
				s.countSkip(j, skipStore, 1)
				s.log.Warn("SchedulerSlotStoreFailed", zap.String("job", j.Name), zap.Time("slot", slot), zap.Int("attempt", attempt), zap.Error(err))
			}
			return false
		}
		switch r.Status {
		case slotstore.ClaimGranted:
			s.log.Info("SchedulerSlotRecovered", zap.String("job", j.Name), zap.Time("slot", slot), zap.Int("attempt", attempt))
			s.run(ctx, seg, j, slot, attempt, r.Seq, term)
			return ctx.Err() == nil
		case slotstore.ClaimWait:
			wait = r.Wait
		default: // someone else recovered or completed it, or the job is paused
			s.log.Debug("SchedulerRecoveryRefused", zap.String("job", j.Name), zap.Time("slot", slot), zap.Stringer("status", r.Status))
			return true
		}
	}
	return true
}

// fenceOf is the fencing token of the term ctx derives from (G2); 0 over a
// lock without fences, or a Leadership whose Token carries none.
func fenceOf(ctx context.Context) uint64 {
	f, _ := leadership.FenceFrom(ctx)
	return f
}

// run calls the job and records the outcome (S3); seg is the segment of
// the chain ctx derives from.
func (s *Scheduler) run(ctx, seg context.Context, j *job, slot time.Time, attempt int, seq int64, term uint64) {
	start := time.Now()
	s.post(func() { j.lastSlot, j.lastRun = slot, start })
	s.recordLag(j, start.Sub(slot))

	rctx := withRun(ctx, slot, attempt)
	if j.Timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, j.Timeout)
		defer cancel()
	}
	rctx, span := s.tracer.Start(rctx, SpanRun, trace.WithAttributes(
		attribute.String(AttrRole, s.role),
		attribute.String(AttrJob, j.Name),
		attribute.Int64(AttrSlot, slot.UnixMilli()),
		attribute.Int(AttrAttempt, attempt),
	))
	pe, err := call(j, rctx)
	d := time.Since(start)

	outcome := Success
	switch {
	case pe != nil:
		err = pe
		outcome = Panic
	case err == nil:
	case ctx.Err() != nil:
		outcome = Canceled
	case rctx.Err() != nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
		outcome = Timeout
	default:
		outcome = Failure
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, outcome.String())
	}
	span.SetAttributes(attribute.String(AttrOutcome, outcome.String()))
	span.End()

	var ce *zapcore.CheckedEntry
	switch outcome {
	case Success:
		ce = s.log.Check(zap.DebugLevel, "SchedulerJobSucceeded")
	case Panic:
		ce = s.log.Check(zap.ErrorLevel, "SchedulerJobPanicked")
	case Canceled:
		ce = s.log.Check(zap.InfoLevel, "SchedulerJobCancelled")
	case Timeout:
		ce = s.log.Check(zap.ErrorLevel, "SchedulerJobTimedOut")
	default:
		ce = s.log.Check(zap.ErrorLevel, "SchedulerJobFailed")
	}
	if ce != nil {
		fields := []zap.Field{zap.String("job", j.Name), zap.Time("slot", slot), zap.Duration("duration", d)}
		if attempt > 1 {
			fields = append(fields, zap.Int("attempt", attempt))
		}
		switch outcome {
		case Panic:
			fields = append(fields, zap.Any("panic", pe.Value), zap.ByteString("stack", pe.Stack))
		case Timeout:
			fields = append(fields, zap.Duration("timeout", j.Timeout), zap.Error(err))
		case Canceled, Failure:
			fields = append(fields, zap.Error(err))
		}
		ce.Write(fields...)
	}

	s.post(func() {
		j.lastOutcome, j.lastErr = outcome, err
		if outcome == Success {
			j.lastSuccess = start
		}
	})
	s.countRun(j, outcome, d)
	if seq > 0 {
		s.complete(ctx, j, RunRecord{
			Slot: slot, Started: start, Ended: start.Add(d), Identity: s.id, Fence: fenceOf(ctx), Outcome: outcome, Attempt: attempt, Schedule: j.spec,
		}, seq, term, outcome != Canceled || replaced(seg))
	}
}

// complete records a run's end in the job store, in one atomic step: its
// history record and, unless done is false (the run was cut short by the
// end of its term or by Stop), that the slot needs no recovery.
func (s *Scheduler) complete(ctx context.Context, j *job, r RunRecord, seq int64, term uint64, done bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), completeTimeout)
	defer cancel()
	_, err := s.js.CompleteSlot(ctx, j.key, slotstore.SlotCompletion{
		Slot: r.Slot.UnixMilli(), Attempt: r.Attempt, Term: s.termID(term), Seq: seq, Done: done, Record: r.encode(), TTL: j.ttl,
	})
	if err != nil {
		s.log.Warn("SchedulerCompletionNotRecorded", zap.String("job", j.Name), zap.Time("slot", r.Slot), zap.Error(err))
	}
}

// call runs the job, turning a panic into a *PanicError.
func call(j *job, ctx context.Context) (pe *PanicError, err error) {
	defer func() {
		if r := recover(); r != nil {
			pe = &PanicError{Job: j.Name, Value: r, Stack: debug.Stack()}
		}
	}()
	return nil, j.Run(ctx)
}
