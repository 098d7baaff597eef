package leadership

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeRoles is a set of roles as fake members see them: who leads each
// and who takes part, shared by the members of every simulated process.
type fakeRoles struct {
	mu      sync.Mutex
	leader  map[string]string   // role -> identity
	parts   map[string][]string // role -> identities
	subs    map[string][]*func(string)
	resigns int // resigns under way
	most    int // the most resigns under way at once
	reads   int // participant reads under way
	mostR   int // the most reads under way at once
	learned int // learnedLeader calls
	// afterReads, when set, runs once the participants were read this
	// many times (readsDone counts them).
	afterReads int
	onReads    func()
	readsDone  int
}

func (f *fakeRoles) leads(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, l := range f.leader {
		if l == id {
			n++
		}
	}
	return n
}

// fakeMember is one process's member for one role: a resign hands the role
// to the named taker after a round trip's worth of fake time, and the
// taker's lead is then learned as a new leader notice.
type fakeMember struct {
	f        *fakeRoles
	role, id string
}

func (m *fakeMember) Role() string     { return m.role }
func (m *fakeMember) Identity() string { return m.id }
func (m *fakeMember) IsLeader() bool {
	id, _ := m.Leader()
	return id == m.id
}

func (m *fakeMember) Leader() (string, bool) {
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	id := m.f.leader[m.role]
	return id, id != ""
}
func (m *fakeMember) learnedLeader() (string, bool) {
	m.f.mu.Lock()
	m.f.learned++
	m.f.mu.Unlock()
	return m.Leader()
}

func (m *fakeMember) Participants(context.Context) ([]Participant, error) {
	m.f.mu.Lock()
	m.f.reads++
	m.f.mostR = max(m.f.mostR, m.f.reads)
	m.f.mu.Unlock()
	time.Sleep(time.Millisecond) // a round trip
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	m.f.reads--
	m.f.readsDone++
	if m.f.onReads != nil && m.f.readsDone == m.f.afterReads {
		m.f.onReads()
	}
	var ps []Participant
	for _, id := range m.f.parts[m.role] {
		ps = append(ps, Participant{Identity: id, Leader: m.f.leader[m.role] == id})
	}
	return ps, nil
}

func (m *fakeMember) OnNewLeader(fn func(string)) func() {
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	p := &fn
	m.f.subs[m.role] = append(m.f.subs[m.role], p)
	return func() {
		m.f.mu.Lock()
		defer m.f.mu.Unlock()
		m.f.subs[m.role] = slices.DeleteFunc(m.f.subs[m.role], func(q *func(string)) bool { return q == p })
	}
}

func (m *fakeMember) resign(_ context.Context, target string) error {
	m.f.mu.Lock()
	m.f.resigns++
	m.f.most = max(m.f.most, m.f.resigns)
	m.f.leader[m.role] = ""
	m.f.mu.Unlock()
	time.Sleep(10 * time.Millisecond) // the release and the taker's acquisition
	m.f.mu.Lock()
	m.f.resigns--
	m.f.leader[m.role] = target
	subs := slices.Clone(m.f.subs[m.role])
	m.f.mu.Unlock()
	for _, fn := range subs {
		(*fn)(target)
	}
	return nil
}

func (m *fakeMember) Lease() time.Duration         { return 15 * time.Second }
func (m *fakeMember) retryInterval() time.Duration { return 2 * time.Second }

// fakeProcess builds the balance group of identity id with a member for
// every role of f, without starting its round goroutine.
func fakeProcess(f *fakeRoles, id string) *BalanceGroup {
	g := NewBalanceGroup(nil)
	for role := range f.parts {
		g.members[&fakeMember{f: f, role: role, id: id}] = struct{}{}
	}
	return g
}

func newFakeRoles(roles int, leader string, ids ...string) *fakeRoles {
	f := &fakeRoles{leader: map[string]string{}, parts: map[string][]string{}, subs: map[string][]*func(string){}}
	for r := range roles {
		role := fmt.Sprintf("role-%03d", r)
		f.leader[role] = leader
		f.parts[role] = ids
	}
	return f
}

// One round hands the whole surplus over, several roles at once but never
// more than balanceHandovers, and reads the participants several at once
// but never more than balanceReaders (B1).
func TestBalance_B1_RoundHandsOverInParallelWithinBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRoles(200, "a", "a", "b")
		g := fakeProcess(f, "a")
		g.round(t.Context())
		if a, b := f.leads("a"), f.leads("b"); a != 100 || b != 100 {
			t.Fatalf("after one round a leads %d, b %d; want 100 each", a, b)
		}
		if f.most != balanceHandovers {
			t.Fatalf("at most %d handovers ran at once; want %d (the bound, reached with a surplus of 100)", f.most, balanceHandovers)
		}
		if f.mostR != balanceReaders {
			t.Fatalf("at most %d participant reads ran at once; want %d (the bound, reached with 200 roles led)", f.mostR, balanceReaders)
		}
	})
}

// A group leading many roles runs more handovers at once, one per 64 roles
// it leads, and still hands over exactly its surplus, never taking a
// taker past its share (B1).
func TestBalance_B1_LargeGroupsHandOverMoreAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRoles(3000, "a", "a", "b", "c")
		g := fakeProcess(f, "a")
		g.round(t.Context())
		if a, b, c := f.leads("a"), f.leads("b"), f.leads("c"); a != 1000 || b != 1000 || c != 1000 {
			t.Fatalf("after one round a leads %d, b %d, c %d; want 1000 each", a, b, c)
		}
		if want := 3000 / 64; f.most != want {
			t.Fatalf("at most %d handovers ran at once; want %d (one per 64 roles led)", f.most, want)
		}
	})
}

// Handovers under way at once count against their takers' shares: with
// two takers at 0 the surplus splits evenly and neither ends past its
// share, although none of the handovers was learned when the next was
// chosen (B1: no role moves twice).
func TestBalance_B1_ParallelHandoversKeepTakersWithinShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRoles(90, "a", "a", "b", "c")
		g := fakeProcess(f, "a")
		g.round(t.Context())
		if a, b, c := f.leads("a"), f.leads("b"), f.leads("c"); a != 30 || b != 30 || c != 30 {
			t.Fatalf("after one round a leads %d, b %d, c %d; want 30 each", a, b, c)
		}
		// Nothing left to move: a second round hands nothing over.
		f.most = 0
		g.round(t.Context())
		if f.most != 0 {
			t.Fatalf("a balanced second round resigned %d roles at once; want none", f.most)
		}
	})
}

// A process stopping all its members at once (each Stop names a
// successor, then leaves the group) spreads their roles evenly over the
// other participants, and counts the members' leads once, not once per
// stop: a leave of n members used to cost n² reads of what they learned.
func TestBalance_B1_MassStopCountsLeadsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3000
		f := newFakeRoles(n, "a", "a", "b", "c")
		g := fakeProcess(f, "a")
		for role := range f.parts {
			g.ids[role] = []string{"a", "b", "c"}
		}
		f.learned = 0
		given := map[string]int{}
		for _, m := range g.snapshot() {
			if m.IsLeader() {
				given[g.successor(m)]++
			}
			g.leave(m)
		}
		if len(given) != 2 || given["b"] != n/2 || given["c"] != n/2 {
			t.Fatalf("successors of %d stopping leaders: %v; want %d each to b and c", n, given, n/2)
		}
		if f.learned > 3*n {
			t.Fatalf("%d stops read the members' learned leaders %d times; want one count (%d) plus one per stop", n, f.learned, n)
		}
	})
}

// A participant that leaves after a round read the participants (its
// process stops) is not handed roles: each handover reads its role's
// participants again first. Handing them to a gone taker left each role to
// the others' RetryInterval, and kept later rounds moving roles for over a
// minute at 20,000 roles (B1).
func TestBalance_B1_NoHandoverToATakerThatLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRoles(200, "a", "a", "b")
		f.afterReads = 200 // the round's reads; then b's process stops
		f.onReads = func() {
			for role := range f.parts {
				f.parts[role] = []string{"a"}
			}
		}
		g := fakeProcess(f, "a")
		g.round(t.Context())
		if a := f.leads("a"); a != 200 {
			t.Fatalf("after b left, a leads %d of 200; want all (none handed to b)", a)
		}
	})
}

// A group leading many roles reads, after its first round, only a
// rotating sample of their participants, which reaches every role within
// balanceFullEvery rounds, and reads them all again in the round whose
// sample shows a process joined, which then hands its surplus over as a
// full round would (B1).
func TestBalance_B1_SteadyRoundsReadASampleAndAJoinIsSeenAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const roles = 1000
		f := newFakeRoles(roles, "a", "a", "b")
		i := 0
		for role := range f.parts {
			if i%2 == 1 {
				f.leader[role] = "b"
			}
			i++
		}
		g := fakeProcess(f, "a")
		var perRound []int
		for range balanceFullEvery + 1 {
			before := f.readsDone
			g.round(t.Context())
			perRound = append(perRound, f.readsDone-before)
		}
		want := []int{500}
		for range balanceFullEvery {
			want = append(want, balanceSampleMin)
		}
		if !slices.Equal(perRound, want) {
			t.Fatalf("participant reads per round = %v; want %v (the first round reads all, then samples)", perRound, want)
		}
		// The rotating sample reads every role again within
		// balanceFullEvery rounds, without a round that reads them all.
		for role, at := range g.readAt {
			if g.rounds-at >= balanceFullEvery {
				t.Errorf("%s last read in round %d of %d", role, at, g.rounds)
			}
		}
		if len(g.readAt) != 500 {
			t.Errorf("%d roles read; want the 500 a leads", len(g.readAt))
		}
		if a := f.leads("a"); a != 500 {
			t.Fatalf("a balanced fleet moved roles: a leads %d; want 500", a)
		}
		for role := range f.parts {
			f.parts[role] = []string{"a", "b", "c"}
		}
		before := f.readsDone
		g.round(t.Context())
		if n := f.readsDone - before; n < 500 {
			t.Fatalf("the round after c joined read %d participant lists; want all 500 (its sample saw c), plus the handovers' own", n)
		}
		if a, c := f.leads("a"), f.leads("c"); a != 334 || c != 166 {
			t.Fatalf("after c joined a leads %d and c %d; want 334 and 166 (share ceil(1000/3))", a, c)
		}
	})
}

// A group forgets the roles it no longer runs, and the moves older than a
// lease, so a process that stops some roles and starts others keeps no
// per-role state of the old ones (B1).
func TestBalance_B1_GroupForgetsRolesItNoLongerRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRoles(200, "a", "a", "b")
		g := fakeProcess(f, "a")
		g.round(t.Context())
		if len(g.moved) != 100 || len(g.readAt) != 200 || len(g.ids) == 0 {
			t.Fatalf("after the first round: %d moved, %d read, %d with participants; want 100, 200 and some",
				len(g.moved), len(g.readAt), len(g.ids))
		}
		// The process stops the roles it still leads.
		for m := range g.members {
			if m.IsLeader() {
				delete(g.members, m)
			}
		}
		g.sorted = nil // as leave does
		kept := map[string]bool{}
		for m := range g.members {
			kept[m.Role()] = true
		}
		if len(kept) != 100 {
			t.Fatalf("%d members left; want 100", len(kept))
		}
		g.round(t.Context())
		for name, roles := range map[string][]string{"readAt": keysOf(g.readAt), "ids": keysOf(g.ids), "moved": keysOf(g.moved)} {
			for _, role := range roles {
				if !kept[role] {
					t.Errorf("%s still holds %s, a role the group no longer runs", name, role)
				}
			}
		}
		// The roles handed over in the first round are the ones left; a
		// lease later their moves no longer count.
		time.Sleep(16 * time.Second)
		g.round(t.Context())
		if len(g.moved) != 0 {
			t.Fatalf("%d moves kept a lease after they were made; want none", len(g.moved))
		}
	})
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A round's member list is sorted once and reused until a member joins or
// leaves; a list handed to a round is never changed (B1).
func TestBalance_B1_MemberListFollowsJoinsAndLeaves(t *testing.T) {
	f := newFakeRoles(3, "a", "a", "b")
	g := NewBalanceGroup(nil)
	g.running = 1 // as if a member ran already: no round goroutine here
	var ms []*fakeMember
	for _, role := range []string{"role-2", "role-0", "role-1"} {
		m := &fakeMember{f: f, role: role, id: "a"}
		ms = append(ms, m)
		g.join(m)
	}
	rolesOf := func(l []member) []string {
		var rs []string
		for _, m := range l {
			rs = append(rs, m.Role())
		}
		return rs
	}
	first := g.snapshot()
	if got := rolesOf(first); !slices.Equal(got, []string{"role-0", "role-1", "role-2"}) {
		t.Fatalf("members = %v; want them by role", got)
	}
	if again := g.snapshot(); &again[0] != &first[0] {
		t.Error("an unchanged group sorted its members again")
	}
	g.leave(ms[2]) // role-1
	if got := rolesOf(g.snapshot()); !slices.Equal(got, []string{"role-0", "role-2"}) {
		t.Errorf("after role-1 left: members = %v", got)
	}
	if got := rolesOf(first); !slices.Equal(got, []string{"role-0", "role-1", "role-2"}) {
		t.Errorf("the list an earlier round had changed to %v", got)
	}
	g.join(&fakeMember{f: f, role: "role-3", id: "a"})
	if got := rolesOf(g.snapshot()); !slices.Equal(got, []string{"role-0", "role-2", "role-3"}) {
		t.Errorf("after role-3 joined: members = %v", got)
	}
}

// A process that withdrew its candidates (it is leaving) and still leads
// some roles, handing them over one by one, is not counted among the
// participants: the processes that stay do not resign roles to each
// other while the leaver's roles come in, which the leave then evens out
// anyway, each such role moved twice. A third process that takes part
// in the roles is counted, and the surplus goes to the one under its
// share (B1, H2).
func TestBalance_B1_H2_LeavingProcessIsNotCountedOnceItWithdrew(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lListed    bool // l is still a candidate of the roles it does not lead
		wantA      int
		wantB      int
		wantResign bool
	}{
		{name: "leaving", lListed: false, wantA: 150, wantB: 50},
		{name: "live", lListed: true, wantA: 100, wantB: 100, wantResign: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// 300 roles: a leads 150 (the leaver already handed it
				// 50), b 50, l 100 still.
				f := newFakeRoles(300, "a", "a", "b", "l")
				i := 0
				for role := range f.parts {
					switch {
					case i < 50:
						f.leader[role] = "b"
					case i < 150:
						f.leader[role] = "l"
					}
					if !tc.lListed && f.leader[role] != "l" {
						f.parts[role] = []string{"a", "b"}
					}
					i++
				}
				g := fakeProcess(f, "a")
				g.round(t.Context())
				if a, b := f.leads("a"), f.leads("b"); a != tc.wantA || b != tc.wantB {
					t.Fatalf("after a's round a leads %d, b %d; want %d and %d", a, b, tc.wantA, tc.wantB)
				}
				if resigned := f.most > 0; resigned != tc.wantResign {
					t.Fatalf("a resigned roles: %v; want %v", resigned, tc.wantResign)
				}
			})
		})
	}
}
