package leadership_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

func mustProcess(t *testing.T, lock locking.Lock, o leadership.ProcessOptions) *leadership.Process {
	t.Helper()
	p, err := leadership.NewProcess(lock, o)
	if err != nil {
		t.Fatalf("NewProcess: %v", err)
	}
	return p
}

func processElector(t *testing.T, p *leadership.Process, role string, o leadership.Options) *leadership.Elector {
	t.Helper()
	e, err := p.Elector(role, o)
	if err != nil {
		t.Fatalf("Elector(%q): %v", role, err)
	}
	return e
}

// TestProcess_H1_ZeroOptionsAndIdentity: the zero ProcessOptions is valid
// and gives every elector the host-and-pid identity; a set identity is
// every elector's; Balance makes every elector balance; bad options and
// a second elector for a role fail, naming what is wrong.
func TestProcess_H1_ZeroOptionsAndIdentity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		p := mustProcess(t, lock, leadership.ProcessOptions{})
		e := processElector(t, p, "billing", leadership.Options{})
		if got, want := e.Identity(), locking.DefaultOwner(); got != want || p.Identity() != want {
			t.Fatalf("identity %q (process %q), want %q", got, p.Identity(), want)
		}
		if leadership.Describe(e).Balance {
			t.Fatal("an elector of a process without Balance balances")
		}
		if _, err := p.Elector("billing", leadership.Options{}); err == nil || !strings.Contains(err.Error(), `"billing"`) {
			t.Fatalf("second elector for billing: %v", err)
		}

		q := mustProcess(t, lock, leadership.ProcessOptions{Identity: "node-a", Balance: true})
		for _, role := range []string{"billing", "reports"} {
			e := processElector(t, q, role, leadership.Options{})
			if e.Identity() != "node-a" || !leadership.Describe(e).Balance {
				t.Fatalf("%s: identity %q balance %t, want node-a and true", role, e.Identity(), leadership.Describe(e).Balance)
			}
		}

		if _, err := leadership.NewProcess(nil, leadership.ProcessOptions{}); err == nil {
			t.Fatal("NewProcess(nil lock) succeeded")
		}
		_, err := leadership.NewProcess(lock, leadership.ProcessOptions{StopWarnAfter: -time.Second})
		if !errors.Is(err, leadership.ErrInvalidOptions) || !strings.Contains(err.Error(), "StopWarnAfter") || !strings.Contains(err.Error(), "-1s") {
			t.Fatalf("negative StopWarnAfter: %v", err)
		}
		if _, err := leadership.NewProcess(lock, leadership.ProcessOptions{Identity: "bad\nid"}); err == nil || !strings.Contains(err.Error(), "Identity") {
			t.Fatalf("bad identity: %v", err)
		}
		if err := p.Leave(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := q.Leave(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestProcess_H1_B1_ProcessesBalanceTheirRoles: two processes with
// Balance over six roles, the first started alone, end up leading three
// each: the process's electors form one balance group.
func TestProcess_H1_B1_ProcessesBalanceTheirRoles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		var ps []*leadership.Process
		electors := map[string][]*leadership.Elector{}
		for _, id := range []string{"a", "b"} {
			p := mustProcess(t, lock, leadership.ProcessOptions{Identity: id, Balance: true})
			ps = append(ps, p)
			for i := range 6 {
				electors[id] = append(electors[id], processElector(t, p, fmt.Sprintf("r%d", i), fastOpts()))
			}
		}
		if err := ps[0].Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := leading(electors["a"]); n != 6 {
			t.Fatalf("a alone leads %d roles, want 6", n)
		}
		if err := ps[1].Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(4 * fastOpts().RetryInterval)
		synctest.Wait()
		if a, b := leading(electors["a"]), leading(electors["b"]); a != 3 || b != 3 {
			t.Fatalf("a leads %d, b %d: want 3 each", a, b)
		}
		for _, p := range ps {
			if err := p.Leave(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func leading(es []*leadership.Elector) int {
	n := 0
	for _, e := range es {
		if e.IsLeader() {
			n++
		}
	}
	return n
}

// TestProcess_H2_LeaveHandsOverOnce: a process leading every role
// leaves; the other process, a candidate for each, takes every role at
// once (no lease runs out), each in one term: no role moved twice. The
// leaving process's electors are stopped when Leave returns.
func TestProcess_H2_LeaveHandsOverOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		a := mustProcess(t, lock, leadership.ProcessOptions{Identity: "a"})
		b := mustProcess(t, lock, leadership.ProcessOptions{Identity: "b"})
		o := leadership.DefaultOptions()
		var as, bs []*leadership.Elector
		for i := range 20 {
			role := fmt.Sprintf("r%d", i)
			as = append(as, processElector(t, a, role, o))
			bs = append(bs, processElector(t, b, role, o))
		}
		if err := a.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := b.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if leading(as) != 20 || leading(bs) != 0 {
			t.Fatalf("before the leave a leads %d, b %d", leading(as), leading(bs))
		}
		begin := time.Now()
		if err := a.Leave(context.Background()); err != nil {
			t.Fatalf("Leave: %v", err)
		}
		synctest.Wait()
		if d := time.Since(begin); d != 0 {
			t.Fatalf("the leave took %v of fake time, want none (handover, not expiry)", d)
		}
		for i, e := range bs {
			if !e.IsLeader() || e.Term() != 1 {
				t.Fatalf("r%d: b leader %t term %d, want leader in its first term", i, e.IsLeader(), e.Term())
			}
			if as[i].IsLeader() || as[i].Token().Err() == nil {
				t.Fatalf("r%d: a still leads after Leave", i)
			}
		}
		if err := a.Leave(context.Background()); err != nil {
			t.Fatalf("second Leave: %v", err)
		}
		if _, err := a.Elector("late", o); err == nil {
			t.Fatal("Elector after Leave succeeded")
		}
		if err := b.Leave(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// recordWork is a Work that records its start and whether the role's
// lease was held when its stop was asked and when it returned.
type recordWork struct {
	name    string
	lock    *locking.DistributedLock
	role    string
	block   chan struct{} // Stop waits for it when set
	started atomic.Bool

	mu           sync.Mutex
	heldAtReturn bool
	stopped      bool
}

func (w *recordWork) Start(context.Context) error { w.started.Store(true); return nil }

func (w *recordWork) Stop(context.Context) error {
	if w.block != nil {
		<-w.block
	}
	_, held, err := w.lock.Holder(context.Background(), "leader:"+w.role)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.heldAtReturn, w.stopped = held && err == nil, true
	return nil
}

func (w *recordWork) Running() []leadership.Activity {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || !w.started.Load() {
		return nil
	}
	return []leadership.Activity{{Kind: "job", Name: w.name, Since: time.Now()}}
}

// TestProcess_H3_WorkStopsBeforeTheRelease: work attached to a role
// starts with it, before the elector contends, and has returned, the
// lease still held, when the leave releases the lease (E11). Work cannot
// join a started role.
func TestProcess_H3_WorkStopsBeforeTheRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		p := mustProcess(t, lock, leadership.ProcessOptions{})
		e := processElector(t, p, "billing", leadership.DefaultOptions())
		w := &recordWork{name: "invoices", lock: lock, role: "billing"}
		if err := p.Attach("billing", w); err != nil {
			t.Fatal(err)
		}
		if err := p.Attach("payroll", w); err == nil || !strings.Contains(err.Error(), `"payroll"`) || !strings.Contains(err.Error(), `"billing"`) {
			t.Fatalf("Attach to an unknown role: %v", err)
		}
		if err := p.StartRole(context.Background(), "billing"); err != nil {
			t.Fatal(err)
		}
		if !w.started.Load() {
			t.Fatal("work not started with its role")
		}
		synctest.Wait()
		if !e.IsLeader() {
			t.Fatal("not leading")
		}
		if err := p.Attach("billing", w); err == nil {
			t.Fatal("Attach after the role started succeeded")
		}
		if err := p.Leave(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !w.heldAtReturn {
			t.Fatal("the lease was released before the work returned (E11)")
		}
		if _, held, _ := lock.Holder(context.Background(), "leader:billing"); held {
			t.Fatal("lease held after Leave")
		}
	})
}

// TestProcess_H3_O2_StuckWorkKeepsOnlyItsRole: a role whose work does not
// return keeps its lease and is named at Warn after StopWarnAfter; the
// other role releases at once; LeaveSettled returns then, and Leave once
// the work returned and the lease went back.
func TestProcess_H3_O2_StuckWorkKeepsOnlyItsRole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		log, logs := observed()
		p := mustProcess(t, lock, leadership.ProcessOptions{Logger: log})
		processElector(t, p, "billing", leadership.DefaultOptions())
		processElector(t, p, "reports", leadership.DefaultOptions())
		release := make(chan struct{})
		w := &recordWork{name: "invoices", lock: lock, role: "billing", block: release}
		if err := p.Attach("billing", w); err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		left := make(chan error, 1)
		go func() { left <- p.Leave(context.Background()) }()
		synctest.Wait()
		held := func(role string) bool {
			_, ok, _ := lock.Holder(context.Background(), "leader:"+role)
			return ok
		}
		if held("reports") || !held("billing") {
			t.Fatalf("reports held %t (want released at once), billing held %t (want kept)", held("reports"), held("billing"))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		begin := time.Now()
		if err := p.LeaveSettled(ctx); err != nil {
			t.Fatalf("LeaveSettled: %v", err)
		}
		if d := time.Since(begin); d != leadership.DefaultStopWarnAfter {
			t.Fatalf("settled after %v, want StopWarnAfter", d)
		}
		warn := logs.FilterMessage("LeaderWorkStillRunning").All()
		if len(warn) != 1 || warn[0].ContextMap()["role"] != "billing" || warn[0].ContextMap()["job"] != "invoices" {
			t.Fatalf("warnings %v", warn)
		}
		short, cancelShort := context.WithTimeout(context.Background(), time.Second)
		defer cancelShort()
		if err := p.Leave(short); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `job "invoices"`) {
			t.Fatalf("Leave with a ctx that ends first: %v", err)
		}
		if !held("billing") {
			t.Fatal("billing released while its work runs")
		}
		close(release)
		if err := <-left; err != nil {
			t.Fatalf("Leave: %v", err)
		}
		if held("billing") || !w.heldAtReturn {
			t.Fatalf("after the work returned: billing held %t, held at the work's return %t", held("billing"), w.heldAtReturn)
		}
	})
}

// TestProcess_H3_FailedWorkStartStopsTheStarted: a work whose Start fails
// stops the work started before it; the elector never starts.
func TestProcess_H3_FailedWorkStartStopsTheStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		p := mustProcess(t, lock, leadership.ProcessOptions{})
		e := processElector(t, p, "billing", leadership.DefaultOptions())
		first := &recordWork{name: "first", lock: lock, role: "billing"}
		if err := p.Attach("billing", first); err != nil {
			t.Fatal(err)
		}
		if err := p.Attach("billing", failingWork{}); err != nil {
			t.Fatal(err)
		}
		err := p.StartRole(context.Background(), "billing")
		if err == nil || !strings.Contains(err.Error(), "no database") || !strings.Contains(err.Error(), `"billing"`) {
			t.Fatalf("StartRole: %v", err)
		}
		synctest.Wait()
		first.mu.Lock()
		stopped := first.stopped
		first.mu.Unlock()
		if !stopped || e.IsLeader() || e.Term() != 0 {
			t.Fatalf("first work stopped %t, leader %t term %d", stopped, e.IsLeader(), e.Term())
		}
		if err := p.Leave(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

type failingWork struct{}

func (failingWork) Start(context.Context) error    { return errors.New("no database") }
func (failingWork) Stop(context.Context) error     { return nil }
func (failingWork) Running() []leadership.Activity { return nil }

// startHeldProcess starts a process "a" of CallsInFlight + 100 roles
// over an orderProvider that holds every acquisition attempt until
// letAttemptsGo, and returns the provider, the process and its number of
// roles.
func startHeldProcess(t *testing.T) (*orderProvider, *leadership.Process, int) {
	t.Helper()
	p, lock := newOrderLock(t)
	p.mu.Lock()
	p.agate = make(chan struct{})
	p.mu.Unlock()
	proc, n := startManyRoles(t, lock)
	return p, proc, n
}

// startManyRoles starts a process, identity a, of more roles over lock
// than it runs calls at once, and returns it with its number of roles.
func startManyRoles(t *testing.T, lock locking.Lock) (*leadership.Process, int) {
	t.Helper()
	proc := mustProcess(t, lock, leadership.ProcessOptions{Identity: "a"})
	n := leadership.CallsInFlight + 100
	for i := range n {
		if _, err := proc.Elector(fmt.Sprintf("r%d", i), fastOpts()); err != nil {
			t.Fatal(err)
		}
	}
	if err := proc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return proc, n
}

// allLeadThenLeave fails unless every elector of proc leads (when says
// after what), then makes the process leave.
func allLeadThenLeave(t *testing.T, proc *leadership.Process, when string) {
	t.Helper()
	for i, e := range proc.Electors() {
		if !e.IsLeader() {
			t.Fatalf("elector %d (%s) does not lead %s", i, e.Role(), when)
		}
	}
	if err := proc.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// letAttemptsGo lets the held acquisition attempts go and holds no more.
func (p *orderProvider) letAttemptsGo() {
	p.mu.Lock()
	hold := p.agate
	p.agate = nil
	p.mu.Unlock()
	close(hold)
}

// TestProcess_H1_StartBoundsItsCallsInFlight: a process starting more
// roles than it runs calls at once has at most CallsInFlight
// acquisition attempts under way; the others wait their turn, and every
// role is led once the lock answers.
func TestProcess_H1_StartBoundsItsCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, proc, n := startHeldProcess(t)
		synctest.Wait()
		attempts := p.count("acquire")
		p.letAttemptsGo()
		synctest.Wait()
		if attempts != leadership.CallsInFlight {
			t.Fatalf("%d attempts under way at once while %d roles start; want %d", attempts, n, leadership.CallsInFlight)
		}
		allLeadThenLeave(t, proc, "once the lock answered")
	})
}

// TestProcess_H1_RenewalsBoundTheirCallsInFlight: a process whose leases
// fall due together (it took them all at once) has at most CallsInFlight
// renewals under way; the others wait their turn, and every role stays
// led once the lock answers.
func TestProcess_H1_RenewalsBoundTheirCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lock := newOrderLock(t)
		proc, n := startManyRoles(t, lock)
		synctest.Wait()
		hold := make(chan struct{})
		p.mu.Lock()
		p.egate = hold
		p.mu.Unlock()
		time.Sleep(fastOpts().RenewInterval)
		synctest.Wait()
		renewals := p.count("extend")
		p.mu.Lock()
		p.egate = nil
		p.mu.Unlock()
		close(hold)
		synctest.Wait()
		if renewals != leadership.CallsInFlight {
			t.Fatalf("%d renewals under way at once for %d leases due together; want %d", renewals, n, leadership.CallsInFlight)
		}
		if got := p.count("extend"); got != n {
			t.Fatalf("%d renewals reached the lock once it answered; want %d", got, n)
		}
		time.Sleep(fastOpts().Lease)
		synctest.Wait()
		allLeadThenLeave(t, proc, "after its renewals")
	})
}

// TestProcess_H1_NotificationsShareBoundedGoroutines: a process whose
// roles all change at once delivers their notifications on at most
// NoticesAtOnce goroutines: with every subscriber blocked, that many
// deliveries are under way and the others wait their turn; a blocked
// subscriber holds back none of the others while fewer than that block;
// once released, every elector's subscriber has seen its change once.
func TestProcess_H1_NotificationsShareBoundedGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		proc := mustProcess(t, lock, leadership.ProcessOptions{Identity: "a"})
		n := leadership.NoticesAtOnce + 50
		release := make(chan struct{})
		var inside, most, delivered atomic.Int32
		for i := range n {
			e := processElector(t, proc, fmt.Sprintf("r%d", i), fastOpts())
			e.OnChange(func(c leadership.Change) {
				if !c.IsLeader {
					return
				}
				now := inside.Add(1)
				for {
					m := most.Load()
					if now <= m || most.CompareAndSwap(m, now) {
						break
					}
				}
				<-release
				inside.Add(-1)
				delivered.Add(1)
			})
		}
		if err := proc.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := inside.Load(); got != leadership.NoticesAtOnce {
			t.Errorf("%d deliveries under way while %d roles' subscribers block; want %d", got, n, leadership.NoticesAtOnce)
		}
		close(release)
		synctest.Wait()
		if got, m := delivered.Load(), most.Load(); got != int32(n) || m != leadership.NoticesAtOnce {
			t.Fatalf("%d of %d changes delivered, at most %d at once; want all, at most %d", got, n, m, leadership.NoticesAtOnce)
		}
		allLeadThenLeave(t, proc, "once its subscribers returned")
	})
}

// TestProcess_H1_ABlockedSubscriberHoldsBackNoOtherRole: a Process's
// elector whose subscriber blocks delays its own notifications only.
func TestProcess_H1_ABlockedSubscriberHoldsBackNoOtherRole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		proc := mustProcess(t, lock, leadership.ProcessOptions{Identity: "a"})
		release := make(chan struct{})
		slow := processElector(t, proc, "slow", fastOpts())
		slow.OnChange(func(leadership.Change) { <-release })
		var quick atomic.Int32
		for i := range 3 {
			e := processElector(t, proc, fmt.Sprintf("quick%d", i), fastOpts())
			e.OnChange(func(c leadership.Change) {
				if c.IsLeader {
					quick.Add(1)
				}
			})
		}
		if err := proc.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := quick.Load(); got != 3 {
			t.Errorf("%d of 3 roles told they lead while another role's subscriber blocks", got)
		}
		close(release)
		allLeadThenLeave(t, proc, "with one subscriber blocked")
	})
}

// deadlineProvider records the deadline of the context each acquisition
// and renewal reaches it with.
type deadlineProvider struct {
	*memlock.Provider
	mu                 sync.Mutex
	acquires, renewals []time.Time // zero: no deadline
}

func (p *deadlineProvider) Acquire(ctx context.Context, r locking.AcquireRequest) (locking.AcquireResult, error) {
	d, _ := ctx.Deadline()
	p.mu.Lock()
	p.acquires = append(p.acquires, d)
	p.mu.Unlock()
	return p.Provider.Acquire(ctx, r)
}

func (p *deadlineProvider) Extend(ctx context.Context, r locking.ExtendRequest) (locking.ExtendResult, error) {
	d, _ := ctx.Deadline()
	p.mu.Lock()
	p.renewals = append(p.renewals, d)
	p.mu.Unlock()
	return p.Provider.Extend(ctx, r)
}

// TestProcess_H1_CallsThroughGatesKeepTheirDeadlines: an acquisition
// attempt or a renewal that goes through its process's gate reaches the
// lock with the deadline it was given when it fell due, as one of an
// elector of its own does.
func TestProcess_H1_CallsThroughGatesKeepTheirDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &deadlineProvider{Provider: memlock.New()}
		lock, err := locking.New(p, locking.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		proc := mustProcess(t, lock, leadership.ProcessOptions{Identity: "a"})
		o := fastOpts()
		e, err := proc.Elector("billing", o)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := proc.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		time.Sleep(o.RenewInterval)
		synctest.Wait()
		renewedAt := time.Now()
		p.mu.Lock()
		acquires, renewals := slices.Clone(p.acquires), slices.Clone(p.renewals)
		p.mu.Unlock()
		if !e.IsLeader() || len(acquires) != 1 || len(renewals) != 1 {
			t.Fatalf("leader %t after %d acquisitions and %d renewals; want one of each", e.IsLeader(), len(acquires), len(renewals))
		}
		if want := start.Add(min(o.RetryInterval, o.Lease)); !acquires[0].Equal(want) {
			t.Errorf("the acquisition's deadline is %v after the start, want %v", acquires[0].Sub(start), want.Sub(start))
		}
		if d := renewals[0]; !d.After(renewedAt) || d.After(renewedAt.Add(o.Lease)) {
			t.Errorf("the renewal's deadline is %v after it fell due, want within the lease (%v)", d.Sub(renewedAt), o.Lease)
		}
		if err := proc.Leave(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestProcess_H1_AttemptPastItsDeadlineInTheQueueIsNotSent: an acquisition
// attempt whose deadline passed while it waited for its turn behind the
// process's other calls is not sent (as one the lock's own queue held past
// its deadline, locking.ErrNotSent); the elector tries again later and
// leads.
func TestProcess_H1_AttemptPastItsDeadlineInTheQueueIsNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, proc, n := startHeldProcess(t)
		// The held attempts outlive the deadline of every attempt queued
		// behind them (the RetryInterval); then the lock answers them.
		time.Sleep(fastOpts().RetryInterval + time.Millisecond)
		p.letAttemptsGo()
		synctest.Wait()
		attempts, expired := p.count("acquire"), p.count("expired-acquire")
		if expired > 0 || attempts >= n {
			t.Fatalf("%d attempts reached the lock, %d of them past their deadline; want none past it, and fewer than %d (those whose deadline passed in the queue not sent)",
				attempts, expired, n)
		}
		time.Sleep(2 * fastOpts().Lease)
		synctest.Wait()
		allLeadThenLeave(t, proc, "after its attempts were retried")
	})
}
