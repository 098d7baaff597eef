package policy

import (
	"fmt"
	"strings"
	"time"
)

// DefaultMisfireWindow is how old a slot nobody started may be for a new
// leader to still run it (S3); scheduling.DefaultMisfireWindow is the same
// constant.
const DefaultMisfireWindow = time.Minute

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

var overlapNames = policyNames[OverlapPolicy]{typ: "OverlapPolicy", kind: "overlap policy",
	names: []string{OverlapSkip: "skip", OverlapBufferOne: "buffer_one", OverlapCancelPrevious: "cancel_previous"}}

// String returns the policy's name as config spells it: skip, buffer_one,
// cancel_previous; the zero value is "skip" (the default).
func (p OverlapPolicy) String() string { return overlapNames.name(p) }

// MarshalText implements encoding.TextMarshaler; an unknown value is an
// error naming it.
func (p OverlapPolicy) MarshalText() ([]byte, error) { return overlapNames.marshal(p) }

// UnmarshalText implements encoding.TextUnmarshaler for config: skip,
// buffer_one or cancel_previous (case-insensitive, '-' for '_'). Anything
// else is an error naming the value and the choices.
func (p *OverlapPolicy) UnmarshalText(b []byte) error { return overlapNames.unmarshal(p, b) }

// Valid reports whether p is the zero value (the default) or one of the
// named policies.
func (p OverlapPolicy) Valid() bool { return overlapNames.valid(p) }

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

var catchUpNames = policyNames[CatchUpPolicy]{typ: "CatchUpPolicy", kind: "catch-up policy",
	names: []string{CatchUpLatest: "latest", CatchUpAll: "all", CatchUpNone: "none"}}

// String returns the policy's name as config spells it: latest, all, none;
// the zero value is "latest" (the default).
func (p CatchUpPolicy) String() string { return catchUpNames.name(p) }

// MarshalText implements encoding.TextMarshaler; an unknown value is an
// error naming it.
func (p CatchUpPolicy) MarshalText() ([]byte, error) { return catchUpNames.marshal(p) }

// UnmarshalText implements encoding.TextUnmarshaler for config: latest,
// all or none (case-insensitive). Anything else is an error naming the
// value and the choices.
func (p *CatchUpPolicy) UnmarshalText(b []byte) error { return catchUpNames.unmarshal(p, b) }

// Valid reports whether p is the zero value (the default) or one of the
// named policies.
func (p CatchUpPolicy) Valid() bool { return catchUpNames.valid(p) }

// policyNames is a policy type's name table: names[v] is the config name
// of value v; names[0] is empty, as the zero value stands for the
// default, 1. typ (the Go type) shows an unknown value, kind names the
// policy in errors.
type policyNames[P ~int] struct {
	typ, kind string
	names     []string
}

func (t policyNames[P]) valid(p P) bool { return p >= 0 && int(p) < len(t.names) }

func (t policyNames[P]) name(p P) string {
	switch {
	case p == 0:
		return t.names[1]
	case t.valid(p):
		return t.names[p]
	}
	return fmt.Sprintf("%s(%d)", t.typ, int(p))
}

func (t policyNames[P]) marshal(p P) ([]byte, error) {
	if !t.valid(p) {
		return nil, fmt.Errorf("scheduling: unknown %s %d", t.kind, int(p))
	}
	return []byte(t.name(p)), nil
}

func (t policyNames[P]) unmarshal(p *P, b []byte) error {
	s := normalize(b)
	for i, name := range t.names {
		if name != "" && name == s {
			*p = P(i)
			return nil
		}
	}
	choices := t.names[1:]
	return fmt.Errorf("scheduling: unknown %s %q (want %s or %s)", t.kind, string(b),
		strings.Join(choices[:len(choices)-1], ", "), choices[len(choices)-1])
}

func normalize(b []byte) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(string(b))), "-", "_")
}
