package scheduling

import (
	"context"
	"time"
)

// runKey is the context key of a run's runInfo.
type runKey struct{}

// runInfo is what a run's ctx tells the job about itself.
type runInfo struct {
	slot    time.Time
	attempt int
}

// withRun returns ctx carrying the run's slot and attempt.
func withRun(ctx context.Context, slot time.Time, attempt int) context.Context {
	return context.WithValue(ctx, runKey{}, &runInfo{slot: slot, attempt: attempt})
}

// SlotFrom returns the slot (scheduled time) the run whose ctx is ctx (or
// derives from it) is for; false for a ctx that is not a run's (G2).
func SlotFrom(ctx context.Context) (time.Time, bool) {
	if ri, ok := ctx.Value(runKey{}).(*runInfo); ok {
		return ri.slot, true
	}
	return time.Time{}, false
}

// AttemptFrom returns the run's attempt: 1 for a slot's first run, 2 or
// more when the run recovers a slot an earlier attempt did not finish
// (Job.Recover, S9); false for a ctx that is not a run's.
func AttemptFrom(ctx context.Context) (int, bool) {
	if ri, ok := ctx.Value(runKey{}).(*runInfo); ok {
		return ri.attempt, true
	}
	return 0, false
}
