package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// EffectStats counts the fenced effects of a run: every work slice writes
// one through the fencing gate to the effects store.
type EffectStats struct {
	// Attempted is the number of work records that carry an outcome.
	Attempted int
	// Accepted, Refused and Errors split Attempted by the outcome the
	// writer saw: admitted, refused as stale, or an error (unknown
	// outcome).
	Accepted, Refused, Errors int
	// Stored is the number of entries in the effects store: the accepted
	// effects, in the order the store accepted them.
	Stored int
	// Unrecorded counts stored entries without a work record (the writer
	// was killed, or its reply was an error); they are judged like any
	// other entry.
	Unrecorded int
	// Duplicates counts stored entries seen before (identity, role, seq).
	Duplicates int
	// LateAccepted counts stored entries written after a successor's work
	// began: the deposed leader's write still landed, because the
	// successor had not written yet. Store order stays safe; this is the
	// case a fence check must allow, counted to show it happens.
	LateAccepted int
}

// StaleEffect is an accepted effect whose fence is lower than one the store
// had already accepted for the role: two terms' effects interleave.
type StaleEffect struct {
	Role string
	// Index is the entry's position in the role's effect log.
	Index int
	Entry EffectEntry
	// Highest is the entry with the highest fence stored before it.
	Highest EffectEntry
}

// String names the role, the position and both entries.
func (s StaleEffect) String() string {
	return fmt.Sprintf("role %s entry %d: %s (fence %d) accepted after %s (fence %d)",
		s.Role, s.Index, s.Entry.Identity, s.Entry.Fence, s.Highest.Identity, s.Highest.Fence)
}

// AssertWindows are the checks of leadership.Assert that passed after a
// successor began: for each work slice, Record.Start (just before the
// call) and Record.Checked (just after it returned nil) bound the check;
// B.Start (the successor's first slice, after its acquisition) is later
// than the backend's expiry of the earlier lease, which is later than the
// earlier leader's local deadline. In each Overlap, A is the checking
// tenure, B the successor's, Length how far after B.Start the check
// returned (Record.Checked - B.Start, the longest per pair).
type AssertWindows struct {
	// Paused, LateExpiry and Other are checks that began at or after the
	// successor's start (Record.Start >= B.Start) and passed: by a paused
	// replica, within Limits.ExpiryRace, or otherwise. Each is a problem:
	// Assert consults the clock, so none should exist (target 0).
	Paused, LateExpiry, Other []Overlap
	// LostState are checks that passed after the backend lost the lease
	// (restart, failover): the local deadline was still ahead. Bounded
	// like lost-state overlaps.
	LostState []Overlap
	// Straddles are checks that began before the successor's start and
	// returned after it: the process was not running somewhere between the
	// clock read inside Assert and the next one (check-then-act). Whether
	// the check itself came late is unknown; they are reported, not
	// failed: a fence closes that gap, Assert cannot.
	Straddles []Overlap
	// Revived are terms whose Assert passed after a pause longer than the
	// lease although the term began before the pause: its deadline had
	// passed while the process was stopped (a renewal that lands after
	// the deadline must not revive a term, G3). Each is a problem, with
	// or without a successor.
	Revived []string
}

// maxLen is the longest Length in list.
func maxLen(list []Overlap) time.Duration {
	var d time.Duration
	for _, o := range list {
		d = max(d, o.Length)
	}
	return d
}

// recKey names one work slice: incarnation, role, sequence number.
type recKey struct {
	identity, role string
	seq            uint64
}

// termKey names one tenure: incarnation and term.
type termKey struct {
	identity string
	term     uint64
}

// checkEffects judges one role's effect log (entries in store order)
// against the role's work records (slices) and tenures (sorted by start).
func (r *Report) checkEffects(role string, entries []string, slices, tenures []Record) {
	byKey := make(map[recKey]Record, len(slices))
	for _, rec := range slices {
		if rec.Effect == "" {
			continue
		}
		byKey[recKey{rec.Identity, role, rec.Seq}] = rec
		r.Effects.Attempted++
		switch {
		case rec.Effect == EffectAccepted:
			r.Effects.Accepted++
		case rec.Effect == EffectStale:
			r.Effects.Refused++
		default:
			r.Effects.Errors++
		}
	}
	succ := successorStarts(tenures)
	stored := make(map[recKey]bool, len(entries))
	fenceOf := map[termKey]uint64{} // the fence each term wrote with
	termOf := map[uint64]termKey{}  // the term each fence belongs to
	closed := map[termKey]bool{}    // terms followed by another term's entry
	var highest EffectEntry         // the entry with the highest fence so far
	var current termKey             // the term of the previous entry
	for i, s := range entries {
		e, err := ParseEffectEntry(s)
		if err != nil {
			r.EffectProblems = append(r.EffectProblems, fmt.Sprintf("role %s entry %d: %v", role, i, err))
			continue
		}
		r.Effects.Stored++
		k := recKey{e.Identity, role, e.Seq}
		if stored[k] {
			r.Effects.Duplicates++
		}
		stored[k] = true
		t := termKey{e.Identity, e.Term}
		if e.Fence < highest.Fence {
			r.StaleAccepted = append(r.StaleAccepted, StaleEffect{Role: role, Index: i, Entry: e, Highest: highest})
		} else {
			highest = e
		}
		if f, ok := fenceOf[t]; ok && f != e.Fence {
			r.EffectProblems = append(r.EffectProblems, fmt.Sprintf("role %s entry %d: %s term %d wrote with fence %d and %d", role, i, e.Identity, e.Term, f, e.Fence))
		}
		fenceOf[t] = e.Fence
		if o, ok := termOf[e.Fence]; ok && o != t {
			r.EffectProblems = append(r.EffectProblems, fmt.Sprintf("role %s entry %d: fence %d carried by %s term %d and %s term %d", role, i, e.Fence, o.identity, o.term, e.Identity, e.Term))
		}
		termOf[e.Fence] = t
		if t != current {
			if closed[t] {
				r.Interleavings = append(r.Interleavings, fmt.Sprintf("role %s entry %d: %s term %d (fence %d) wrote again after %s term %d", role, i, e.Identity, e.Term, e.Fence, current.identity, current.term))
			}
			if current.identity != "" {
				closed[current] = true
			}
			current = t
		}
		rec, ok := byKey[k]
		switch {
		case !ok:
			r.Effects.Unrecorded++
		case rec.Effect == EffectStale:
			r.EffectProblems = append(r.EffectProblems, fmt.Sprintf("role %s entry %d: %s seq %d was refused as stale but is in the store", role, i, e.Identity, e.Seq))
		default:
			if start, ok := succ[termKey{rec.Identity, rec.Term}]; ok && rec.EffectAt >= start {
				r.Effects.LateAccepted++
			}
		}
	}
	for k, rec := range byKey {
		if rec.Effect == EffectAccepted && !stored[k] {
			r.EffectProblems = append(r.EffectProblems, fmt.Sprintf("role %s: %s seq %d (fence %d) was accepted but is not in the store", role, k.identity, k.seq, rec.Fence))
		}
	}
}

// successorStarts maps each tenure to the start of the first later tenure
// of another incarnation (tenures sorted by start).
func successorStarts(tenures []Record) map[termKey]int64 {
	out := map[termKey]int64{}
	for i, a := range tenures {
		for _, b := range tenures[i+1:] {
			if b.Identity != a.Identity && b.Start > a.Start {
				out[termKey{a.Identity, a.Term}] = b.Start
				break
			}
		}
	}
	return out
}

// checkAsserts finds the Assert checks of one role that passed after a
// successor began (see AssertWindows).
func (r *Report) checkAsserts(role string, slices, tenures []Record, faults []Fault, lim Limits) {
	type pair struct{ a, b termKey }
	worst := map[pair]Overlap{}
	definite := map[pair]bool{}
	tenure := map[termKey]Record{}
	for _, t := range tenures {
		tenure[termKey{t.Identity, t.Term}] = t
	}
	for _, rec := range slices {
		if rec.Checked == 0 {
			continue
		}
		a := tenure[termKey{rec.Identity, rec.Term}]
		for _, b := range tenures {
			if b.Identity == rec.Identity || b.Start <= a.Start || b.Start > rec.Checked {
				continue
			}
			p := pair{termKey{a.Identity, a.Term}, termKey{b.Identity, b.Term}}
			o := Overlap{Role: role, A: a, B: b, Length: time.Duration(rec.Checked - b.Start)}
			if rec.Start >= b.Start {
				definite[p] = true
			}
			if o.Length > worst[p].Length {
				worst[p] = o
			}
		}
	}
	revived := map[termKey]bool{}
	for _, f := range faults {
		if f.Kind != FaultPause || f.Heal.Sub(f.Start) <= lim.Lease {
			continue
		}
		for _, rec := range slices {
			k := termKey{rec.Identity, rec.Term}
			if rec.Checked == 0 || rec.Identity != f.Identity || revived[k] || rec.Start < f.Heal.UnixNano() || tenure[k].Start >= f.Start.UnixNano() {
				continue
			}
			revived[k] = true
			r.Asserts.Revived = append(r.Asserts.Revived, fmt.Sprintf("role %s: %s term %d began at %s, Assert passed at %s after fault %s",
				role, rec.Identity, rec.Term, clock(tenure[k].Start), clock(rec.Checked), f))
		}
	}
	pairs := make([]pair, 0, len(worst))
	for p := range worst {
		pairs = append(pairs, p)
	}
	sort.Slice(pairs, func(i, j int) bool { return worst[pairs[i]].B.Start < worst[pairs[j]].B.Start })
	for _, p := range pairs {
		o := worst[p]
		checked := o.B.Start + int64(o.Length)
		if f, ok := lostStateFault(o, faults, lim); ok {
			o.Window = time.Duration(checked - f.Heal.UnixNano())
			o.Fault = f.String()
			r.Asserts.LostState = append(r.Asserts.LostState, o)
			continue
		}
		if !definite[p] {
			r.Asserts.Straddles = append(r.Asserts.Straddles, o)
			continue
		}
		if f, ok := pausedBefore(o.A.Identity, checked, faults, lim); ok {
			o.Window = time.Duration(checked - f.Heal.UnixNano())
			o.Fault = f.String()
			r.Asserts.Paused = append(r.Asserts.Paused, o)
			continue
		}
		if o.Length <= lim.ExpiryRace {
			r.Asserts.LateExpiry = append(r.Asserts.LateExpiry, o)
			continue
		}
		r.Asserts.Other = append(r.Asserts.Other, o)
	}
}

// lostStateFault returns the fault after which the backend lost the lease
// that explains o, as classify does for overlaps.
func lostStateFault(o Overlap, faults []Fault, lim Limits) (Fault, bool) {
	for _, f := range faults {
		if !f.LostState {
			continue
		}
		if o.B.Start >= f.Start.UnixNano() && o.B.Start <= f.Heal.Add(lim.Lease+lim.slack()).UnixNano() && o.A.Start < f.Heal.UnixNano() {
			return f, true
		}
	}
	return Fault{}, false
}

// pausedBefore returns a pause of identity that began before at and ended
// within a lease before it.
func pausedBefore(identity string, at int64, faults []Fault, lim Limits) (Fault, bool) {
	for _, f := range faults {
		if f.Kind == FaultPause && f.Identity == identity && f.Start.UnixNano() <= at && f.Heal.Add(lim.Lease).UnixNano() >= at {
			return f, true
		}
	}
	return Fault{}, false
}

// effectProblems lists the violations of the fenced judgement.
func (r *Report) effectProblems() []string {
	var p []string
	for _, s := range r.StaleAccepted {
		p = append(p, "stale effect accepted: "+s.String())
	}
	for _, s := range r.Interleavings {
		p = append(p, "interleaved terms: "+s)
	}
	for _, s := range r.EffectProblems {
		p = append(p, "effects: "+s)
	}
	for _, group := range []struct {
		name string
		list []Overlap
	}{{"paused", r.Asserts.Paused}, {"late-expiry", r.Asserts.LateExpiry}, {"other", r.Asserts.Other}} {
		for _, o := range group.list {
			p = append(p, fmt.Sprintf("Assert passed after a successor began (%s): %s", group.name, o))
		}
	}
	for _, s := range r.Asserts.Revived {
		p = append(p, "term revived after a pause beyond the lease: "+s)
	}
	for _, o := range r.Asserts.LostState {
		if o.Window > r.Limits.Lease+r.Limits.slack() {
			p = append(p, fmt.Sprintf("Assert passed %v after a lost-state fault healed, beyond lease %v + %v: %s", o.Window, r.Limits.Lease, r.Limits.slack(), o))
		}
	}
	return p
}

// effectSummary writes the fenced and Assert-checked lines of Summary.
func (r *Report) effectSummary(b *strings.Builder) {
	e := r.Effects
	fmt.Fprintf(b, "fenced effects (fencing gate, separate redis-server): attempted %d: accepted %d, refused stale %d, errors %d; in the store %d (unrecorded %d, duplicates %d); accepted after a successor began %d\n",
		e.Attempted, e.Accepted, e.Refused, e.Errors, e.Stored, e.Unrecorded, e.Duplicates, e.LateAccepted)
	fmt.Fprintf(b, "stale accepted effects: %d, interleaved terms: %d, other effect problems: %d (all must be 0)\n",
		len(r.StaleAccepted), len(r.Interleavings), len(r.EffectProblems))
	a := r.Asserts
	fmt.Fprintf(b, "Assert-checked work, checks passed after a successor began: paused %d, late-expiry %d, other %d; terms revived after a pause %d (all must be 0); lost-state %d, longest %v; straddling (check-then-act) %d, longest %v\n",
		len(a.Paused), len(a.LateExpiry), len(a.Other), len(a.Revived), len(a.LostState), maxLen(a.LostState), len(a.Straddles), maxLen(a.Straddles))
	for i, o := range a.Straddles {
		if i == 5 {
			fmt.Fprintf(b, "  ... %d more\n", len(a.Straddles)-i)
			break
		}
		fmt.Fprintf(b, "  straddle %s\n", o)
	}
}
