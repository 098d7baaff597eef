package leadership

import (
	"cmp"
	"context"
	"hash/fnv"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// BalanceGroup spreads the leadership of many roles over the live
// participants (B1). One group stands for one process (one identity): give
// every elector of the process that has Options.Balance the same group
// with WithBalanceGroup (leadershipfx does so for an app). While at least
// one member runs, the group looks at its roles every RetryInterval (the
// shortest of its members'):
//
//   - R is the number of its roles with a live participant, N the number of
//     distinct identities among their participants, and the share is
//     ceil(R/N);
//   - an instance leading more than its share resigns the surplus, choosing
//     roles another participant under its share can take, whose other
//     participants lead least; the release wakes that participant at once,
//     so a moving role is leaderless no longer than a graceful handover;
//   - an instance at or above its share contends for a free role only after
//     it has been free for one RetryInterval, so instances under their
//     share take free roles first;
//   - hysteresis: a role that moved is not moved again within a lease
//     unless the participants changed.
//
// It reads the participants of the roles it leads (up to 64 at once, which
// redislock sends in pipelined round trips): all of them every 8th round
// and in any round whose reads show a participant came or went; in the
// others, when it leads more than 64 roles, a rotating sample (64, or one
// in 8 of them if more) and takes the rest from the last read. It hands
// over up to 16 roles
// at once, each after reading its role's participants again (a taker
// that left meanwhile, its process stopping, is skipped); N counts the
// identities among the participants of the roles it leads, the leaders it
// learned of its other roles, and itself, so an identity that is only a
// candidate for roles it neither leads nor sees led is not counted (see
// docs/rules.md, B1). Identities must
// be distinct per process: two processes sharing one identity balance as
// one instance. Over the in-process memory lock every instance of a
// process shares one identity by default, so balancing only moves roles
// between electors given distinct identities.
type BalanceGroup struct {
	log *zap.Logger

	share atomic.Int64 // the share the latest round computed; 0 before
	// leading counts the members' terms: each member's machine adds one
	// when a term begins and takes it off when the term ends, so held
	// reads one counter instead of asking every member (a refused
	// candidate asks, and with n members asking each the cost grew with
	// n²).
	leading atomic.Int64

	mu      sync.Mutex
	members map[member]struct{}
	// sorted lists members by role; nil after a join or a leave, when the
	// next round sorts them again (a round over unchanged members does
	// not). A list handed out is never changed: a new one replaces it.
	sorted  []member
	running int
	stop    chan struct{}
	done    chan struct{}
	ids     map[string][]string // the participants of each role it led at the last round
	// handed: role -> who leads it as the member that left knew it: the
	// participant it handed the role to, or the leader it last learned. A
	// member that left no longer reports who leads its role, so that lead
	// is counted from here for one lease, or until the role's elector joins
	// again; successive stops of a leave then fill the survivors evenly
	// instead of seeing counts that shrink with every member gone.
	handed map[string]handover
	// stopLeads is leadsLocked as successor last counted it, at
	// stopLeadsAt, kept current with the choices successor made since: a
	// process stopping all its members at once would otherwise count every
	// member for each stop, a leave of n members costing n². Recounted
	// after stopLeadsTTL (or stopLeadsCostFactor times stopLeadsCost, the
	// time the last count took, when that is longer) and after a join.
	stopLeads     map[string]int
	stopLeadsAt   time.Time
	stopLeadsCost time.Duration

	// Owned by the round goroutine.
	moved    map[string]time.Time // role -> when this group last resigned it
	members0 string               // the participants' identities at the last round
	rounds   uint64               // rounds run
	readAt   map[string]uint64    // role -> the round that last read its participants
	cursor   int                  // where the next sample of led roles starts
}

// NewBalanceGroup returns an empty group. Its goroutine runs while at
// least one member runs; logger may be nil.
func NewBalanceGroup(logger *zap.Logger) *BalanceGroup {
	if logger == nil {
		logger = zap.NewNop()
	}
	return &BalanceGroup{log: logger, members: map[member]struct{}{}, ids: map[string][]string{},
		handed: map[string]handover{}, moved: map[string]time.Time{}, readAt: map[string]uint64{}}
}

// WithBalanceGroup makes the elector a member of g when Options.Balance is
// set (B1). Default: none; NewElector rejects Balance without a group.
func WithBalanceGroup(g *BalanceGroup) Option {
	return optionFunc(func(s *settings) { s.balance = g })
}

// member is what a BalanceGroup needs of an elector (B1): what it learned
// of the role, its participants, notice of a new leader, and a resign that
// names the taker. *Elector implements it.
type member interface {
	Role() string
	Identity() string
	IsLeader() bool
	Leader() (identity string, ok bool)
	learnedLeader() (string, bool)
	Participants(ctx context.Context) ([]Participant, error)
	OnNewLeader(fn func(identity string)) (unsubscribe func())
	resign(ctx context.Context, target string) error
	Lease() time.Duration
	retryInterval() time.Duration
}

var _ member = (*Elector)(nil)

// join registers a started member and starts the round goroutine with the
// first one.
func (g *BalanceGroup) join(e member) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.members[e] = struct{}{}
	g.sorted = nil
	delete(g.handed, e.Role())
	g.stopLeads = nil
	g.running++
	if g.running == 1 {
		g.stop, g.done = make(chan struct{}), make(chan struct{})
		go g.loop(g.stop, g.done)
	}
}

// leave deregisters a stopping member; the last one ends the round
// goroutine and waits for it.
func (g *BalanceGroup) leave(e member) {
	g.mu.Lock()
	if _, ok := g.members[e]; !ok {
		g.mu.Unlock()
		return
	}
	delete(g.members, e)
	g.sorted = nil
	if id, ok := e.learnedLeader(); ok && id != e.Identity() {
		g.handed[e.Role()] = handover{to: id, until: time.Now().Add(e.Lease())}
	}
	g.running--
	var stop, done chan struct{}
	if g.running == 0 {
		stop, done = g.stop, g.done
	}
	g.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// held reports whether this instance leads at least its share, so its
// candidates take a free role only after one RetryInterval (B1). It is
// checked when a candidate wakes, so an instance stops taking roles first
// the moment it reaches its share, not at the next round.
func (g *BalanceGroup) held() bool {
	share := g.share.Load()
	return share > 0 && g.leading.Load() >= share
}

// watchTaker subscribes, before a handover, to e's notice of a new leader
// other than self: took is signalled when it comes. unsubscribe ends the
// subscription.
func watchTaker(e member, self string) (took <-chan struct{}, unsubscribe func()) {
	c := make(chan struct{}, 1)
	unsubscribe = e.OnNewLeader(func(id string) {
		if id != self {
			select {
			case c <- struct{}{}:
			default:
			}
		}
	})
	return c, unsubscribe
}

// awaitTaker waits, up to a quarter of retry, until this instance learns
// that another participant took e's role (took, from watchTaker), so the
// handovers chosen next count this one from what the members learned.
func (g *BalanceGroup) awaitTaker(ctx context.Context, e member, self string, retry time.Duration, took <-chan struct{}) {
	if id, ok := e.Leader(); ok && id != self {
		return
	}
	t := time.NewTimer(retry / 4)
	defer t.Stop()
	select {
	case <-took:
	case <-t.C:
	case <-ctx.Done():
	}
}

// stillTakes reads the participants of e's role again just before a
// handover and reports whether taker is still among them; a failed read
// leaves the handover to go ahead, as chosen.
func stillTakes(ctx context.Context, e member, taker string) bool {
	ps, err := e.Participants(ctx)
	if err != nil {
		return true
	}
	return slices.ContainsFunc(ps, func(p Participant) bool { return p.Identity == taker })
}

// balanceHandovers bounds the handovers a round has under way at once
// (B1): each resigns a role to a named taker and waits, up to a quarter
// of RetryInterval, until this instance learns the taker took it. A group
// leading more than balanceHandovers × balanceHandoverDiv roles allows one
// handover at once per balanceHandoverDiv roles it leads (see
// handoverWidth).
const (
	balanceHandovers   = 16
	balanceHandoverDiv = 64
)

// handoverWidth is how many handovers a round of a group leading mine
// roles runs at once, and how many it chooses between two counts of the
// members' leads: 16 up to 1,024 roles, then one per 64 roles, so that a
// process leading 25,000 roles hands a third of them to a joiner in a few
// retry intervals, not in dozens, and counts its 50,000 members' leads
// some 40 times instead of 1,000.
func handoverWidth(mine int) int {
	return max(balanceHandovers, mine/balanceHandoverDiv)
}

// balanceReaders bounds the participant reads a round has under way at
// once. Over redislock concurrent reads travel together in pipelined
// round trips.
const balanceReaders = 64

// A group leading more than balanceSampleMin roles reads, after its first
// round, the participants of a rotating sample of them (balanceSampleMin,
// or one in balanceSampleDiv if more), plus any not read within
// balanceFullEvery rounds, and takes the others' from the last read; in
// any round whose sample shows a role's participants changed (a process
// joined or left), it reads them all. A steady fleet then reads about an
// eighth of its roles per round instead of every one (the reads were half
// of a balanced fleet's Redis load), every role is read again within
// balanceFullEvery rounds, and a join or leave that touches the sampled
// roles is seen in the same round as before.
const (
	balanceSampleMin = 64
	balanceSampleDiv = 8
	balanceFullEvery = 8
)

// handovers chooses the takers of one round's handovers (B1). A taker is
// counted with the roles its members learned it leads, read afresh every
// width choices, with each role whose handover was under way at
// that read counted for its taker whether or not it was learned yet (once,
// never twice), plus the handovers chosen since: so handovers running at
// once never take an identity past its share, nor keep one under it.
type handovers struct {
	g     *BalanceGroup
	width int // handovers at once (handoverWidth)

	leads map[string]int // learned at the last read; nil before the first
	extra map[string]int // handovers chosen since the last read
	fresh int            // choices since the last read

	mu       sync.Mutex
	inflight map[member]string // handovers under way: member -> taker
}

// choose returns the participant of v's role, other than self, that leads
// fewest roles below share, counting the handovers as above; "" when there
// is none. The release names it, so it takes the role at once while the
// others hold back. It runs on the round's goroutine only.
func (h *handovers) choose(v roleView, self string, share int) string {
	if h.leads == nil || h.fresh >= h.width {
		// A role handed over and not yet learned counts for its taker,
		// one learned already for the leader learned: the same taker, so
		// each role counts once, read in one pass.
		h.g.mu.Lock()
		h.mu.Lock()
		h.leads = h.g.leadsLocked(h.inflight)
		h.mu.Unlock()
		h.g.mu.Unlock()
		h.extra = map[string]int{}
		h.fresh = 0
	}
	counts := make(map[string]int, len(v.ids))
	for _, id := range v.ids {
		counts[id] = h.leads[id] + h.extra[id]
	}
	ties, least := fewestLeads(v.ids, self, counts)
	if len(ties) == 0 || least >= share {
		return ""
	}
	taker := ties[0]
	h.fresh++
	h.extra[taker]++
	h.mu.Lock()
	h.inflight[v.e] = taker
	h.mu.Unlock()
	return taker
}

// done ends the handover of e's role.
func (h *handovers) done(e member) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.inflight, e)
}

// participantsRead is one member's participants as a round read them.
type participantsRead struct {
	read   bool // the member led its role, so they were read
	ps     []Participant
	cached []string // not read this round: the identities the last read found
	err    error
}

// readParticipants reads the participants of the members pick selects,
// balanceReaders at once, into out (indexed like members).
func (g *BalanceGroup) readParticipants(ctx context.Context, members []member, pick []int, out []participantsRead) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(balanceReaders, len(pick)) {
		wg.Go(func() {
			for i := range work {
				ps, err := members[i].Participants(ctx)
				out[i] = participantsRead{read: true, ps: ps, err: err}
			}
		})
	}
	for _, i := range pick {
		work <- i
	}
	close(work)
	wg.Wait()
}

// readLed fills the participants of every member that leads its role: read
// from the backend for all of them when it leads no more than
// balanceSampleMin roles, otherwise for a rotating sample and for the
// roles not read yet or not within balanceFullEvery rounds, the others
// from the last read (cached); and for all of them after all when a role
// read in the sample shows other participants than its last read.
func (g *BalanceGroup) readLed(ctx context.Context, members []member) []participantsRead {
	g.rounds++
	out := make([]participantsRead, len(members))
	var led []int
	for i, e := range members {
		if e.IsLeader() {
			led = append(led, i)
		}
	}
	if len(led) <= balanceSampleMin {
		g.readParticipants(ctx, members, led, out)
		g.noteRead(members, led, out)
		return out
	}
	n := max(balanceSampleMin, len(led)/balanceSampleDiv)
	pick := make([]int, 0, n)
	rest := make([]int, 0, len(led))
	g.cursor %= len(led)
	g.mu.Lock()
	for k := range led {
		i := led[(g.cursor+k)%len(led)]
		role := members[i].Role()
		_, known := g.ids[role]
		if k < n || !known || g.rounds-g.readAt[role] >= balanceFullEvery {
			pick = append(pick, i)
		} else {
			rest = append(rest, i)
		}
	}
	before := make([][]string, len(pick))
	for k, i := range pick {
		before[k] = slices.Clone(g.ids[members[i].Role()])
	}
	g.mu.Unlock()
	g.cursor += n
	g.readParticipants(ctx, members, pick, out)
	changed := false
	for k, i := range pick {
		if r := out[i]; r.err == nil && before[k] != nil && !sameIdentities(before[k], r.ps) {
			changed = true
			break
		}
	}
	if changed {
		g.readParticipants(ctx, members, rest, out)
		pick = append(pick, rest...)
	} else {
		g.mu.Lock()
		for _, i := range rest {
			out[i] = participantsRead{read: true, cached: g.ids[members[i].Role()]}
		}
		g.mu.Unlock()
	}
	g.noteRead(members, pick, out)
	return out
}

// noteRead records the round in which the roles at pick were read.
func (g *BalanceGroup) noteRead(members []member, pick []int, out []participantsRead) {
	for _, i := range pick {
		if out[i].err == nil {
			g.readAt[members[i].Role()] = g.rounds
		}
	}
}

// sameIdentities reports whether ps has exactly the identities ids has.
func sameIdentities(ids []string, ps []Participant) bool {
	if len(ids) != len(ps) {
		return false
	}
	for _, p := range ps {
		if !slices.Contains(ids, p.Identity) {
			return false
		}
	}
	return true
}

// fewestLeads returns the identities of ids other than self that lead the
// fewest roles by leads, in the order of ids, and that number.
func fewestLeads(ids []string, self string, leads map[string]int) (ties []string, least int) {
	for _, id := range ids {
		switch n := leads[id]; {
		case id == self:
		case len(ties) == 0 || n < least:
			ties, least = []string{id}, n
		case n == least:
			ties = append(ties, id)
		}
	}
	return ties, least
}

// successor names the participant e's role should go to when e stops
// while leading it: the other participant, among those the last round saw,
// that leads fewest roles as this instance learned. "" when unknown. Naming
// it lets the survivors of a graceful leave take the roles without racing
// for them (B1).
func (g *BalanceGroup) successor(e member) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	ids := g.ids[e.Role()]
	if len(ids) == 0 {
		return ""
	}
	now := time.Now()
	leads := g.stopLeads
	ttl := max(stopLeadsTTL, stopLeadsCostFactor*g.stopLeadsCost)
	if leads == nil || now.Sub(g.stopLeadsAt) >= ttl || now.Before(g.stopLeadsAt) {
		leads = g.leadsLocked(nil)
		after := time.Now()
		g.stopLeads, g.stopLeadsAt, g.stopLeadsCost = leads, after, after.Sub(now)
	}
	// The fewest leads wins, counting the roles stopped members handed
	// over (concurrent stops take turns on the mutex, so each sees the
	// choices before it); ties are spread by the role's name.
	ties, _ := fewestLeads(ids, e.Identity(), leads)
	if len(ties) == 0 {
		return ""
	}
	slices.Sort(ties)
	h := fnv.New32a()
	_, _ = h.Write([]byte(e.Role()))
	taker := ties[h.Sum32()%uint32(len(ties))]
	g.handed[e.Role()] = handover{to: taker, until: now.Add(e.Lease())}
	// The role now counts for its taker, no longer for the member that
	// stops (as a recount after its leave would find).
	leads[taker]++
	if id, ok := e.learnedLeader(); ok && leads[id] > 0 {
		leads[id]--
	}
	return taker
}

// stopLeadsTTL is how long successor reuses its count of the members'
// leads (see BalanceGroup.stopLeads): long enough that a process stopping
// 100,000 members counts them a few hundred times, not 100,000 times;
// short enough that a stop after the leads changed sees them.
const stopLeadsTTL = 50 * time.Millisecond

// stopLeadsCostFactor bounds the share of a leave's time successor spends
// counting leads to about 1 in 20: a group of 50,000 members, whose count
// takes some 10 ms on a busy machine, recounts every 200 ms or so, each
// recount holding up the group's other stops.
const stopLeadsCostFactor = 20

// handover is a role a stopping member handed to another participant.
type handover struct {
	to    string
	until time.Time
}

// leadsLocked counts the roles each identity leads as the members learned
// it, plus the roles stopped members handed over (see handed). A member in
// handing counts for the taker it names instead.
func (g *BalanceGroup) leadsLocked(handing map[member]string) map[string]int {
	leads := map[string]int{}
	for m := range g.members {
		if taker, ok := handing[m]; ok {
			leads[taker]++
		} else if id, ok := m.learnedLeader(); ok {
			leads[id]++
		}
	}
	now := time.Now()
	for role, h := range g.handed {
		if now.After(h.until) {
			delete(g.handed, role)
			continue
		}
		leads[h.to]++
	}
	return leads
}

// snapshot lists the members by role. The caller must not change the
// list: the rounds share it until the members change.
func (g *BalanceGroup) snapshot() []member {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sorted != nil || len(g.members) == 0 {
		return g.sorted
	}
	type keyed struct {
		role string
		e    member
	}
	ks := make([]keyed, 0, len(g.members))
	for e := range g.members {
		ks = append(ks, keyed{e.Role(), e})
	}
	slices.SortFunc(ks, func(a, b keyed) int { return cmp.Compare(a.role, b.role) })
	es := make([]member, len(ks))
	for i, k := range ks {
		es[i] = k.e
	}
	g.sorted = es
	return es
}

// forget drops what the group keeps per role for the roles none of its
// members runs any longer (a process that stops some roles and starts
// others keeps no trace of the old ones), and the moves older than a
// lease, which no longer hold a role back (hysteresis). The per-role
// maps are rebuilt only when they hold more roles than there are members.
func (g *BalanceGroup) forget(members []member, lease time.Duration, now time.Time) {
	maps.DeleteFunc(g.moved, func(_ string, at time.Time) bool { return now.Sub(at) >= lease })
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.readAt) <= len(members) && len(g.ids) <= len(members) && len(g.moved) <= len(members) {
		return
	}
	runs := make(map[string]struct{}, len(members))
	for _, e := range members {
		runs[e.Role()] = struct{}{}
	}
	gone := func(role string) bool {
		_, ok := runs[role]
		return !ok
	}
	maps.DeleteFunc(g.readAt, func(role string, _ uint64) bool { return gone(role) })
	maps.DeleteFunc(g.ids, func(role string, _ []string) bool { return gone(role) })
	maps.DeleteFunc(g.moved, func(role string, _ time.Time) bool { return gone(role) })
}

// loop runs a round every RetryInterval until stop is closed.
func (g *BalanceGroup) loop(stop, done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-done:
		}
	}()
	for {
		wait := g.round(ctx)
		t := time.NewTimer(wait)
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// roleView is one role as a round sees it.
type roleView struct {
	e      member
	ids    []string // participants' identities
	leader string   // "" when unknown
}

// round looks at every member role once, resigns this instance's surplus,
// and sets each member's hold; it returns the wait before the next round.
// It counts (count), chooses the roles to hand over (chooseMoves) and
// hands them over (handOver).
func (g *BalanceGroup) round(ctx context.Context) time.Duration {
	members := g.snapshot()
	if len(members) == 0 {
		return time.Second
	}
	retry, lease := members[0].retryInterval(), members[0].Lease()
	for _, e := range members {
		retry, lease = min(retry, e.retryInterval()), max(lease, e.Lease())
	}
	self := members[0].Identity()
	g.forget(members, lease, time.Now())
	c, ok := g.count(ctx, members, self)
	if !ok {
		return retry
	}
	g.share.Store(int64(c.share))
	changed := g.membershipChanged(c.identities)
	surplus := c.leads[self] - c.share
	if surplus <= 0 {
		return retry
	}
	now := time.Now()
	moves := g.chooseMoves(c, self, changed, lease, now)
	g.handOver(ctx, c, moves, surplus, self, retry, lease, now)
	return retry
}

// roundCount is what a round counted: the member roles it could see,
// the identities of their participants, the roles each leads and the
// share, ceil(R/N) (B1).
type roundCount struct {
	views      []roleView
	identities map[string]bool
	leads      map[string]int
	share      int
}

// count reads the participants of the roles this instance leads (the
// others count with this instance as their participant) and counts R,
// N, the share and each identity's leads. ok is false when ctx ended
// during the reads or there is nothing to count.
func (g *BalanceGroup) count(ctx context.Context, members []member, self string) (c roundCount, ok bool) {
	reads := g.readLed(ctx, members)
	views := make([]roleView, 0, len(members))
	identities := map[string]bool{}
	// listed: the identities found in the participants of the roles this
	// instance leads (read now or at an earlier round), this instance's
	// own included.
	listed := map[string]bool{self: true}
	read := false // a list of participants of a role this instance leads was read
	// The roles whose participants were not read share one list (full:
	// an append copies it).
	selfOnly := []string{self}
	for i, e := range members {
		r := reads[i]
		if !r.read {
			// Only the roles this instance leads need their participants
			// read (to find a taker and to count identities); the others
			// count in R with this instance as their participant.
			views = append(views, roleView{e: e, ids: selfOnly[:1:1]})
			identities[self] = true
			if id, ok := e.Leader(); ok {
				views[len(views)-1].leader = id
				identities[id] = true // a participant of this role too
			}
			continue
		}
		if r.cached != nil {
			v := roleView{e: e, ids: r.cached}
			read = true
			for _, id := range r.cached {
				identities[id] = true
				listed[id] = true
			}
			if e.IsLeader() {
				v.leader = self
			}
			views = append(views, v)
			continue
		}
		ps, err := r.ps, r.err
		if err != nil {
			if ctx.Err() != nil {
				return roundCount{}, false
			}
			g.log.Debug("LeadershipBalanceLookupFailed", zap.String("role", e.Role()), zap.Error(err))
			continue
		}
		if len(ps) == 0 {
			continue
		}
		v := roleView{e: e}
		read = true
		g.mu.Lock()
		g.ids[e.Role()] = g.ids[e.Role()][:0]
		for _, p := range ps {
			g.ids[e.Role()] = append(g.ids[e.Role()], p.Identity)
		}
		g.mu.Unlock()
		for _, p := range ps {
			v.ids = append(v.ids, p.Identity)
			identities[p.Identity] = true
			listed[p.Identity] = true
			if p.Leader {
				v.leader = p.Identity
			}
		}
		if e.IsLeader() {
			v.leader = self
		}
		views = append(views, v)
	}
	if len(views) == 0 || len(identities) == 0 {
		return roundCount{}, false
	}
	// N counts the identities listed among the participants of the roles
	// this instance leads: a process that takes part in the roles is a
	// candidate of every role it does not lead. One that appears only as
	// the leader of other roles has withdrawn its candidates: it is
	// leaving, and its roles are about to be handed to those that stay.
	// Counting it would make the share too small while they come in, and
	// those that stay would resign roles to each other that the leave
	// then evens out anyway, each such role moved twice. When this
	// instance leads nothing yet, it has no list to go by, and the
	// leaders it learned count (it has no surplus to hand over either).
	n := len(identities)
	if read {
		n = len(listed)
	}
	share := (len(views) + n - 1) / n
	leads := map[string]int{}
	for _, v := range views {
		if v.leader != "" {
			leads[v.leader]++
		}
	}
	return roundCount{views: views, identities: identities, leads: leads, share: share}, true
}

// membershipChanged reports whether the identities differ from the last
// round's, and remembers them.
func (g *BalanceGroup) membershipChanged(identities map[string]bool) bool {
	keys := slices.Sorted(func(yield func(string) bool) {
		for id := range identities {
			if !yield(id) {
				return
			}
		}
	})
	membership := ""
	for _, k := range keys {
		membership += k + "\x00"
	}
	changed := membership != g.members0
	g.members0 = membership
	return changed
}

// move is a role a round may hand over, with the fewest leads among its
// other participants under their share.
type move struct {
	v      roleView
	others int
}

// chooseMoves returns the roles to hand over, best first: led here, with
// a participant under its share, not moved within a lease (unless the
// participants changed), whose least-leading other participant leads
// least.
func (g *BalanceGroup) chooseMoves(c roundCount, self string, changed bool, lease time.Duration, now time.Time) []move {
	var moves []move
	for _, v := range c.views {
		if v.leader != self || !v.e.IsLeader() {
			continue
		}
		if at, ok := g.moved[v.e.Role()]; ok && !changed && now.Sub(at) < lease {
			continue
		}
		least := -1
		for _, id := range v.ids {
			if id == self {
				continue
			}
			if n := c.leads[id]; n < c.share && (least < 0 || n < least) {
				least = n
			}
		}
		if least >= 0 {
			moves = append(moves, move{v, least})
		}
	}
	slices.SortStableFunc(moves, func(a, b move) int { return cmp.Compare(a.others, b.others) })
	return moves
}

// handOver hands over up to surplus of moves, handoverWidth at once, each
// to the taker handovers chooses, and waits for them.
func (g *BalanceGroup) handOver(ctx context.Context, c roundCount, moves []move, surplus int, self string, retry, lease time.Duration, now time.Time) {
	mine := c.leads[self]
	h := handovers{g: g, width: handoverWidth(mine), inflight: map[member]string{}}
	sem := make(chan struct{}, h.width)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, m := range moves {
		if surplus == 0 {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		taker := h.choose(m.v, self, c.share)
		if taker == "" {
			<-sem
			continue // every other participant reached its share meanwhile
		}
		surplus--
		g.moved[m.v.e.Role()] = now
		g.log.Info("LeadershipBalanceHandover", zap.String("role", m.v.e.Role()), zap.String("to", taker),
			zap.Int("leads", mine), zap.Int("share", c.share), zap.Int("participants", len(c.identities)))
		wg.Go(func() {
			defer func() { <-sem }()
			defer h.done(m.v.e)
			took, unsubscribe := watchTaker(m.v.e, self)
			defer unsubscribe()
			rctx, cancel := context.WithTimeout(ctx, lease)
			defer cancel()
			if !stillTakes(rctx, m.v.e, taker) {
				// The taker left since the round read the participants
				// (a process stopping its electors deregisters them one
				// by one): a release named to it would leave the role to
				// the others after their RetryInterval, and the next
				// round, still counting it, would hand over more.
				g.log.Debug("LeadershipBalanceTakerGone", zap.String("role", m.v.e.Role()), zap.String("to", taker))
				return
			}
			if err := m.v.e.resign(rctx, taker); err != nil {
				g.log.Warn("LeadershipBalanceHandoverFailed", zap.String("role", m.v.e.Role()), zap.Error(err))
			}
			g.awaitTaker(ctx, m.v.e, self, retry, took)
		})
	}
}
