package dashboard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/scheduling"
)

// tracker keeps what the dashboard learned of a role over time: the
// transitions of this process's elector (with reasons), the changes of
// holder its own reads observed, and the spans it saw the role without a
// leader.
type tracker struct {
	transitions []Transition // newest last
	seen        bool         // a read has been made
	holder      string
	fence       uint64
	gapSince    time.Time // start of an open leaderless span; zero when led
	gaps        []span
}

type span struct{ from, to time.Time }

// Transition is one change of a role's leadership the dashboard learned.
type Transition struct {
	At time.Time
	// What happened, in words.
	What string
	// Reason is the elector's reason (acquired, released, resigned,
	// refused, expired) for this process's own transitions; "" for a
	// change observed from the backend, whose reason only the replicas
	// involved know.
	Reason string
	Fence  uint64
}

// trackerOf returns role's tracker; d.mu is held.
func (d *Dashboard) trackerOf(role string) *tracker {
	t := d.roles[role]
	if t == nil {
		t = &tracker{}
		d.roles[role] = t
	}
	return t
}

func (t *tracker) add(tr Transition) {
	t.transitions = append(t.transitions, tr)
	if len(t.transitions) > TransitionsLen {
		t.transitions = t.transitions[len(t.transitions)-TransitionsLen:]
	}
}

// watch subscribes to e's transitions.
func (d *Dashboard) watch(e *leadership.Elector) {
	role, id := e.Role(), e.Identity()
	u1 := e.OnChange(func(c leadership.Change) {
		what := id + " (this process) lost the role"
		if c.IsLeader {
			what = id + " (this process) became leader"
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		t := d.trackerOf(role)
		t.add(Transition{At: c.At, What: what, Reason: c.Reason.String(), Fence: c.Fence})
		if !c.IsLeader && t.gapSince.IsZero() {
			t.gapSince = c.At
		}
		if c.IsLeader {
			t.closeGap(c.At)
		}
	})
	u2 := e.OnNewLeader(func(identity string) {
		if identity == id {
			return // OnChange said so, with the reason
		}
		now := d.now()
		d.mu.Lock()
		defer d.mu.Unlock()
		t := d.trackerOf(role)
		t.add(Transition{At: now, What: identity + " leads (as this process learned it)"})
		t.closeGap(now)
	})
	d.mu.Lock()
	d.unsub = append(d.unsub, u1, u2)
	if e.IsLeader() {
		// A term that began before the dashboard: its Change was missed.
		d.trackerOf(role).add(Transition{At: d.now(), What: id + " (this process) leads since before the dashboard started", Fence: e.Fence()})
	}
	d.mu.Unlock()
}

// closeGap ends an open leaderless span at t.
func (t *tracker) closeGap(at time.Time) {
	if t.gapSince.IsZero() {
		return
	}
	if at.After(t.gapSince) {
		t.gaps = append(t.gaps, span{t.gapSince, at})
	}
	t.gapSince = time.Time{}
}

// observe records what a read of the role found.
func (t *tracker) observe(now time.Time, st locking.KeyState) {
	holder := ""
	if st.Held {
		holder = st.Holder.Owner
	}
	switch {
	case !t.seen:
	case holder != "" && len(t.transitions) > 0 && strings.HasPrefix(t.transitions[len(t.transitions)-1].What, holder+" "):
		// This process already said so (its own term, or the leader it
		// learned of).
	case holder != t.holder || st.Held && st.Fence != t.fence:
		what := "nobody leads (observed)"
		if holder != "" {
			what = holder + " leads (observed)"
		}
		t.add(Transition{At: now, What: what, Fence: st.Fence})
	}
	t.seen, t.holder, t.fence = true, holder, st.Fence
	if !st.Held && t.gapSince.IsZero() {
		t.gapSince = now
	}
	if st.Held {
		t.closeGap(now)
	}
}

// leaderless sums the leaderless spans within LeaderlessWindow of now,
// the open one included, and drops older ones.
func (t *tracker) leaderless(now time.Time) time.Duration {
	from := now.Add(-LeaderlessWindow)
	t.gaps = slices.DeleteFunc(t.gaps, func(s span) bool { return !s.to.After(from) })
	var sum time.Duration
	for _, s := range t.gaps {
		sum += s.to.Sub(later(s.from, from))
	}
	if !t.gapSince.IsZero() {
		sum += now.Sub(later(t.gapSince, from))
	}
	return sum
}

// RoleView is one role as the roles page shows it.
type RoleView struct {
	Role, Key string
	// Leader, Fence and LeaseLeft are the holder's, from the backend; Leader
	// is "" when nobody leads (Fence is then the last fence issued).
	Leader    string
	Fence     uint64
	LeaseLeft time.Duration
	// Participants are the role's live electors, oldest first.
	Participants []locking.Participant
	// Local describes this process's electors of the role (usually one).
	Local []leadership.Description
	// Transitions are the latest changes the dashboard learned, newest
	// first.
	Transitions []Transition
	// Leaderless is how long the role was seen without a leader within
	// LeaderlessWindow.
	Leaderless time.Duration
	// CanResign reports whether a resign request can reach the leader.
	CanResign bool
	// Error is the backend read's error, if it failed.
	Error string
}

// RolesView is the roles page's content.
type RolesView struct {
	Roles []RoleView
	// Error is the listing's error, if it failed.
	Error string
	// HandOver reports whether handover is available.
	HandOver bool
}

// roleRefs lists the roles: the electors', then ListRoles', sorted.
func (d *Dashboard) roleRefs(ctx context.Context) ([]RoleRef, map[string][]*leadership.Elector, error) {
	local := map[string][]*leadership.Elector{}
	seen := map[string]bool{}
	var refs []RoleRef
	for _, e := range d.o.Electors {
		local[e.Role()] = append(local[e.Role()], e)
		if !seen[e.Role()] {
			seen[e.Role()] = true
			refs = append(refs, RoleRef{Role: e.Role(), Key: e.LockKey()})
		}
	}
	var err error
	if d.o.ListRoles != nil {
		var more []RoleRef
		more, err = d.o.ListRoles(ctx)
		for _, r := range more {
			if !seen[r.Role] {
				seen[r.Role] = true
				refs = append(refs, r)
			}
		}
	}
	slices.SortFunc(refs, func(a, b RoleRef) int { return strings.Compare(a.Role, b.Role) })
	return refs, local, err
}

// findRole returns the role named role and this process's electors of it,
// or an error saying it is unknown.
func (d *Dashboard) findRole(ctx context.Context, role string) (RoleRef, []*leadership.Elector, error) {
	refs, local, err := d.roleRefs(ctx)
	for _, r := range refs {
		if r.Role == role {
			return r, local[role], nil
		}
	}
	if err != nil {
		return RoleRef{}, nil, fmt.Errorf("list roles: %w", err)
	}
	return RoleRef{}, nil, fmt.Errorf("%w %q", errUnknownRole, role)
}

var (
	errUnknownRole = errors.New("unknown role")
	errUnknownJob  = errors.New("unknown job")
)

// readRoles reads every role's state: one Inspect round trip per role.
func (d *Dashboard) readRoles(ctx context.Context) RolesView {
	refs, local, err := d.roleRefs(ctx)
	out := RolesView{HandOver: d.handOver != nil}
	if err != nil {
		out.Error = err.Error()
	}
	canResign := d.resigner != nil
	for _, ref := range refs {
		v := RoleView{Role: ref.Role, Key: ref.Key}
		st, err := d.o.Lock.Inspect(ctx, ref.Key)
		if err != nil && !errors.Is(err, locking.ErrBadRecord) {
			v.Error = err.Error()
		} else {
			if st.Held {
				v.Leader, v.LeaseLeft = st.Holder.Owner, st.Holder.TTL
			}
			v.Fence, v.Participants = st.Fence, st.Participants
			for i := range v.Participants {
				v.Participants[i].Leader = st.Held && v.Participants[i].Owner == st.Holder.Owner
			}
		}
		leadsHere := false
		for _, e := range local[ref.Role] {
			desc := leadership.Describe(e)
			v.Local = append(v.Local, desc)
			leadsHere = leadsHere || desc.IsLeader
		}
		v.CanResign = v.Leader != "" && (canResign || leadsHere)
		now := d.now()
		d.mu.Lock()
		t := d.trackerOf(ref.Role)
		if v.Error == "" {
			t.observe(now, st)
		}
		v.Leaderless = t.leaderless(now)
		for i := len(t.transitions) - 1; i >= 0; i-- {
			v.Transitions = append(v.Transitions, t.transitions[i])
		}
		d.mu.Unlock()
		out.Roles = append(out.Roles, v)
	}
	return out
}

// JobView is one job as the jobs page shows it.
type JobView struct {
	Role, Job string
	// Info is this process's scheduler's view of the job (schedule, zone,
	// policies, next slots); nil when the job is not scheduled here.
	Info *scheduling.JobInfo
	Zone string
	// Paused, with who, when and the note when the pause was made on
	// this dashboard (PausedBy nil otherwise).
	Paused   bool
	PausedBy *AuditEntry
	// Running is the run under way, from the job store; nil when none.
	Running *scheduling.RunRecord
	// Runs are the newest runs, newest first, of every replica.
	Runs      []scheduling.RunRecord
	RunsTotal int64
	// Error is the store's error, if a read failed.
	Error string
}

// JobsView is the jobs page's content.
type JobsView struct {
	Jobs  []JobView
	Error string
	// NoStore reports that the lock keeps no job records.
	NoStore bool
}

// jobRefs lists the jobs: the schedulers', then ListJobs', sorted.
func (d *Dashboard) jobRefs(ctx context.Context) ([]JobRef, map[JobRef]scheduling.JobInfo, error) {
	local := map[JobRef]scheduling.JobInfo{}
	var refs []JobRef
	for _, role := range sortedKeys(d.o.Schedulers) {
		for _, j := range d.o.Schedulers[role].Jobs() {
			ref := JobRef{Role: role, Job: j.Name}
			local[ref] = j
			refs = append(refs, ref)
		}
	}
	var err error
	if d.o.ListJobs != nil {
		var more []JobRef
		more, err = d.o.ListJobs(ctx)
		for _, r := range more {
			if _, ok := local[r]; !ok && !slices.Contains(refs, r) {
				refs = append(refs, r)
			}
		}
	}
	slices.SortFunc(refs, func(a, b JobRef) int {
		return cmpOr(strings.Compare(a.Role, b.Role), strings.Compare(a.Job, b.Job))
	})
	return refs, local, err
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// findJob checks that the job is listed.
func (d *Dashboard) findJob(ctx context.Context, ref JobRef) error {
	refs, _, err := d.jobRefs(ctx)
	if slices.Contains(refs, ref) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list jobs: %w", err)
	}
	return fmt.Errorf("%w %q of role %q", errUnknownJob, ref.Job, ref.Role)
}

// readJobs reads every job's records: two round trips per job (status,
// history).
func (d *Dashboard) readJobs(ctx context.Context) JobsView {
	out := JobsView{NoStore: d.o.Lock.Features().Jobs == nil}
	refs, local, err := d.jobRefs(ctx)
	if err != nil {
		out.Error = err.Error()
	}
	for _, ref := range refs {
		v := JobView{Role: ref.Role, Job: ref.Job}
		if info, ok := local[ref]; ok {
			v.Info = &info
			v.Paused = info.Paused
			switch {
			case strings.HasPrefix(info.Schedule, "every "):
				v.Zone = "none: a fixed interval, counted from a fixed instant (times shown in UTC)"
			case len(info.Upcoming) > 0:
				v.Zone = info.Upcoming[0].Location().String()
			}
		}
		if !out.NoStore {
			d.readJob(ctx, &v)
		}
		d.mu.Lock()
		switch e, ok := d.pauses[ref]; {
		case ok && v.Paused:
			v.PausedBy = &e
		case ok && v.Error == "":
			// Resumed elsewhere: a later pause is someone else's story.
			delete(d.pauses, ref)
		}
		d.mu.Unlock()
		out.Jobs = append(out.Jobs, v)
	}
	return out
}

// readJob fills v from the job store: paused state, run under way,
// newest runs.
func (d *Dashboard) readJob(ctx context.Context, v *JobView) {
	st, err := d.o.Lock.JobStatus(ctx, scheduling.JobKey(v.Role, v.Job))
	if err != nil {
		v.Error = err.Error()
		return
	}
	v.Paused, v.RunsTotal = st.Paused, st.Runs
	if st.Runs == 0 {
		return
	}
	runs, skipped, err := scheduling.ReadHistory(ctx, d.o.Lock, v.Role, v.Job, d.o.History)
	if err != nil {
		v.Error = err.Error()
		return
	}
	if skipped != nil {
		v.Error = "some run records do not parse: " + skipped.Error()
	}
	v.Runs = runs
	if st.Running && len(runs) > 0 && runs[0].Ended.IsZero() {
		r := runs[0]
		v.Running = &r
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
