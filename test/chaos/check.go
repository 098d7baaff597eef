package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Limits are the timing bounds the checker judges a history against.
type Limits struct {
	// Lease is the elector lease of the run.
	Lease time.Duration
	// RetryInterval is the elector retry interval of the run.
	RetryInterval time.Duration
	// Slack is added to Lease+RetryInterval for the recovery bound
	// (process scheduling, round trips). Default 100 ms when zero.
	Slack time.Duration
	// ClockTolerance is how far a work record's wall-clock length may
	// differ from its monotonic length before the run's clock is
	// distrusted. Default 10 ms when zero.
	ClockTolerance time.Duration
	// ExpiryRace is how late a leader that was not paused by the harness
	// may notice that its lease ended: an overlap at a handover (the
	// earlier tenure ends while the later one runs) of at most ExpiryRace
	// is reported as a late-expiry window instead of failing the run. The
	// elector ends a term at a local deadline measured from when the
	// renewal was sent, which precedes the backend's expiry only by the
	// request's one-way latency; a process that the operating system does
	// not schedule at that moment notices a few milliseconds late, the
	// window the spec documents ("the previous leader may still believe it
	// leads"). Zero is strict; DefaultExpiryRace gives Redlock's clock
	// drift allowance.
	ExpiryRace time.Duration
	// Slice is the nominal length of a work slice (the replica's -slice).
	// A last slice that ran longer is evidence that the process stalled
	// (StalledWindows); zero turns that classification off.
	Slice time.Duration
	// ExpiryLag is how long after a lease expires the backend may take to
	// end it: etcd ends expired leases on a 500 ms tick (EtcdExpiryLag),
	// the other backends at once (zero). It is added to the recovery
	// bound.
	ExpiryLag time.Duration
	// ExpiryWait is how long a role whose lease ended without a release
	// waits before anyone takes it (etcdlock's ExpiryQuarantine: the
	// lease in whole seconds), zero without one. It is added to the
	// recovery bound.
	ExpiryWait time.Duration
	// BalanceWait is how long a balancing candidate that leads its share
	// lets the others try first for a role whose holder's lease runs out
	// (B1: one RetryInterval); zero without balancing. After a crash every
	// survivor may lead its share, the crashed process still counted
	// until its participant record expires, so all of them wait it. It is
	// added to the recovery bound.
	BalanceWait time.Duration
}

// DefaultExpiryRace is Redlock's clock drift allowance for a lease:
// 1% of it plus 2 ms.
func DefaultExpiryRace(lease time.Duration) time.Duration {
	return lease/100 + 2*time.Millisecond
}

// RecoveryBound is the longest a role may stay leaderless after a fault
// heals: Lease + RetryInterval + Slack + ExpiryLag + ExpiryWait +
// BalanceWait.
func (l Limits) RecoveryBound() time.Duration {
	return l.Lease + l.RetryInterval + l.slack() + l.ExpiryLag + l.ExpiryWait + l.BalanceWait
}

func (l Limits) slack() time.Duration {
	if l.Slack > 0 {
		return l.Slack
	}
	return 100 * time.Millisecond
}

func (l Limits) clockTolerance() time.Duration {
	if l.ClockTolerance > 0 {
		return l.ClockTolerance
	}
	return 10 * time.Millisecond
}

// History is everything the checker judges: the replicas' records and the
// harness's own log.
type History struct {
	Roles   []string
	Records []Record
	// Effects are the effect logs read from the effects store at the end:
	// per role, the entries the fencing gate accepted, in the order it
	// accepted them. Nil for a run without fenced effects (not judged).
	Effects      map[string][]string
	Faults       []Fault
	Incarnations []Incarnation
	// From and To bound the leaderless-gap measurement: From is when every
	// replica had started (plus one recovery bound for the first
	// election), To when the harness began shutting the replicas down.
	From, To time.Time
}

// Overlap is two replicas doing work for one role at once. A and B are
// tenures: the work records of one incarnation and term merged into one.
type Overlap struct {
	Role string
	// A started first; B started while A still worked.
	A, B Record
	// Length is how long both worked at once.
	Length time.Duration
	// Window, for a paused-process overlap, is how long the paused replica
	// kept working after it resumed (must stay within the lease); for a
	// lost-state overlap, how long after the fault healed the overlap
	// ended.
	Window time.Duration
	// Fault is the fault that explains the overlap ("" when none does).
	Fault string
	// Kind is that fault's kind ("" when none explains it).
	Kind FaultKind
	// Stall is the longest work slice of A's term in the lease before the
	// overlap began: far above the replica's slice length, it shows that
	// A's process was not running (not scheduled) when its lease ran out.
	Stall time.Duration
}

// String describes the overlap with both tenures and, when explained, its window and fault.
func (o Overlap) String() string {
	s := fmt.Sprintf("role %s: %s term %d [%s, %s] and %s term %d [%s, %s] overlap %v",
		o.Role, o.A.Identity, o.A.Term, clock(o.A.Start), clock(o.A.End),
		o.B.Identity, o.B.Term, clock(o.B.Start), clock(o.B.End), o.Length)
	if o.Fault != "" {
		s += fmt.Sprintf(" (window %v, fault %s)", o.Window, o.Fault)
	}
	if o.Stall > 0 {
		s += fmt.Sprintf(" (longest slice of %s before: %v)", o.A.Identity, o.Stall)
	}
	return s
}

func clock(ns int64) string { return time.Unix(0, ns).UTC().Format("15:04:05.000000") }

// Gap is a time during which no replica worked for a role.
type Gap struct {
	Role     string
	From, To time.Time
	// Counted is the part of the gap judged against the recovery bound:
	// from the later of From and the heal of a backend outage inside it.
	Counted time.Duration
	// Bound is what Counted is judged against: RecoveryBound, plus the
	// delay of a delay fault on the previous leader's link (see
	// previousLeaderFault).
	Bound time.Duration
	Cause string
}

// String describes the gap and the part counted against the recovery bound.
func (g Gap) String() string {
	return fmt.Sprintf("role %s leaderless %v from %s (counted %v, bound %v%s)", g.Role,
		g.To.Sub(g.From), g.From.UTC().Format("15:04:05.000"), g.Counted, g.Bound, g.Cause)
}

// Report is the checker's verdict.
type Report struct {
	Limits       Limits
	Faults       int
	FaultsByKind map[FaultKind]int
	Incarnations int
	WorkRecords  int
	Handovers    int
	// memberFaults counts the faults marked Member.
	memberFaults int

	// Overlaps are unexplained overlaps: each breaks the guarantee.
	Overlaps []Overlap
	// PausedWindows are overlaps explained by a paused replica that
	// resumed before noticing its lease expired; their Window must stay
	// within the lease.
	PausedWindows   []Overlap
	MaxPausedWindow time.Duration
	// LateExpiry are overlaps at a handover no longer than
	// Limits.ExpiryRace, by a leader the harness did not pause: it noticed
	// the end of its lease that much after a successor took over.
	LateExpiry    []Overlap
	MaxLateExpiry time.Duration
	// StalledWindows are overlaps at a handover explained by a stalled
	// earlier leader: its last work slice, which ends the moment the token
	// is cancelled, ran longer than Limits.Slice by at least the overlap
	// less Limits.ExpiryRace. The process was not scheduled when its lease
	// ended (CPU load), as a paused process is not; each must stay within
	// the lease, the window the spec documents.
	StalledWindows   []Overlap
	MaxStalledWindow time.Duration
	// LostStateOverlaps are overlaps after the backend lost leases it had
	// granted (restart, failover): outside the guarantee, reported and
	// bounded: each must end within Lease + Slack of the fault's heal.
	LostStateOverlaps []Overlap
	// MemberFaultOverlaps are overlaps that began during a fault of a
	// member of a consensus cluster (Fault.Member: a member killed,
	// paused or cut off, the cluster's leader killed, the whole cluster
	// restarted) or within a lease and the slack after its heal, and that
	// no pause or stall of the replica itself explains. The backend keeps
	// every acknowledged lease across such faults: each breaks the
	// guarantee.
	MemberFaultOverlaps []Overlap

	// MaxGap is the longest leaderless time of any role, outages included;
	// MaxCountedGap the longest counted against the recovery bound.
	MaxGap        Gap
	MaxCountedGap Gap
	SlowRecovery  []Gap

	Crashes     []string
	Leaks       []string
	ClockIssues []string

	// Effects counts the fenced effects (History.Effects).
	Effects EffectStats
	// StaleAccepted are accepted effects whose fence is lower than one
	// accepted before them for the role: never excused.
	StaleAccepted []StaleEffect
	// Interleavings are terms whose effects resume in the store after
	// another term's: never excused.
	Interleavings []string
	// EffectProblems are the other inconsistencies between the store and
	// the records: an entry that does not parse, a term with two fences, a
	// fence shared by two terms, an accepted write missing from the store,
	// a refused write present in it.
	EffectProblems []string
	// Asserts are the leadership.Assert checks that passed after a
	// successor began.
	Asserts AssertWindows
}

// Category is one kind of window in which two replicas did unfenced work
// for one role at once. Each has its own cause and its own remedy; the
// checker counts them apart so that a run shows which of them occurred
// and how long each lasted.
type Category string

// The categories, in the order the summary lists them.
const (
	// CategoryPaused: an effect in flight across a pause. The harness
	// stopped a leader (SIGSTOP) past its lease; after SIGCONT its work
	// slice still ran until it checked the term. Closed by a fence
	// checked where the effect lands.
	CategoryPaused Category = "paused"
	// CategoryStateLoss: the lock server restarted without persistence
	// (or was down and came back empty) and forgot the leader's lease; a
	// candidate took the role before the leader learned it. Narrowed by
	// the leader's immediate verification on reconnect and its reaction
	// to the new holder's announcement; closed by quarantine after state
	// loss, or by a fence.
	CategoryStateLoss Category = "state-loss"
	// CategoryFailover: a failover to a replica that missed the
	// acquisition or the renewal (asynchronous replication). Closed by
	// waiting for replica acknowledgement, or by a fence.
	CategoryFailover Category = "failover"
	// CategoryLateExpiry: a leader noticed the end of its lease up to the
	// expiry tolerance after a successor began (clock drift, scheduling).
	// Closed by a fence.
	CategoryLateExpiry Category = "late-expiry"
	// CategoryStalled: a leader whose process was not scheduled when its
	// lease ran out. Closed by a fence.
	CategoryStalled Category = "stalled"
	// CategoryMemberFault: an overlap that began during a fault of a
	// member of a consensus cluster (or within a lease of its heal), not
	// explained by a pause or stall of the replica itself. A backend that
	// commits to a majority keeps its leases across those faults: a broken
	// guarantee.
	CategoryMemberFault Category = "member-fault"
	// CategoryUnexplained: an overlap no fault explains: a broken
	// guarantee.
	CategoryUnexplained Category = "unexplained"
)

// Categories lists every category in summary order.
var Categories = []Category{CategoryPaused, CategoryStateLoss, CategoryFailover, CategoryLateExpiry, CategoryStalled, CategoryMemberFault, CategoryUnexplained}

// describe is the category's one-line description for the summary.
func (c Category) describe() string {
	switch c {
	case CategoryPaused:
		return "effect in flight across a pause"
	case CategoryStateLoss:
		return "state loss (restart without persistence)"
	case CategoryFailover:
		return "failover without acknowledgement"
	case CategoryLateExpiry:
		return "expiry noticed late"
	case CategoryStalled:
		return "leader not scheduled at its expiry"
	case CategoryMemberFault:
		return "during a cluster member's fault (breaks it)"
	default:
		return "unexplained (breaks the guarantee)"
	}
}

// CategoryStats is one category's count and longest overlap.
type CategoryStats struct {
	Category Category
	Count    int
	// MaxOverlap is the longest time two replicas worked at once.
	MaxOverlap time.Duration
}

// Windows returns every category's count and longest overlap, in the
// order of Categories (categories with no overlap included, with zeros).
func (r *Report) Windows() []CategoryStats {
	byCat := map[Category]*CategoryStats{}
	out := make([]CategoryStats, len(Categories))
	for i, c := range Categories {
		out[i].Category = c
		byCat[c] = &out[i]
	}
	add := func(c Category, os []Overlap) {
		st := byCat[c]
		for _, o := range os {
			st.Count++
			st.MaxOverlap = max(st.MaxOverlap, o.Length)
		}
	}
	add(CategoryPaused, r.PausedWindows)
	var lost, failed []Overlap
	for _, o := range r.LostStateOverlaps {
		if isFailover(o.Kind) {
			failed = append(failed, o)
		} else {
			lost = append(lost, o)
		}
	}
	add(CategoryStateLoss, lost)
	add(CategoryFailover, failed)
	add(CategoryLateExpiry, r.LateExpiry)
	add(CategoryStalled, r.StalledWindows)
	add(CategoryMemberFault, r.MemberFaultOverlaps)
	add(CategoryUnexplained, r.Overlaps)
	return out
}

// isFailover reports whether k promotes a replica (the Cluster and
// Sentinel kinds, named so on every platform).
func isFailover(k FaultKind) bool {
	return strings.Contains(string(k), "failover") || strings.Contains(string(k), "kill-master")
}

// Problems lists every violation; an empty list means the run passed.
func (r *Report) Problems() []string {
	var p []string
	for _, o := range r.Overlaps {
		p = append(p, "overlap: "+o.String())
	}
	for _, o := range r.MemberFaultOverlaps {
		p = append(p, "overlap during a member fault: "+o.String())
	}
	for _, o := range r.PausedWindows {
		if o.Window > r.Limits.Lease {
			p = append(p, fmt.Sprintf("paused window %v exceeds the lease %v: %s", o.Window, r.Limits.Lease, o))
		}
	}
	for _, o := range r.StalledWindows {
		if o.Length > r.Limits.Lease {
			p = append(p, fmt.Sprintf("stalled window %v exceeds the lease %v: %s", o.Length, r.Limits.Lease, o))
		}
	}
	for _, o := range r.LostStateOverlaps {
		if o.Window > r.Limits.Lease+r.Limits.slack() {
			p = append(p, fmt.Sprintf("lost-state overlap ends %v after the fault healed, beyond lease %v + %v: %s", o.Window, r.Limits.Lease, r.Limits.slack(), o))
		}
	}
	for _, g := range r.SlowRecovery {
		p = append(p, "slow recovery: "+g.String())
	}
	for _, c := range r.Crashes {
		p = append(p, "crash: "+c)
	}
	for _, l := range r.Leaks {
		p = append(p, "goroutine leak: "+l)
	}
	for _, c := range r.ClockIssues {
		p = append(p, "clock: "+c)
	}
	return append(p, r.effectProblems()...)
}

// OK reports whether the run kept every promise.
func (r *Report) OK() bool { return len(r.Problems()) == 0 }

// Summary is the human-readable verdict.
func (r *Report) Summary() string {
	var b strings.Builder
	kinds := make([]string, 0, len(r.FaultsByKind))
	for k, n := range r.FaultsByKind {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	fmt.Fprintf(&b, "faults injected: %d (%s)\n", r.Faults, strings.Join(kinds, " "))
	fmt.Fprintf(&b, "incarnations: %d, work records: %d, handovers: %d\n", r.Incarnations, r.WorkRecords, r.Handovers)
	b.WriteString("unfenced overlap by category (count, longest overlap):\n")
	for _, w := range r.Windows() {
		fmt.Fprintf(&b, "  %-12s %-44s %6d  %v\n", w.Category, w.Category.describe(), w.Count, w.MaxOverlap)
	}
	fmt.Fprintf(&b, "overlaps: %d (must be 0)\n", len(r.Overlaps))
	if r.memberFaults > 0 {
		fmt.Fprintf(&b, "overlaps during %d cluster member faults: %d (must be 0)\n", r.memberFaults, len(r.MemberFaultOverlaps))
	}
	fmt.Fprintf(&b, "late-expiry windows (not paused, noticed expiry late, tolerance %v): %d, longest %v\n", r.Limits.ExpiryRace, len(r.LateExpiry), r.MaxLateExpiry)
	for i, o := range r.LateExpiry {
		if i == 5 {
			fmt.Fprintf(&b, "  ... %d more\n", len(r.LateExpiry)-i)
			break
		}
		fmt.Fprintf(&b, "  %s\n", o)
	}
	fmt.Fprintf(&b, "stalled-leader windows (last slice overran %v by at least the overlap): %d, longest %v (lease %v)\n", r.Limits.Slice, len(r.StalledWindows), r.MaxStalledWindow, r.Limits.Lease)
	fmt.Fprintf(&b, "paused-window overlaps: %d, max paused window: %v (lease %v)\n", len(r.PausedWindows), r.MaxPausedWindow, r.Limits.Lease)
	maxLost := time.Duration(0)
	for _, o := range r.LostStateOverlaps {
		maxLost = max(maxLost, o.Length)
	}
	fmt.Fprintf(&b, "lost-state overlaps (backend forgot a lease): %d, longest %v\n", len(r.LostStateOverlaps), maxLost)
	for i, o := range r.LostStateOverlaps {
		if i == 5 {
			fmt.Fprintf(&b, "  ... %d more\n", len(r.LostStateOverlaps)-i)
			break
		}
		fmt.Fprintf(&b, "  %s\n", o)
	}
	r.effectSummary(&b)
	fmt.Fprintf(&b, "max leaderless gap: %v (%s); max counted after heal: %v (bound %v; %v plus the delay after a delayed link or the extension after a consensus leader change)\n",
		r.MaxGap.To.Sub(r.MaxGap.From), r.MaxGap.Role, r.MaxCountedGap.Counted, max(r.MaxCountedGap.Bound, r.Limits.RecoveryBound()), r.Limits.RecoveryBound())
	fmt.Fprintf(&b, "crashes: %d, goroutine leaks: %d, clock issues: %d\n", len(r.Crashes), len(r.Leaks), len(r.ClockIssues))
	if p := r.Problems(); len(p) > 0 {
		fmt.Fprintf(&b, "FAIL: %d problem(s)\n", len(p))
		for i, s := range p {
			if i == 20 {
				fmt.Fprintf(&b, "  ... %d more\n", len(p)-i)
				break
			}
			fmt.Fprintf(&b, "  %s\n", s)
		}
	} else {
		b.WriteString("PASS\n")
	}
	return b.String()
}

// Check judges h against lim.
func Check(h History, lim Limits) *Report {
	r := &Report{Limits: lim, Faults: len(h.Faults), FaultsByKind: map[FaultKind]int{}, Incarnations: len(h.Incarnations)}
	for _, f := range h.Faults {
		r.FaultsByKind[f.Kind]++
		if f.Member {
			r.memberFaults++
		}
	}
	byRole := map[string][]Record{}
	exits := map[string]Record{}
	for _, rec := range h.Records {
		switch rec.Kind {
		case KindWork:
			byRole[rec.Role] = append(byRole[rec.Role], rec)
			r.WorkRecords++
			wall := time.Duration(rec.End - rec.Start)
			mono := time.Duration(rec.MonoEnd - rec.MonoStart)
			if d := (wall - mono).Abs(); d > lim.clockTolerance() && len(r.ClockIssues) < 50 {
				r.ClockIssues = append(r.ClockIssues, fmt.Sprintf("%s role %s: wall %v vs monotonic %v", rec.Identity, rec.Role, wall, mono))
			}
		case KindExit:
			exits[rec.Identity] = rec
		}
	}
	roles := append([]string(nil), h.Roles...)
	for role := range byRole {
		if !contains(roles, role) {
			roles = append(roles, role)
		}
	}
	sort.Strings(roles)
	for _, role := range roles {
		recs := tenures(byRole[role])
		before := len(r.Overlaps)
		r.checkOverlaps(role, recs, byRole[role], h.Faults, lim)
		for i := before; i < len(r.Overlaps); i++ {
			r.Overlaps[i].Stall = longestSlice(byRole[role], r.Overlaps[i], lim.Lease)
		}
		r.checkGaps(role, recs, h, lim)
		r.checkAsserts(role, byRole[role], recs, h.Faults, lim)
		if h.Effects != nil {
			r.checkEffects(role, h.Effects[role], byRole[role], recs)
		}
	}
	for _, o := range r.PausedWindows {
		r.MaxPausedWindow = max(r.MaxPausedWindow, o.Window)
	}
	for _, o := range r.LateExpiry {
		r.MaxLateExpiry = max(r.MaxLateExpiry, o.Length)
	}
	for _, o := range r.StalledWindows {
		r.MaxStalledWindow = max(r.MaxStalledWindow, o.Length)
	}
	for _, inc := range h.Incarnations {
		switch {
		case inc.Killed:
		case !inc.Stopped:
			r.Crashes = append(r.Crashes, fmt.Sprintf("%s (pid %d) exited unexpectedly: %s", inc.Identity, inc.PID, inc.Exit))
		case !inc.OK:
			r.Crashes = append(r.Crashes, fmt.Sprintf("%s (pid %d) failed to shut down: %s", inc.Identity, inc.PID, inc.Exit))
		default:
			ex, ok := exits[inc.Identity]
			switch {
			case !ok:
				r.Leaks = append(r.Leaks, fmt.Sprintf("%s: no exit record", inc.Identity))
			case ex.Goroutines > ex.Baseline:
				r.Leaks = append(r.Leaks, fmt.Sprintf("%s: %d goroutines at exit, %d before start\n%s", inc.Identity, ex.Goroutines, ex.Baseline, ex.Leaked))
			}
		}
	}
	return r
}

// tenures merges a role's work records into one record per incarnation and
// term: a term is one continuous leadership, so [first start, last end] is
// when that incarnation worked for the role in that term. The result is
// sorted by start.
func tenures(recs []Record) []Record {
	type id struct {
		identity string
		term     uint64
	}
	idx := map[id]int{}
	var out []Record
	for _, rec := range recs {
		k := id{rec.Identity, rec.Term}
		i, ok := idx[k]
		if !ok {
			idx[k] = len(out)
			out = append(out, rec)
			continue
		}
		t := &out[i]
		if rec.Start < t.Start {
			t.Start, t.MonoStart = rec.Start, rec.MonoStart
		}
		if rec.End > t.End {
			t.End, t.MonoEnd = rec.End, rec.MonoEnd
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// longestSlice is the longest work record of o.A's incarnation and term
// that ended within lease before o began, or later.
func longestSlice(recs []Record, o Overlap, lease time.Duration) time.Duration {
	var d time.Duration
	for _, rec := range recs {
		if rec.Identity == o.A.Identity && rec.Term == o.A.Term && rec.End >= o.B.Start-int64(lease) {
			d = max(d, time.Duration(rec.End-rec.Start))
		}
	}
	return d
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// lastSliceLen is the length of the last work slice of a's incarnation
// and term among slices.
func lastSliceLen(slices []Record, a Record) time.Duration {
	var last Record
	for _, rec := range slices {
		if rec.Identity == a.Identity && rec.Term == a.Term && rec.End >= last.End {
			last = rec
		}
	}
	return time.Duration(last.End - last.Start)
}

// checkOverlaps sweeps recs (tenures sorted by start) for pairs from
// different incarnations that overlap in time, and classifies each; slices
// are the role's work records.
func (r *Report) checkOverlaps(role string, recs, slices []Record, faults []Fault, lim Limits) {
	var active []Record
	for i, rec := range recs {
		if i > 0 && recs[i-1].Identity != rec.Identity {
			r.Handovers++
		}
		kept := active[:0]
		for _, a := range active {
			if a.End > rec.Start {
				kept = append(kept, a)
			}
		}
		active = kept
		for _, a := range active {
			if a.Identity == rec.Identity {
				continue
			}
			o := Overlap{Role: role, A: a, B: rec, Length: time.Duration(min(a.End, rec.End) - rec.Start)}
			r.classify(o, lastSliceLen(slices, a), faults, lim)
		}
		active = append(active, rec)
	}
}

// classify files o as a paused window, a lost-state overlap, a late-expiry
// window, a stalled window or an unexplained overlap. lastSlice is the
// length of o.A's last work slice.
func (r *Report) classify(o Overlap, lastSlice time.Duration, faults []Fault, lim Limits) {
	// A paused replica's record spans the pause or began soon after the
	// resume, and it kept working after the resume. A replica paused more
	// than once in one tenure is judged from the latest resume before the
	// record's end: that pause is the one it slept through. An overlap
	// that begins more than a lease after the resume is not the pause's:
	// by then a term the replica held across it has ended or been renewed
	// at the server, so a later overlap (a restart that lost the lease)
	// is judged by the rules below.
	overlapStart := o.B.Start
	var paused *Fault
	for i, f := range faults {
		if f.Kind != FaultPause {
			continue
		}
		for _, p := range []Record{o.A, o.B} {
			resumed := f.Heal.UnixNano()
			if p.Identity == f.Identity && p.End > resumed && p.End >= f.Start.UnixNano() && p.Start <= resumed+int64(lim.Lease) &&
				overlapStart <= resumed+int64(lim.Lease+lim.slack()) &&
				(paused == nil || f.Heal.After(paused.Heal)) {
				paused = &faults[i]
				o.Window = time.Duration(p.End - resumed)
			}
		}
	}
	if paused != nil {
		o.Fault, o.Kind = paused.String(), paused.Kind
		r.PausedWindows = append(r.PausedWindows, o)
		return
	}
	overlapEnd := min(o.A.End, o.B.End)
	for _, f := range faults {
		if !f.LostState {
			continue
		}
		if overlapStart >= f.Start.UnixNano() && overlapStart <= f.Heal.Add(lim.Lease+lim.slack()).UnixNano() && o.A.Start < f.Heal.UnixNano() {
			o.Window = time.Duration(overlapEnd - f.Heal.UnixNano())
			o.Fault, o.Kind = f.String(), f.Kind
			r.LostStateOverlaps = append(r.LostStateOverlaps, o)
			return
		}
	}
	stall := lastSlice - lim.Slice
	stalled := lim.Slice > 0 && stall > 0 && o.A.End <= o.B.End && o.Length <= lim.ExpiryRace+stall
	for _, f := range faults {
		if !f.Member || stalled {
			continue
		}
		// During a member fault no tolerance applies but the replica's
		// own stall: the cluster never gives a lease up early.
		if overlapStart >= f.Start.UnixNano() && overlapStart <= f.Heal.Add(lim.Lease+lim.slack()).UnixNano() {
			o.Window = time.Duration(overlapEnd - f.Heal.UnixNano())
			o.Fault, o.Kind = f.String(), f.Kind
			r.MemberFaultOverlaps = append(r.MemberFaultOverlaps, o)
			return
		}
	}
	if o.Length <= lim.ExpiryRace && o.A.End <= o.B.End {
		r.LateExpiry = append(r.LateExpiry, o)
		return
	}
	if stalled {
		o.Stall = lastSlice
		r.StalledWindows = append(r.StalledWindows, o)
		return
	}
	r.Overlaps = append(r.Overlaps, o)
}

type interval struct{ from, to int64 }

// checkGaps measures the leaderless times of one role within [h.From,
// h.To]. A paused replica's record does not cover its pause.
func (r *Report) checkGaps(role string, recs []Record, h History, lim Limits) {
	if h.From.IsZero() || !h.To.After(h.From) {
		return
	}
	var cover []interval
	for _, rec := range recs {
		parts := []interval{{rec.Start, rec.End}}
		for _, f := range h.Faults {
			if f.Kind != FaultPause || f.Identity != rec.Identity {
				continue
			}
			var next []interval
			for _, iv := range parts {
				s, c := f.Start.UnixNano(), f.Heal.UnixNano()
				if iv.to <= s || iv.from >= c {
					next = append(next, iv)
					continue
				}
				if iv.from < s {
					next = append(next, interval{iv.from, s})
				}
				if iv.to > c {
					next = append(next, interval{c, iv.to})
				}
			}
			parts = next
		}
		cover = append(cover, parts...)
	}
	sort.Slice(cover, func(i, j int) bool { return cover[i].from < cover[j].from })
	from, to := h.From.UnixNano(), h.To.UnixNano()
	at := from // covered up to here
	var gaps []interval
	for _, iv := range cover {
		if iv.to <= at {
			continue
		}
		if iv.from > at {
			gaps = append(gaps, interval{at, min(iv.from, to)})
		}
		at = max(at, iv.to)
		if at >= to {
			break
		}
	}
	if at < to {
		gaps = append(gaps, interval{at, to})
	}
	for _, g := range gaps {
		if g.to <= g.from {
			continue
		}
		gap := Gap{Role: role, From: time.Unix(0, g.from), To: time.Unix(0, g.to)}
		counted := g.from
		var extended time.Duration
		for _, f := range h.Faults {
			if f.Unavailable && f.Start.UnixNano() < g.to && f.Heal.UnixNano() > counted {
				counted = f.Heal.UnixNano()
				gap.Cause = fmt.Sprintf(", from the heal of fault #%d %s", f.Seq, f.Kind)
				extended = f.Extended
				if extended > 0 {
					gap.Cause += fmt.Sprintf(" (leases extended by up to %v)", extended)
				}
			}
		}
		gap.Counted = time.Duration(max(0, g.to-counted))
		cause, delay := previousLeaderFault(recs, g.from, h.Faults)
		gap.Cause += cause
		taker, takerDelay := delayedTaker(recs, g.from, g.to, h.Faults)
		gap.Cause += taker
		gap.Bound = lim.RecoveryBound() + delay + takerDelay + extended
		if gap.To.Sub(gap.From) > r.MaxGap.To.Sub(r.MaxGap.From) {
			r.MaxGap = gap
		}
		if gap.Counted > r.MaxCountedGap.Counted {
			r.MaxCountedGap = gap
		}
		if gap.Counted > gap.Bound {
			r.SlowRecovery = append(r.SlowRecovery, gap)
		}
	}
}

// delayedTaker names the delay fault on the link of the participant whose
// tenure ends the gap [from, to], when that fault ran during the gap, and
// returns its delay for the bound. A role handed by name to a participant
// whose link is delayed (a balancing handover, an operator's) is kept for
// it while its requests cross that link, so the gap may last the delay
// longer, as after a delayed previous leader.
func delayedTaker(tenures []Record, from, to int64, faults []Fault) (string, time.Duration) {
	for _, t := range tenures {
		if t.Start != to {
			continue
		}
		for _, f := range faults {
			if f.Kind == FaultDelay && f.Identity == t.Identity && f.Start.UnixNano() <= to && f.Heal.UnixNano() >= from {
				return fmt.Sprintf(", taken by %s, whose link was delayed by fault #%d (%v)", t.Identity, f.Seq, f.Delay), f.Delay
			}
		}
	}
	return "", 0
}

// previousLeaderFault names the fault that targeted the leader whose
// tenure ended at from (the start of a gap), when that fault was under way
// then, and returns the delay the bound allows for it. A delayed link
// delivers the old leader's last renewals up to the delay late, and each
// that lands extends the lease in the backend by a full lease although its
// sender has given the term up; its give-back release crosses the same
// link. So after a delay fault the role may stay leaderless for the delay
// on top of RecoveryBound, and no longer. Other faults explain a gap but
// add nothing to the bound.
func previousLeaderFault(tenures []Record, from int64, faults []Fault) (string, time.Duration) {
	for _, t := range tenures {
		if t.End != from {
			continue
		}
		for _, f := range faults {
			if f.Identity == t.Identity && f.Start.UnixNano() <= from && f.Heal.UnixNano() >= from {
				s := fmt.Sprintf(", after %s's term ended during fault #%d %s", t.Identity, f.Seq, f.Kind)
				if f.Detail != "" {
					s += " (" + f.Detail + ")"
				}
				if f.Kind == FaultDelay {
					return s, f.Delay
				}
				return s, 0
			}
		}
	}
	return "", 0
}
