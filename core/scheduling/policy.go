package scheduling

import "github.com/hostloom/hostloom/core/scheduling/policy"

// OverlapPolicy decides what happens to a slot that falls due while the
// job's previous run is still going (S2, S7). The zero value means
// OverlapSkip. It is defined in package policy (so that config can decode
// it without linking the scheduler) and is the same type.
type OverlapPolicy = policy.OverlapPolicy

// Overlap policies.
const (
	// OverlapSkip skips the slot and counts it (S2). The default.
	OverlapSkip = policy.OverlapSkip
	// OverlapBufferOne runs once more right after the current run ends,
	// for the latest slot that fell due meanwhile (not once per slot).
	OverlapBufferOne = policy.OverlapBufferOne
	// OverlapCancelPrevious cancels the running run's ctx, waits for it
	// to return, then starts the new slot.
	OverlapCancelPrevious = policy.OverlapCancelPrevious
)

// CatchUpPolicy decides which slots nobody started a new leader runs when
// it starts leading (S8). The zero value means CatchUpLatest. It is
// defined in package policy and is the same type.
type CatchUpPolicy = policy.CatchUpPolicy

// Catch-up policies.
const (
	// CatchUpLatest runs the latest unrecorded slot within the misfire
	// window, once. The default.
	CatchUpLatest = policy.CatchUpLatest
	// CatchUpAll runs every unrecorded slot within the misfire window,
	// oldest first, one at a time (at most MaxCatchUp of them, the newest).
	CatchUpAll = policy.CatchUpAll
	// CatchUpNone runs none of them.
	CatchUpNone = policy.CatchUpNone
)

// MaxCatchUp bounds the slots CatchUpAll runs after one change of leader;
// older slots in the window are counted as missed.
const MaxCatchUp = policy.MaxCatchUp
