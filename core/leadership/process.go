package leadership

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/locking"
)

// DefaultStopWarnAfter is ProcessOptions.StopWarnAfter's default.
const DefaultStopWarnAfter = time.Second

// ProcessOptions configures a Process. The zero value is valid.
type ProcessOptions struct {
	// Identity is the identity every elector of the process stores with
	// its lease and registers as a participant (P1, B1). Default (empty):
	// one derived from the host name and the process id, as
	// locking.DefaultOwner.
	Identity string

	// Balance makes every elector of the process a member of its balance
	// group (B1), whatever its Options.Balance. Default false: an elector
	// balances only when its own Options.Balance is set.
	Balance bool

	// Logger receives the process's own log (the leave's warnings about
	// work that does not return, the balance group's decisions). Default:
	// none (zap.NewNop). Electors log through their WithLogger option.
	Logger *zap.Logger

	// StopWarnAfter is how long the leave waits for a role's work after
	// cancelling it before it names what still runs in a Warn log and
	// reports the role as settled; the role keeps its lease until the
	// work returns (E11, O2). Default (0): DefaultStopWarnAfter. Negative
	// is an error.
	StopWarnAfter time.Duration
}

// Work is leader work attached to one role of a Process (H3): a
// scheduler, a channel's reader. The process starts it when the role
// starts, before the role's elector contends, and at the leave stops it
// and waits for it before the elector releases the lease (E11). The work
// itself runs its leader-only part while the role leads (a scheduler runs
// its jobs only then).
type Work interface {
	// Start starts the work and returns; ctx bounds starting only.
	Start(ctx context.Context) error
	// Stop cancels the work and returns once it has returned, or when ctx
	// ends, with ctx's error. Later calls wait again.
	Stop(ctx context.Context) error
	// Running reports what still runs (for the leave's warning).
	Running() []Activity
}

// Activity is one running piece of a Work.
type Activity struct {
	// Kind names the activity in logs: "job" or "reader".
	Kind string
	// Name is the job's or reader's name.
	Name string
	// Since is when it started.
	Since time.Time
}

// Process is one process's part in the elections of many roles over one
// lock (H1): it gives its electors one identity and one balance group
// (B1), holds the work attached to each role (H3) and leaves as a whole
// (H2). Build it with NewProcess, create its electors with Elector,
// attach work with Attach, start roles with StartRole or Start, and end
// with Leave. It is safe for concurrent use.
//
// A process is built for many roles: its electors' acquisition attempts,
// subscriptions and renewals each run at most 1,024 at a time, the others
// waiting their turn as small records (an attempt or renewal whose
// deadline passes while it waits is not sent, and its elector tries
// again), and its electors wake from one clock instead of a timer each.
// So thousands of roles won at once, and renewed together a RenewInterval
// later, hold no goroutine each. An elector made with NewElector sends
// its calls at once, each on a goroutine of its own.
type Process struct {
	lock     locking.Lock
	identity string
	balance  bool
	group    *BalanceGroup
	gates    processGates // its electors' acquisitions, subscriptions, renewals and machines (see Elector.procGate)
	clock    *clock       // wakes its electors (see clock)
	own      []Option     // every elector's identity, balance group, gates and clock, before the caller's options
	log      *zap.Logger
	warn     time.Duration

	mu    sync.Mutex
	roles map[string]*processRole
	order []*processRole // in creation order
	leave *leaveState    // nil until the leave begins
}

// processRole is one role of a process: its elector and its work.
type processRole struct {
	name    string
	e       *Elector
	work    []Work
	started bool // StartRole has begun: no more work joins

	// Made when the leave begins (beginLeave); the roles without work
	// share one, closed once they have all stopped.
	settled  chan struct{} // closed once released or named as stuck
	released chan struct{} // closed once the elector has stopped
	stopErr  error         // the elector's Stop error; read after released
}

// leaveState is a leave under way.
type leaveState struct {
	roles   []*processRole
	settled chan struct{} // closed once every role settled
	plain   chan struct{} // the roles without work: closed once they all stopped
}

// NewProcess returns a process over lock (H1). It fails for a nil lock,
// an identity an elector would refuse and a negative StopWarnAfter,
// naming the field and the value.
func NewProcess(lock locking.Lock, opts ProcessOptions) (*Process, error) {
	if lock == nil {
		return nil, fmt.Errorf("leadership: process: nil lock")
	}
	id := opts.Identity
	if id == "" {
		id = locking.DefaultOwner()
	}
	if err := checkIdentity(id); err != nil {
		return nil, fmt.Errorf("leadership: process: ProcessOptions.Identity: %w", err)
	}
	warn := opts.StopWarnAfter
	switch {
	case warn < 0:
		return nil, fmt.Errorf("%w: ProcessOptions.StopWarnAfter %v is negative", ErrInvalidOptions, warn)
	case warn == 0:
		warn = DefaultStopWarnAfter
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	p := &Process{lock: lock, identity: id, balance: opts.Balance, group: NewBalanceGroup(opts.Logger),
		log: log, warn: warn, roles: map[string]*processRole{},
		gates: newProcessGates(), clock: newClock()}
	caps := resolveCapabilities(lock)
	p.own = []Option{WithIdentity(p.identity), WithBalanceGroup(p.group), optionFunc(func(s *settings) { s.gates, s.clock, s.caps = &p.gates, p.clock, &caps })}
	return p, nil
}

// Identity returns the identity of the process's electors.
func (p *Process) Identity() string { return p.identity }

// Lock returns the lock the process's electors run over.
func (p *Process) Lock() locking.Lock { return p.lock }

// Elector creates the elector of role for this process (H1): it carries
// the process's identity and, with ProcessOptions.Balance or opts.Balance,
// joins the process's balance group (B1). o adds options (logger, meter
// and tracer providers); an identity or balance group given there wins
// over the process's. A role has one elector per process: a second call
// for role fails, as one after the leave began.
func (p *Process) Elector(role string, opts Options, o ...Option) (*Elector, error) {
	if p.balance {
		opts.Balance = true
	}
	eo := append(p.own[:len(p.own):len(p.own)], o...)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leave != nil {
		return nil, fmt.Errorf("leadership: process: elector for role %q: the process is leaving", role)
	}
	if _, ok := p.roles[role]; ok {
		return nil, fmt.Errorf("leadership: process: elector for role %q: the process has one already", role)
	}
	e, err := NewElector(role, p.lock, opts, eo...)
	if err != nil {
		return nil, err
	}
	r := &processRole{name: role, e: e}
	p.roles[role] = r
	p.order = append(p.order, r)
	return e, nil
}

// Roles returns the names of the process's roles, sorted.
func (p *Process) Roles() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(p.order))
	for _, r := range p.order {
		names = append(names, r.name)
	}
	slices.Sort(names)
	return names
}

// Electors returns the process's electors, in creation order.
func (p *Process) Electors() []*Elector {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*Elector, len(p.order))
	for i, r := range p.order {
		out[i] = r.e
	}
	return out
}

// Attach binds w to role (H3): w starts when the role starts, before its
// elector contends, and stops, waited for, before the elector releases
// the lease at the leave (E11). It fails for a role the process has no
// elector for, once the role has started and once the leave began.
func (p *Process) Attach(role string, w Work) error {
	if w == nil {
		return fmt.Errorf("leadership: process: attach to role %q: nil Work", role)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.roles[role]
	switch {
	case !ok:
		return fmt.Errorf("leadership: process: work for role %q: no such role (roles: %s)", role, p.namesLocked())
	case r.started || p.leave != nil:
		return fmt.Errorf("leadership: process: work for role %q is attached after the role started", role)
	}
	r.work = append(r.work, w)
	return nil
}

func (p *Process) namesLocked() string {
	if len(p.order) == 0 {
		return "none"
	}
	names := make([]string, len(p.order))
	for i, r := range p.order {
		names[i] = fmt.Sprintf("%q", r.name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// StartRole starts role: its work, in the order attached, then its
// elector (E1). A failure stops the work already started and is
// returned; the role can then only be left. ctx bounds starting only.
func (p *Process) StartRole(ctx context.Context, role string) error {
	p.mu.Lock()
	r, ok := p.roles[role]
	switch {
	case !ok:
		p.mu.Unlock()
		return fmt.Errorf("leadership: process: start role %q: no such role (roles: %s)", role, p.namesLocked())
	case p.leave != nil:
		p.mu.Unlock()
		return fmt.Errorf("leadership: process: start role %q: the process is leaving", role)
	case r.started:
		p.mu.Unlock()
		return fmt.Errorf("leadership: process: start role %q: already started", role)
	}
	r.started = true
	work := slices.Clone(r.work)
	p.mu.Unlock()
	for i, w := range work {
		if err := w.Start(ctx); err != nil {
			p.stopWork(work[:i], role)
			return fmt.Errorf("leadership: role %q: start work: %w", role, err)
		}
	}
	if err := r.e.Start(ctx); err != nil {
		p.stopWork(work, role)
		return err
	}
	return nil
}

// Start starts every role of the process not started yet, in creation
// order, stopping at the first error.
func (p *Process) Start(ctx context.Context) error {
	p.mu.Lock()
	var todo []string
	for _, r := range p.order {
		if !r.started {
			todo = append(todo, r.name)
		}
	}
	p.mu.Unlock()
	for _, role := range todo {
		if err := p.StartRole(ctx, role); err != nil {
			return err
		}
	}
	return nil
}

// stopWork stops work that started before a later start failed.
func (p *Process) stopWork(work []Work, role string) {
	for _, w := range work {
		if err := w.Stop(context.Background()); err != nil {
			p.log.Warn("LeaderWorkStopFailed", zap.String("role", role), zap.Error(err))
		}
	}
}

// Leave stops every role of the process as a leaving process does (H2):
// from the first moment its candidates make no new attempt and its
// leaders no renewal (but a leader with work renews until its work has
// returned, so the lease outlives work that outlasts it); each role's work is cancelled and waited for before
// its elector releases the lease (E11); the roles without work leave as
// StopAll stops electors (leaders hand over first, in parallel, then the
// others, so no role moves twice); a role whose work has not returned
// after StopWarnAfter is named in a Warn log (LeaderWorkStillRunning) and
// keeps its lease until the work returns, without holding up the others
// (O2).
//
// Leave returns once every role has released its lease, with their
// errors joined, or when ctx ends, with ctx's error and what keeps each
// remaining lease; the leave goes on in the background (a lease kept for
// work that never returns expires once the process exits). Every call
// waits for the same leave; later calls begin nothing. A process that
// left creates no elector and starts no role.
func (p *Process) Leave(ctx context.Context) error {
	ls := p.beginLeave()
	var errs []error
	for _, r := range ls.roles {
		select {
		case <-r.released:
			if r.stopErr != nil {
				errs = append(errs, r.stopErr)
			}
		case <-ctx.Done():
			return p.stuckError(ctx, ls)
		}
	}
	return errors.Join(errs...)
}

// LeaveSettled begins the leave, as Leave, and returns once every role
// has released its lease or been named as stuck (its work has not
// returned after StopWarnAfter), or when ctx ends, with ctx's error and
// what keeps each remaining lease. A composition that stops the rest of
// the app after the roles (leadershipfx) waits for it first, then for
// Leave.
func (p *Process) LeaveSettled(ctx context.Context) error {
	ls := p.beginLeave()
	select {
	case <-ls.settled:
		return nil
	case <-ctx.Done():
		return p.stuckError(ctx, ls)
	}
}

// beginLeave starts the leave once and returns it.
func (p *Process) beginLeave() *leaveState {
	p.mu.Lock()
	if p.leave != nil {
		ls := p.leave
		p.mu.Unlock()
		return ls
	}
	ls := &leaveState{roles: slices.Clone(p.order), settled: make(chan struct{}), plain: make(chan struct{})}
	for _, r := range ls.roles {
		// No work joins a role once the leave began (Attach).
		if len(r.work) == 0 {
			r.settled, r.released = ls.plain, ls.plain
		} else {
			r.settled, r.released = make(chan struct{}), make(chan struct{})
		}
	}
	p.leave = ls
	p.mu.Unlock()
	go p.run(ls)
	return ls
}

// run is the leave: the roles with work each stop it and then their
// elector; the others leave together as StopAll's electors do.
func (p *Process) run(ls *leaveState) {
	g := newCallGate(callsInFlight)
	for _, r := range ls.roles {
		// A leader with work keeps renewing until its work has returned
		// (E11, O2): its lease is kept, not left to expire, for work that
		// outlasts it. stopElectors sets the rest.
		if len(r.work) == 0 || !r.e.IsLeader() {
			r.e.leave(g)
		}
	}
	var plain []*processRole
	var wg sync.WaitGroup
	for _, r := range ls.roles {
		if len(r.work) == 0 {
			plain = append(plain, r)
			continue
		}
		wg.Go(func() { p.stopRole(r, g) })
	}
	if len(plain) > 0 {
		es := make([]*Elector, len(plain))
		lease := time.Duration(0)
		for i, r := range plain {
			es[i] = r.e
			lease = max(lease, r.e.opts.Lease)
		}
		// The releases are worth trying only while the leases run; they
		// do not end with the caller's ctx, so that a leave whose caller
		// stopped waiting still hands its roles over.
		ctx, cancel := context.WithTimeout(context.Background(), lease)
		errs := stopElectors(ctx, es, g)
		cancel()
		for i, r := range plain {
			r.stopErr = errs[i]
		}
		close(ls.plain)
	}
	go func() {
		for _, r := range ls.roles {
			<-r.settled
		}
		close(ls.settled)
	}()
	wg.Wait()
}

// stopRole cancels the role's work, waits for it and then stops the
// elector, which releases the lease (E11) through the leave's gate g.
// Work still running after StopWarnAfter is named at Warn and the role
// reported settled; the wait goes on until the work returns.
func (p *Process) stopRole(r *processRole, g *callGate) {
	defer close(r.released)
	begin := time.Now()
	workDone := make(chan struct{})
	go func() {
		defer close(workDone)
		var wg sync.WaitGroup
		for _, w := range r.work {
			wg.Go(func() {
				// No deadline: the lease is kept until the work returns.
				if err := w.Stop(context.Background()); err != nil {
					p.log.Warn("LeaderWorkStopFailed", zap.String("role", r.name), zap.Error(err))
				}
			})
		}
		wg.Wait()
	}()
	warn := time.NewTimer(p.warn)
	select {
	case <-workDone:
		warn.Stop()
	case <-warn.C:
		now := time.Now()
		running := r.running()
		for _, a := range running {
			p.log.Warn("LeaderWorkStillRunning", zap.String("role", r.name), zap.String(a.Kind, a.Name),
				zap.Duration("running_for", now.Sub(a.Since)), zap.String("lease", "kept until it returns"))
		}
		if len(running) == 0 {
			p.log.Warn("LeaderWorkStillRunning", zap.String("role", r.name), zap.String("lease", "kept until it returns"))
		}
		close(r.settled)
		<-workDone
		p.log.Info("LeaderWorkReturned", zap.String("role", r.name), zap.Duration("after", time.Since(begin)))
	}
	r.e.leave(g)
	ctx, cancel := context.WithTimeout(context.Background(), r.e.opts.Lease)
	defer cancel()
	r.stopErr = r.e.Stop(ctx)
	select {
	case <-r.settled:
	default:
		close(r.settled)
	}
}

// running lists the role's running activities.
func (r *processRole) running() []Activity {
	var out []Activity
	for _, w := range r.work {
		out = append(out, w.Running()...)
	}
	return out
}

// stuckError logs and returns what keeps the leases of the roles that
// have not released when ctx has ended.
func (p *Process) stuckError(ctx context.Context, ls *leaveState) error {
	var errs []error
	for _, r := range ls.roles {
		errs = append(errs, p.stuck(r))
	}
	return fmt.Errorf("%w: %w", ctx.Err(), errors.Join(errs...))
}

// ErrStillReleasing is a role whose work has returned, or that has none,
// but whose release has not finished when a leave's ctx ends.
var ErrStillReleasing = errors.New("releasing its lease")

// stuck logs and returns what keeps r's lease (nil once released).
func (p *Process) stuck(r *processRole) error {
	select {
	case <-r.released:
		return nil
	default:
	}
	now := time.Now()
	var names []string
	for _, a := range r.running() {
		names = append(names, fmt.Sprintf("%s %q running for %v", a.Kind, a.Name, now.Sub(a.Since).Round(time.Millisecond)))
	}
	if len(names) == 0 {
		return fmt.Errorf("leadership: role %q: %w", r.name, ErrStillReleasing)
	}
	p.log.Error("LeaseKeptForRunningWork", zap.String("role", r.name), zap.Strings("running", names))
	return fmt.Errorf("leadership: role %q keeps its lease until its work returns or the process exits: %s",
		r.name, strings.Join(names, ", "))
}
