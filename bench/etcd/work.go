package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
	"github.com/hostloom/hostloom/core/locking/etcdlock/etcdtest"
)

// hostloomTakeover measures n takeovers through the elector: a leads, b
// waits; a's client is closed (its process died: no release, no more
// renewals); the time until b leads.
func hostloomTakeover(c *etcdtest.Cluster, n int) ([]time.Duration, error) {
	var ds []time.Duration
	for i := range n {
		role := fmt.Sprintf("t%d", i)
		a, err := newElector(c, role, "a", false)
		if err != nil {
			return nil, err
		}
		if _, err := a.leads(); err != nil {
			a.close()
			return nil, err
		}
		b, err := newElector(c, role, "b", false)
		if err != nil {
			a.close()
			return nil, err
		}
		time.Sleep(dieAfter()) // b has tried and watches; a has renewed
		began := time.Now()
		_ = a.cl.Close() // the leader's process dies
		at, lerr := b.leads()
		_ = a.stop() // its elector, whose every call now fails
		_ = b.stop()
		a.close()
		b.close()
		if lerr != nil {
			return nil, lerr
		}
		ds = append(ds, at.Sub(began))
	}
	return ds, nil
}

// electionTakeover measures n takeovers through concurrency.Election: a
// won, b campaigns; a's client is closed (its session's lease is neither
// kept alive nor revoked); the time until b's Campaign returns.
func electionTakeover(c *etcdtest.Cluster, n int) ([]time.Duration, error) {
	var ds []time.Duration
	for i := range n {
		name := fmt.Sprintf("t%d", i)
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
		time.Sleep(dieAfter()) // b has put its key and waits
		began := time.Now()
		_ = a.cl.Close() // the leader's process dies
		var at time.Time
		select {
		case at = <-won:
		case err = <-errc:
		}
		cancel()
		b.close()
		if err != nil {
			return nil, err
		}
		ds = append(ds, at.Sub(began))
	}
	return ds, nil
}

// dieAfter is how long a takeover's leader lives once its candidate
// waits: 300 ms, plus a random part of up to a second (the lease), so the
// leader dies at any point of its renewal cycle (every 250 ms for the
// elector, every third of the TTL for the Election's session) and of the
// server's expiry tick, on both sides alike. A fixed time would put every
// death at the same point of those cycles, whose phase differs between
// the two sides, and compare the phases instead of the takeovers.
func dieAfter() time.Duration {
	return 300*time.Millisecond + rand.N(time.Second)
}

// work is the server work of a steady state, per role per second.
type work struct {
	requests, writes float64
}

// countingClient is a client of c whose requests are counted: unary
// calls and messages sent on streams.
func countingClient(c *etcdtest.Cluster, n *atomic.Int64) (*clientv3.Client, error) {
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		n.Add(1)
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return &countedStream{ClientStream: s, n: n}, nil
	}
	return clientv3.New(clientv3.Config{
		Endpoints:            c.Endpoints(),
		DialTimeout:          2 * time.Second,
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
		Logger:               zap.NewNop(),
		DialOptions:          []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)},
	})
}

// countedStream counts the messages sent on a stream.
type countedStream struct {
	grpc.ClientStream
	n *atomic.Int64
}

func (s *countedStream) SendMsg(m any) error {
	s.n.Add(1)
	return s.ClientStream.SendMsg(m)
}

// committed reads the raft leader's etcd_server_proposals_committed_total
// from its /metrics.
func committed(c *etcdtest.Cluster) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := c.Leader(ctx)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.Endpoint()+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	const name = "etcd_server_proposals_committed_total "
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s/metrics has no %s", m.Endpoint(), strings.TrimSpace(name))
}

// measure counts requests (through n) and raft writes over window.
// before is the raft-write counter before the roles were acquired: it
// must have moved since (the acquisitions are writes), or the counter
// read is not the one that counts them.
func measure(c *etcdtest.Cluster, n *atomic.Int64, roles int, window time.Duration, before float64) (work, error) {
	w0, err := committed(c)
	if err != nil {
		return work{}, err
	}
	r0, began := n.Load(), time.Now()
	time.Sleep(window)
	r1, took := n.Load(), time.Since(began)
	w1, err := committed(c)
	if err != nil {
		return work{}, err
	}
	per := float64(roles) * took.Seconds()
	if r1 == r0 {
		return work{}, errors.New("no request counted")
	}
	if w0 <= before {
		return work{}, fmt.Errorf("etcd_server_proposals_committed_total did not move across %d acquisitions", roles)
	}
	return work{requests: float64(r1-r0) / per, writes: (w1 - w0) / per}, nil
}

// hostloomSteady holds n roles through one process (one client, one lock,
// one elector per role) and measures the server work.
func hostloomSteady(c *etcdtest.Cluster, n int, window time.Duration) (work, error) {
	before, err := committed(c)
	if err != nil {
		return work{}, err
	}
	var reqs atomic.Int64
	cl, err := countingClient(c, &reqs)
	if err != nil {
		return work{}, err
	}
	defer cl.Close()
	l, err := etcdlock.NewLock(cl, etcdlock.Options{Prefix: fmt.Sprintf("bench-steady-%d/", n), ExpiryQuarantine: *quarantine}, locking.DefaultOptions())
	if err != nil {
		return work{}, err
	}
	defer l.Close()
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval = time.Second, 250*time.Millisecond, 250*time.Millisecond
	var wg sync.WaitGroup
	led := make(chan struct{}, n)
	var es []*leadership.Elector
	defer func() {
		for _, e := range es {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = e.Stop(ctx)
			})
		}
		wg.Wait()
	}()
	for i := range n {
		e, err := leadership.NewElector(fmt.Sprintf("s%d", i), l, o, leadership.WithIdentity("steady"))
		if err != nil {
			return work{}, err
		}
		var once sync.Once
		e.OnChange(func(ch leadership.Change) {
			if ch.IsLeader {
				once.Do(func() { led <- struct{}{} })
			}
		})
		if err := e.Start(context.Background()); err != nil {
			return work{}, err
		}
		es = append(es, e)
	}
	deadline := time.After(60 * time.Second)
	for range n {
		select {
		case <-led:
		case <-deadline:
			return work{}, errors.New("not every role led within 60s")
		}
	}
	time.Sleep(time.Second) // past the acquisitions' own traffic
	return measure(c, &reqs, n, window, before)
}

// electionSteady holds n roles through one process (one client, one
// session, one concurrency.Election per role) and measures the server
// work.
func electionSteady(c *etcdtest.Cluster, n int, window time.Duration) (work, error) {
	before, err := committed(c)
	if err != nil {
		return work{}, err
	}
	var reqs atomic.Int64
	cl, err := countingClient(c, &reqs)
	if err != nil {
		return work{}, err
	}
	defer cl.Close()
	s, err := concurrency.NewSession(cl, concurrency.WithTTL(1))
	if err != nil {
		return work{}, err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var es []*concurrency.Election
	for i := range n {
		e := concurrency.NewElection(s, fmt.Sprintf("bench-steady-election-%d/s%d", n, i))
		if err := e.Campaign(ctx, "steady"); err != nil {
			return work{}, err
		}
		es = append(es, e)
	}
	time.Sleep(time.Second)
	w, err := measure(c, &reqs, n, window, before)
	for _, e := range es {
		_ = e.Resign(ctx)
	}
	return w, err
}
