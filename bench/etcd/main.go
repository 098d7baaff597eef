// Command etcd compares HostLoom's etcd provider (etcdlock) with etcd's own
// election (go.etcd.io/etcd/client/v3/concurrency), side by side in one
// run, on a private cluster of three etcd members (one with -members 1) it
// starts on 127.0.0.1 (core/locking/etcdlock/etcdtest):
//
//   - graceful handover between two candidates: for HostLoom, from the
//     start of the leader's Stop to the successor's leadership, from
//     the start of the leader's HandOver to the named candidate (which
//     reads the participants first) to that candidate's leadership, and
//     from the start of the Stop of a balancing process's leader (which
//     names as its successor a participant its balance rounds found) to
//     that candidate's leadership; for
//     concurrency.Election, from the start of the leader's Resign to the
//     return of the waiting candidate's Campaign (its next in line);
//     p50/p99;
//   - the transfer alone, as the Election's Resign is a plain operation
//     on its key: a lease held through the lock (TryAcquireAs) released
//     to the one candidate elector by name (ReleaseTo), from the start of
//     ReleaseTo to the candidate's leadership; p50/p99. For both
//     hand-overs to a named candidate, the holder has read the
//     participants since the candidate registered, as a leader has for
//     every candidate that joined more than a lease before;
//   - takeover after the leader's process dies without releasing (its
//     client closed: no release, no more renewals): from the death to the
//     successor's leadership (HostLoom) or to the waiting Campaign's
//     return (concurrency.Election); p50/p99. The leader dies 0.3-1.3 s
//     after its candidate waits, at random, so every point of the renewal
//     cycles and of the server's 500 ms expiry tick is sampled on both
//     sides. Expected about the lease, plus up to the tick, plus (for
//     HostLoom) the expired holder's 50 ms head start;
//   - server work with N roles held steadily (-steady-roles, 100 and 1000
//     by default) by one process at the same lease: requests per role per
//     second (counted on the client by gRPC interceptors: unary calls and
//     messages sent on streams, keep-alives included) and raft writes per
//     role per second (the delta of the leader's
//     etcd_server_proposals_committed_total from /metrics). HostLoom: one
//     elector per role over one lock (renewing every 250 ms);
//     concurrency.Election: one election per role over one session, as
//     its documentation shows (the session's lease is kept alive by its
//     client every third of the TTL, for every role at once);
//   - acquire + release of an uncontended key through etcdlock: p50/p99.
//
// Both sides use one-second leases (the shortest the cluster grants; its
// election timeout is 500 ms) and a client of their own per candidate.
// Client and servers share the machine: compare the columns of one run,
// not runs of different machines. Requests and raft writes are counts,
// the same on a busy machine; the times are meaningful only when the run
// had the machine to itself.
//
//	cd bench/etcd && go run . [-short] [-n 50] [-members 1|3] [-steady-roles 100,1000] [-steady-window 10s]
//
// It prints Markdown tables. -short runs every measure a few times, with
// 10 and 50 roles for two seconds, to check the harness (CI). It exits
// non-zero when the harness fails (the cluster does not start, a leader
// never appears, a measure counts nothing).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
	"github.com/hostloom/hostloom/core/locking/etcdlock/etcdtest"
)

// quarantine runs HostLoom's providers with etcdlock's ExpiryQuarantine
// (locking.etcd.expiry_quarantine).
var quarantine = flag.Bool("expiry-quarantine", false, "run HostLoom's providers with ExpiryQuarantine (a key freed by a lease's end waits a lease)")

func main() {
	short := flag.Bool("short", false, "run every measure a few times, to check the harness")
	rounds := flag.Int("n", 50, "handovers per side (half as many takeovers, at least 2)")
	members := flag.Int("members", 3, "etcd members: 1 or 3")
	steadyRoles := flag.String("steady-roles", "100,1000", "comma-separated role counts of the steady-state measure (10,50 with -short)")
	window := flag.Duration("steady-window", 10*time.Second, "how long the steady-state measure counts (2s with -short)")
	flag.Parse()
	if *members != 1 && *members != 3 {
		fmt.Fprintf(os.Stderr, "etcd bench: -members %d: want 1 or 3\n", *members)
		os.Exit(2)
	}
	roles, err := parseRoles(*steadyRoles)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd bench:", err)
		os.Exit(2)
	}
	if *short {
		*rounds, *window = 3, 2*time.Second
		if !flagSet("steady-roles") {
			roles = []int{10, 50}
		}
	}
	if err := run(*rounds, *members, roles, *window); err != nil {
		fmt.Fprintln(os.Stderr, "etcd bench:", err)
		os.Exit(1)
	}
}

// flagSet reports whether the named flag was given.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseRoles parses -steady-roles.
func parseRoles(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-steady-roles %q: %q is not a positive number", s, f)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(rounds, members int, steadyRoles []int, window time.Duration) error {
	c, err := etcdtest.Launch(etcdtest.Options{Members: members})
	if err != nil {
		return err
	}
	defer c.Stop()
	hl, err := hostloomHandover(c, rounds, byStop)
	if err != nil {
		return fmt.Errorf("hostloom handover: %w", err)
	}
	hn, err := hostloomHandover(c, rounds, byHandOver)
	if err != nil {
		return fmt.Errorf("hostloom handover to a named successor: %w", err)
	}
	hb, err := hostloomHandover(c, rounds, byBalancedStop)
	if err != nil {
		return fmt.Errorf("hostloom handover by a balancing process's Stop: %w", err)
	}
	tr, err := hostloomTransfer(c, rounds)
	if err != nil {
		return fmt.Errorf("hostloom transfer: %w", err)
	}
	el, err := electionHandover(c, rounds)
	if err != nil {
		return fmt.Errorf("concurrency.Election handover: %w", err)
	}
	takeovers := max(2, rounds/2)
	ht, err := hostloomTakeover(c, takeovers)
	if err != nil {
		return fmt.Errorf("hostloom takeover: %w", err)
	}
	et, err := electionTakeover(c, takeovers)
	if err != nil {
		return fmt.Errorf("concurrency.Election takeover: %w", err)
	}
	ar, err := acquireRelease(c, 10*rounds)
	if err != nil {
		return fmt.Errorf("acquire+release: %w", err)
	}
	type steady struct {
		roles  int
		hl, el work
	}
	var st []steady
	for _, n := range steadyRoles {
		hw, err := hostloomSteady(c, n, window)
		if err != nil {
			return fmt.Errorf("hostloom steady state, %d roles: %w", n, err)
		}
		ew, err := electionSteady(c, n, window)
		if err != nil {
			return fmt.Errorf("concurrency.Election steady state, %d roles: %w", n, err)
		}
		st = append(st, steady{n, hw, ew})
	}
	fmt.Printf("## etcd %d member(s): HostLoom (etcdlock) beside concurrency.Election\n\n", members)
	fmt.Printf("Leases 1 s; HostLoom renews every 250 ms and retries every 250 ms. %d handovers, %d takeovers, %d acquire+release per side.\n", rounds, takeovers, 10*rounds)
	if *quarantine {
		fmt.Println("HostLoom's providers run with ExpiryQuarantine: a key freed by a lease's end waits a lease.")
	}
	fmt.Println()
	fmt.Println("| measure | HostLoom p50 | HostLoom p99 | Election p50 | Election p99 |")
	fmt.Println("|---|---:|---:|---:|---:|")
	fmt.Printf("| graceful handover (HostLoom: Stop) | %v | %v | %v | %v |\n", ms(pct(hl, 50)), ms(pct(hl, 99)), ms(pct(el, 50)), ms(pct(el, 99)))
	fmt.Printf("| graceful handover (HostLoom: HandOver to the candidate) | %v | %v | %v | %v |\n", ms(pct(hn, 50)), ms(pct(hn, 99)), ms(pct(el, 50)), ms(pct(el, 99)))
	fmt.Printf("| graceful handover (HostLoom: Stop of a balancing process, which names its successor) | %v | %v | %v | %v |\n", ms(pct(hb, 50)), ms(pct(hb, 99)), ms(pct(el, 50)), ms(pct(el, 99)))
	fmt.Printf("| the transfer alone (HostLoom: a lease's ReleaseTo the candidate elector) | %v | %v | %v | %v |\n", ms(pct(tr, 50)), ms(pct(tr, 99)), ms(pct(el, 50)), ms(pct(el, 99)))
	fmt.Printf("| takeover after the leader dies | %v | %v | %v | %v |\n", ms(pct(ht, 50)), ms(pct(ht, 99)), ms(pct(et, 50)), ms(pct(et, 99)))
	fmt.Printf("| acquire+release (etcdlock only) | %v | %v | | |\n\n", ms(pct(ar, 50)), ms(pct(ar, 99)))
	fmt.Printf("Server work with the roles held steadily by one process, counted over %v:\n\n", window)
	fmt.Println("| roles | HostLoom requests/role/s | HostLoom raft writes/role/s | Election requests/role/s | Election raft writes/role/s |")
	fmt.Println("|---:|---:|---:|---:|---:|")
	for _, s := range st {
		fmt.Printf("| %d | %.3f | %.3f | %.3f | %.3f |\n", s.roles, s.hl.requests, s.hl.writes, s.el.requests, s.el.writes)
	}
	return nil
}

// ms rounds d for the tables.
func ms(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }

// pct is the p-th percentile of ds.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}

// elector is one simulated process: a client, a lock and an elector.
type elector struct {
	cl     *clientv3.Client
	lock   *locking.DistributedLock
	e      *leadership.Elector
	leadAt chan time.Time
}

// newElector starts an elector for role with identity id on a client and
// a lock of its own; with balance, as the one elector of a balancing
// process (leadership.Process with Balance).
func newElector(c *etcdtest.Cluster, role, id string, balance bool) (*elector, error) {
	cl, err := c.Client()
	if err != nil {
		return nil, err
	}
	l, err := etcdlock.NewLock(cl, etcdlock.Options{Prefix: "bench/", ExpiryQuarantine: *quarantine}, locking.DefaultOptions())
	if err != nil {
		_ = cl.Close()
		return nil, err
	}
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval = time.Second, 250*time.Millisecond, 250*time.Millisecond
	var e *leadership.Elector
	if balance {
		var p *leadership.Process
		if p, err = leadership.NewProcess(l, leadership.ProcessOptions{Identity: id, Balance: true}); err == nil {
			e, err = p.Elector(role, o)
		}
	} else {
		e, err = leadership.NewElector(role, l, o, leadership.WithIdentity(id))
	}
	if err != nil {
		_ = l.Close()
		_ = cl.Close()
		return nil, err
	}
	el := &elector{cl: cl, lock: l, e: e, leadAt: make(chan time.Time, 8)}
	e.OnChange(func(ch leadership.Change) {
		if ch.IsLeader {
			el.leadAt <- time.Now()
		}
	})
	if err := e.Start(context.Background()); err != nil {
		el.close()
		return nil, err
	}
	return el, nil
}

func (el *elector) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return el.e.Stop(ctx)
}

func (el *elector) close() {
	_ = el.lock.Close()
	_ = el.cl.Close()
}

func (el *elector) leads() (time.Time, error) {
	select {
	case at := <-el.leadAt:
		return at, nil
	case <-time.After(30 * time.Second):
		return time.Time{}, errors.New("no leader within 30s")
	}
}

// handoverKind is how hostloomHandover's leader hands over.
type handoverKind int

const (
	byStop         handoverKind = iota // Stop: a plain release (two raft writes)
	byHandOver                         // HandOver to the candidate by name
	byBalancedStop                     // the Stop of a balancing process's elector: it names its successor
)

// hostloomHandover measures n graceful handovers from a leader to its
// one candidate: by the leader's Stop, by its HandOver to the candidate,
// or by the Stop of an elector of a balancing process, which names the
// candidate as its successor.
func hostloomHandover(c *etcdtest.Cluster, n int, how handoverKind) ([]time.Duration, error) {
	var ds []time.Duration
	named, balance := how == byHandOver, how == byBalancedStop
	for i := range n {
		role := fmt.Sprintf("%c%d", "hnb"[how], i)
		a, err := newElector(c, role, "a", balance)
		if err != nil {
			return nil, err
		}
		if _, err := a.leads(); err != nil {
			a.close()
			return nil, err
		}
		b, err := newElector(c, role, "b", balance)
		if err != nil {
			a.close()
			return nil, err
		}
		// b has tried once and watches; for a hand-over, a's extensions
		// have read the participants again since b registered, as a
		// leader's have for every candidate that joined more than a lease
		// ago (a handover to a newer one costs the successor one more
		// read).
		// A balancing process's Stop names the successor its balance
		// rounds (every RetryInterval) found among the role's
		// participants.
		wait := 100 * time.Millisecond
		if named || balance {
			wait = 1300 * time.Millisecond
		}
		time.Sleep(wait)
		began := time.Now()
		if named {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = a.e.HandOver(ctx, "b")
			cancel()
		} else {
			err = a.stop()
		}
		at, lerr := b.leads()
		if named {
			// A HandOver leaves a's elector running as a candidate: stop
			// it, so it does not keep trying over a closed client
			// during the measures that follow.
			_ = a.stop()
		}
		_ = b.stop()
		a.close()
		b.close()
		if err != nil {
			return nil, err
		}
		if lerr != nil {
			return nil, lerr
		}
		ds = append(ds, at.Sub(began))
	}
	return ds, nil
}

// hostloomTransfer measures n transfers of a role from a lease held
// through the lock to its one candidate elector, named in the release.
func hostloomTransfer(c *etcdtest.Cluster, n int) ([]time.Duration, error) {
	cl, err := c.Client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	l, err := etcdlock.NewLock(cl, etcdlock.Options{Prefix: "bench/", ExpiryQuarantine: *quarantine}, locking.DefaultOptions())
	if err != nil {
		return nil, err
	}
	defer l.Close()
	var ds []time.Duration
	for i := range n {
		role := fmt.Sprintf("x%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ls, err := l.TryAcquireAs(ctx, "leader:"+role, time.Second, "a")
		cancel()
		if err != nil {
			return nil, err
		}
		b, err := newElector(c, role, "b", false)
		if err != nil {
			return nil, err
		}
		// b has tried once, registered and watches; an extension for half
		// a second then reads the participants again (the last read is
		// older than that), as a leader's extensions do once a lease.
		time.Sleep(600 * time.Millisecond)
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		err = ls.Extend(ctx, 500*time.Millisecond)
		cancel()
		if err != nil {
			b.close()
			return nil, err
		}
		ho, ok := ls.(locking.HandoverLease)
		if !ok {
			b.close()
			return nil, errors.New("the lease cannot name a successor")
		}
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		began := time.Now()
		err = ho.ReleaseTo(ctx, "b")
		cancel()
		at, lerr := b.leads()
		_ = b.stop()
		b.close()
		if err != nil {
			return nil, err
		}
		if lerr != nil {
			return nil, lerr
		}
		ds = append(ds, at.Sub(began))
	}
	return ds, nil
}

// candidate is one concurrency.Election participant with a session of its
// own (a one-second lease).
type candidate struct {
	cl *clientv3.Client
	s  *concurrency.Session
	e  *concurrency.Election
}

func newCandidate(c *etcdtest.Cluster, name string) (*candidate, error) {
	cl, err := c.Client()
	if err != nil {
		return nil, err
	}
	s, err := concurrency.NewSession(cl, concurrency.WithTTL(1))
	if err != nil {
		_ = cl.Close()
		return nil, err
	}
	return &candidate{cl: cl, s: s, e: concurrency.NewElection(s, "bench-election/"+name)}, nil
}

func (c *candidate) close() {
	_ = c.s.Close()
	_ = c.cl.Close()
}

func electionHandover(c *etcdtest.Cluster, n int) ([]time.Duration, error) {
	var ds []time.Duration
	for i := range n {
		name := fmt.Sprintf("e%d", i)
		a, err := newCandidate(c, name)
		if err != nil {
			return nil, err
		}
		b, err := newCandidate(c, name)
		if err != nil {
			a.close()
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := a.e.Campaign(ctx, "a"); err != nil {
			cancel()
			a.close()
			b.close()
			return nil, err
		}
		won := make(chan time.Time, 1)
		errc := make(chan error, 1)
		go func() {
			if err := b.e.Campaign(ctx, "b"); err != nil {
				errc <- err
				return
			}
			won <- time.Now()
		}()
		time.Sleep(100 * time.Millisecond) // b has put its key and waits
		began := time.Now()
		if err := a.e.Resign(ctx); err != nil {
			cancel()
			a.close()
			b.close()
			return nil, err
		}
		var at time.Time
		select {
		case at = <-won:
		case err = <-errc:
		}
		cancel()
		a.close()
		b.close()
		if err != nil {
			return nil, err
		}
		ds = append(ds, at.Sub(began))
	}
	return ds, nil
}

func acquireRelease(c *etcdtest.Cluster, n int) ([]time.Duration, error) {
	cl, err := c.Client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	l, err := etcdlock.NewLock(cl, etcdlock.Options{Prefix: "bench-ar/", ExpiryQuarantine: *quarantine}, locking.DefaultOptions())
	if err != nil {
		return nil, err
	}
	defer l.Close()
	ctx := context.Background()
	var ds []time.Duration
	for range n {
		began := time.Now()
		ls, err := l.TryAcquire(ctx, "k", 5*time.Second)
		if err != nil {
			return nil, err
		}
		if err := ls.Release(ctx); err != nil {
			return nil, err
		}
		ds = append(ds, time.Since(began))
	}
	return ds, nil
}
