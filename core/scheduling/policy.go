package scheduling

import (
	"fmt"
	"strings"
)

// OverlapPolicy decides what happens to a slot that falls due while the
// job's previous run is still going (S2, S7). The zero value means
// OverlapSkip.
type OverlapPolicy int

// Overlap policies.
const (
	// OverlapSkip skips the slot and counts it (S2). The default.
	OverlapSkip OverlapPolicy = iota + 1
	// OverlapBufferOne runs once more right after the current run ends,
	// for the latest slot that fell due meanwhile (not once per slot).
	OverlapBufferOne
	// OverlapCancelPrevious cancels the running run's ctx, waits for it
	// to return, then starts the new slot.
	OverlapCancelPrevious
)

var overlapNames = [...]string{OverlapSkip: "skip", OverlapBufferOne: "buffer_one", OverlapCancelPrevious: "cancel_previous"}

// String returns the policy's name as config spells it: skip, buffer_one,
// cancel_previous; the zero value is "skip" (the default).
func (p OverlapPolicy) String() string {
	if p == 0 {
		return overlapNames[OverlapSkip]
	}
	if p > 0 && int(p) < len(overlapNames) {
		return overlapNames[p]
	}
	return fmt.Sprintf("OverlapPolicy(%d)", int(p))
}

// MarshalText implements encoding.TextMarshaler; an unknown value is an
// error naming it.
func (p OverlapPolicy) MarshalText() ([]byte, error) {
	if p < 0 || int(p) >= len(overlapNames) {
		return nil, fmt.Errorf("scheduling: unknown overlap policy %d", int(p))
	}
	return []byte(p.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler for config: skip,
// buffer_one or cancel_previous (case-insensitive, '-' for '_'). Anything
// else is an error naming the value and the choices.
func (p *OverlapPolicy) UnmarshalText(b []byte) error {
	s := normalize(b)
	for i, name := range overlapNames {
		if name != "" && name == s {
			*p = OverlapPolicy(i)
			return nil
		}
	}
	return fmt.Errorf("scheduling: unknown overlap policy %q (want skip, buffer_one or cancel_previous)", string(b))
}

func (p OverlapPolicy) valid() bool { return p >= 0 && int(p) < len(overlapNames) }

// CatchUpPolicy decides which slots nobody started a new leader runs when
// it starts leading (S8). The zero value means CatchUpLatest.
type CatchUpPolicy int

// Catch-up policies.
const (
	// CatchUpLatest runs the latest unrecorded slot within the misfire
	// window, once. The default.
	CatchUpLatest CatchUpPolicy = iota + 1
	// CatchUpAll runs every unrecorded slot within the misfire window,
	// oldest first, one at a time (at most MaxCatchUp of them, the newest).
	CatchUpAll
	// CatchUpNone runs none of them.
	CatchUpNone
)

// MaxCatchUp bounds the slots CatchUpAll runs after one change of leader;
// older slots in the window are counted as missed.
const MaxCatchUp = 1000

var catchUpNames = [...]string{CatchUpLatest: "latest", CatchUpAll: "all", CatchUpNone: "none"}

// String returns the policy's name as config spells it: latest, all, none;
// the zero value is "latest" (the default).
func (p CatchUpPolicy) String() string {
	if p == 0 {
		return catchUpNames[CatchUpLatest]
	}
	if p > 0 && int(p) < len(catchUpNames) {
		return catchUpNames[p]
	}
	return fmt.Sprintf("CatchUpPolicy(%d)", int(p))
}

// MarshalText implements encoding.TextMarshaler; an unknown value is an
// error naming it.
func (p CatchUpPolicy) MarshalText() ([]byte, error) {
	if p < 0 || int(p) >= len(catchUpNames) {
		return nil, fmt.Errorf("scheduling: unknown catch-up policy %d", int(p))
	}
	return []byte(p.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler for config: latest,
// all or none (case-insensitive). Anything else is an error naming the
// value and the choices.
func (p *CatchUpPolicy) UnmarshalText(b []byte) error {
	s := normalize(b)
	for i, name := range catchUpNames {
		if name != "" && name == s {
			*p = CatchUpPolicy(i)
			return nil
		}
	}
	return fmt.Errorf("scheduling: unknown catch-up policy %q (want latest, all or none)", string(b))
}

func (p CatchUpPolicy) valid() bool { return p >= 0 && int(p) < len(catchUpNames) }

func normalize(b []byte) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(string(b))), "-", "_")
}
