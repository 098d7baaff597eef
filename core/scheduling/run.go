package scheduling

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
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

// execute is the goroutine of one run: jitter, slot claim, the job, and
// its bookkeeping. Its ctx derives from tok, the term's token (S1).
func (s *Scheduler) execute(j *job, slot time.Time, tok context.Context, first, catchUp bool) {
	defer s.exit()
	ran := false
	defer func() {
		if !ran {
			s.mu.Lock()
			j.running = false
			s.mu.Unlock()
		}
	}()
	ctx, cancel := context.WithCancel(tok)
	defer cancel()
	stop := context.AfterFunc(s.runs, cancel)
	defer stop()

	if j.Jitter > 0 {
		t := time.NewTimer(rand.N(j.Jitter))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			s.notStarted(j, slot, tok)
			return
		}
	}
	if ctx.Err() != nil { // the term ended or Stop came before the run started
		s.notStarted(j, slot, tok)
		return
	}
	if s.set.store != nil && !s.claim(ctx, j, slot, tok, first, catchUp) {
		return
	}
	ran = true
	s.run(ctx, j, slot)
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

// run calls the job and records the outcome (S3).
func (s *Scheduler) run(ctx context.Context, j *job, slot time.Time) {
	start := time.Now()
	s.mu.Lock()
	j.lastSlot, j.lastRun = slot, start
	s.mu.Unlock()

	rctx := ctx
	if j.Timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, j.Timeout)
		defer cancel()
	}
	rctx, span := s.tracer.Start(rctx, "scheduling.run", trace.WithAttributes(
		attribute.String("role", s.role),
		attribute.String("job", j.Name),
		attribute.Int64("slot_unix_ms", slot.UnixMilli()),
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
	span.SetAttributes(attribute.String("outcome", outcome.String()))
	span.End()

	var ce *zapcore.CheckedEntry
	switch outcome {
	case Success:
		ce = s.log.Check(zap.DebugLevel, "scheduled job succeeded")
	case Panic:
		ce = s.log.Check(zap.ErrorLevel, "SchedulerJobPanicked")
	case Canceled:
		ce = s.log.Check(zap.InfoLevel, "scheduled job cancelled")
	case Timeout:
		ce = s.log.Check(zap.ErrorLevel, "scheduled job timed out")
	default:
		ce = s.log.Check(zap.ErrorLevel, "SchedulerJobFailed")
	}
	if ce != nil {
		fields := []zap.Field{zap.String("job", j.Name), zap.Time("slot", slot), zap.Duration("duration", d)}
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

	s.mu.Lock()
	j.running = false
	j.lastOutcome, j.lastErr = outcome, err
	if outcome == Success {
		j.lastSuccess = start
	}
	s.mu.Unlock()
	s.countRun(j, outcome, d)
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
