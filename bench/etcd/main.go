// Command etcd compares HostLoom's etcd provider (etcdlock) with etcd's own
// election (go.etcd.io/etcd/client/v3/concurrency), side by side in one
// run, on a private cluster of three etcd members (one with -members 1) it
// starts on 127.0.0.1 (core/locking/etcdlock/etcdtest):
//
//   - graceful handover between two candidates: for HostLoom, from the
//     start of the leader's Stop to the successor's leadership; for
//     concurrency.Election, from the start of the leader's Resign to the
//     return of the waiting candidate's Campaign; p50/p99;
//   - acquire + release of an uncontended key through etcdlock: p50/p99.
//
// Both sides use one-second leases (the shortest the cluster grants; its
// election timeout is 500 ms) and a client of their own per candidate.
// Client and servers share the machine: compare the columns of one run,
// not runs of different machines.
//
//	cd bench/etcd && go run . [-short] [-n 50] [-members 3]
//
// -short runs every measure a few times, to check the harness (CI). It
// exits non-zero when the harness fails (the cluster does not start, a
// leader never appears).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
	"github.com/hostloom/hostloom/core/locking/etcdlock/etcdtest"
)

func main() {
	short := flag.Bool("short", false, "run every measure a few times, to check the harness")
	rounds := flag.Int("n", 50, "handovers per side")
	members := flag.Int("members", 3, "etcd members")
	flag.Parse()
	if *short {
		*rounds = 3
	}
	if err := run(*rounds, *members); err != nil {
		fmt.Fprintln(os.Stderr, "etcd bench:", err)
		os.Exit(1)
	}
}

func run(rounds, members int) error {
	c, err := etcdtest.Launch(etcdtest.Options{Members: members})
	if err != nil {
		return err
	}
	defer c.Stop()
	hl, err := hostloomHandover(c, rounds)
	if err != nil {
		return fmt.Errorf("hostloom handover: %w", err)
	}
	el, err := electionHandover(c, rounds)
	if err != nil {
		return fmt.Errorf("concurrency.Election handover: %w", err)
	}
	ar, err := acquireRelease(c, 10*rounds)
	if err != nil {
		return fmt.Errorf("acquire+release: %w", err)
	}
	fmt.Printf("etcd %d member(s), %d rounds\n", members, rounds)
	fmt.Printf("%-34s %12s %12s\n", "", "p50", "p99")
	fmt.Printf("%-34s %12v %12v\n", "handover, hostloom (etcdlock)", pct(hl, 50), pct(hl, 99))
	fmt.Printf("%-34s %12v %12v\n", "handover, concurrency.Election", pct(el, 50), pct(el, 99))
	fmt.Printf("%-34s %12v %12v\n", "acquire+release, etcdlock", pct(ar, 50), pct(ar, 99))
	return nil
}

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

func newElector(c *etcdtest.Cluster, role, id string) (*elector, error) {
	cl, err := c.Client()
	if err != nil {
		return nil, err
	}
	l, err := etcdlock.NewLock(cl, etcdlock.Options{Prefix: "bench/"}, locking.DefaultOptions())
	if err != nil {
		_ = cl.Close()
		return nil, err
	}
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval = time.Second, 250*time.Millisecond, 250*time.Millisecond
	e, err := leadership.NewElector(role, l, o, leadership.WithIdentity(id))
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

func hostloomHandover(c *etcdtest.Cluster, n int) ([]time.Duration, error) {
	var ds []time.Duration
	for i := range n {
		role := fmt.Sprintf("h%d", i)
		a, err := newElector(c, role, "a")
		if err != nil {
			return nil, err
		}
		if _, err := a.leads(); err != nil {
			a.close()
			return nil, err
		}
		b, err := newElector(c, role, "b")
		if err != nil {
			a.close()
			return nil, err
		}
		time.Sleep(100 * time.Millisecond) // b has tried once and watches
		began := time.Now()
		err = a.stop()
		at, lerr := b.leads()
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
	l, err := etcdlock.NewLock(cl, etcdlock.Options{Prefix: "bench-ar/"}, locking.DefaultOptions())
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
