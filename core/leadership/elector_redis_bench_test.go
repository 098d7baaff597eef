package leadership_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// percentile returns the p-th percentile (0..100) of ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// slowest returns the k largest of ds, largest first.
func slowest(ds []time.Duration, k int) []time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	slices.Reverse(s)
	return s[:min(k, len(s))]
}

// pingP50 is the baseline: the median PING round trip to srv.
func pingP50(b *testing.B, c *redis.Client) time.Duration {
	var ds []time.Duration
	for range 200 {
		t0 := time.Now()
		if err := c.Ping(context.Background()).Err(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	return percentile(ds, 50)
}

// noWatch hides the release notification of a lock (the polling fallback).
type noWatch struct{ locking.Lock }

func (n noWatch) TryAcquire(ctx context.Context, key string, lease time.Duration) (locking.Lease, error) {
	return n.Lock.TryAcquire(ctx, key, lease)
}

// noTTL hides the holder's remaining TTL from refused acquisitions.
type noTTL struct{ locking.Lock }

func (n noTTL) TryAcquire(ctx context.Context, key string, lease time.Duration) (locking.Lease, error) {
	l, err := n.Lock.TryAcquire(ctx, key, lease)
	var held *locking.HeldError
	if errors.As(err, &held) {
		return nil, fmt.Errorf("%w", locking.ErrNotAcquired)
	}
	return l, err
}

// handovers measures n graceful handovers (Stop of the leader until the
// waiting candidate leads) between electors built by mk over node locks.
func handovers(b *testing.B, srv *redistest.Server, n int, mk func(*redisNode) locking.Lock, o leadership.Options) []time.Duration {
	b.Helper()
	nodes := []*redisNode{newRedisNode(b, srv), newRedisNode(b, srv)}
	start := func(node *redisNode) *leadership.Elector {
		e, err := leadership.NewElector("handover", mk(node), o)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		return e
	}
	waitAttempt := func(node *redisNode, calls int) {
		for node.fault.Calls(leadershiptest.OpAcquire) <= calls {
			time.Sleep(100 * time.Microsecond)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leader := start(nodes[0])
	if err := leader.WaitForLeadership(ctx); err != nil {
		b.Fatal(err)
	}
	calls := nodes[1].fault.Calls(leadershiptest.OpAcquire)
	cand := start(nodes[1])
	waitAttempt(nodes[1], calls)
	li, ci := 0, 1
	var ds []time.Duration
	for range n {
		time.Sleep(5 * time.Millisecond) // the candidate waits, idle
		t0 := time.Now()
		if err := leader.Stop(ctx); err != nil {
			b.Fatal(err)
		}
		if err := cand.WaitForLeadership(ctx); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
		calls := nodes[li].fault.Calls(leadershiptest.OpAcquire)
		leader, cand = cand, start(nodes[li])
		li, ci = ci, li
		waitAttempt(nodes[ci], calls)
	}
	for _, e := range []*leadership.Elector{leader, cand} {
		if err := e.Stop(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	return ds
}

// BenchmarkRedis_GracefulHandover: latency from Stop of the leader until
// the waiting candidate leads, with the release notification, side by side
// with the polling fallback (same options, no notification) and a PING
// round trip. At least 200 handovers (50 for the slower baseline).
func BenchmarkRedis_GracefulHandover(b *testing.B) {
	srv := redistest.Start(b)
	o := leadership.DefaultOptions()
	o.RetryInterval = 100 * time.Millisecond // keeps the polling baseline short
	n := max(b.N, 200)
	ping := pingP50(b, srv.Client(b))
	notified := handovers(b, srv, n, func(r *redisNode) locking.Lock { return r.fault }, o)
	polled := handovers(b, srv, 50, func(r *redisNode) locking.Lock { return noWatch{r.fault} }, o)
	b.ReportMetric(float64(n), "handovers")
	b.ReportMetric(ms(percentile(notified, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(notified, 99)), "p99-ms")
	b.ReportMetric(ms(percentile(polled, 50)), "polling-p50-ms")
	b.ReportMetric(ms(percentile(polled, 99)), "polling-p99-ms")
	b.ReportMetric(float64(ping)/float64(time.Microsecond), "ping-p50-µs")
	b.ReportMetric(float64(percentile(polled, 50))/float64(percentile(notified, 50)), "polling/notified-p50")
	b.ReportMetric(float64(percentile(notified, 50))/float64(ping), "p50/ping")
	b.Logf("slowest handovers: %v", slowest(notified, 5))
}

// takeovers measures n takeovers of a key whose holder never releases:
// the delay from the server-side expiry (at the latest, the send time of
// the holder's SET plus its TTL) until a fresh candidate leads.
func takeovers(b *testing.B, n int, node *redisNode, wrap func(locking.Lock) locking.Lock, o leadership.Options) []time.Duration {
	b.Helper()
	const ttl = 150 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ds []time.Duration
	for range n {
		sent := time.Now()
		if _, err := node.lock.TryAcquire(ctx, "leader:takeover", ttl); err != nil {
			b.Fatal(err)
		}
		expiry := sent.Add(ttl)
		e, err := leadership.NewElector("takeover", wrap(node.lock), o)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Start(ctx); err != nil {
			b.Fatal(err)
		}
		if err := e.WaitForLeadership(ctx); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(expiry))
		if err := e.Stop(ctx); err != nil {
			b.Fatal(err)
		}
	}
	return ds
}

// BenchmarkRedis_TakeoverAfterExpiry: a crashed holder's lease runs out at
// the server; the candidate aligns its next attempt to the reported TTL.
// Baseline: the same candidate without the TTL (RetryInterval cadence).
func BenchmarkRedis_TakeoverAfterExpiry(b *testing.B) {
	srv := redistest.Start(b)
	node := newRedisNode(b, srv)
	o := leadership.DefaultOptions()
	o.RetryInterval = 500 * time.Millisecond
	n := max(b.N, 60)
	aligned := takeovers(b, n, node, func(l locking.Lock) locking.Lock { return l }, o)
	blind := takeovers(b, min(n, 20), node, func(l locking.Lock) locking.Lock { return noTTL{l} }, o)
	b.ReportMetric(float64(n), "takeovers")
	b.ReportMetric(ms(percentile(aligned, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(aligned, 99)), "p99-ms")
	b.ReportMetric(ms(slices.Max(aligned)), "max-ms")
	b.ReportMetric(ms(percentile(blind, 50)), "no-ttl-p50-ms")
	b.ReportMetric(float64(percentile(blind, 50))/float64(percentile(aligned, 50)), "no-ttl/aligned-p50")
	b.Logf("slowest takeovers: %v", slowest(aligned, 5))
}

// countHook counts the commands a client sends.
type countHook struct{ n atomic.Int64 }

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// commandStats sums INFO commandstats calls by command, excluding the
// measurement's own INFO and CONFIG.
func commandStats(b *testing.B, c *redis.Client) map[string]int64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		if name == "info" || strings.HasPrefix(name, "config") {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				out[name] += n
			}
		}
	}
	return out
}

// BenchmarkRedis_IdleCandidate: Redis commands a candidate sends while
// another instance holds the role, at the default options, over one minute
// of real time, in steady state (after the first attempt and the
// connection setup, reported apart). Baseline: one attempt per
// RetryInterval (60s/2s = 30). server-cmdstat-calls also counts the
// commands the scripts run inside Redis (SET, PTTL).
func BenchmarkRedis_IdleCandidate(b *testing.B) {
	const window = time.Minute
	srv := redistest.Start(b)
	admin := srv.Client(b)
	holder := newRedisNode(b, srv)
	if _, err := holder.lock.TryAcquire(context.Background(), "leader:idle", 10*time.Minute); err != nil {
		b.Fatal(err)
	}
	node := newRedisNode(b, srv)
	hook := &countHook{}
	node.client.AddHook(hook)
	e, err := leadership.NewElector("idle", node.lock, leadership.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	// Steady state: the window opens after the first attempt, the
	// connection handshakes and the release subscription.
	time.Sleep(time.Second)
	setup := hook.n.Load()
	if err := admin.ConfigResetStat(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	hook.n.Store(0)
	time.Sleep(window)
	stats := commandStats(b, admin)
	sent := hook.n.Load()
	if err := e.Stop(context.Background()); err != nil {
		b.Fatal(err)
	}
	if e.Term() != 0 {
		b.Fatal("the candidate led")
	}
	var server int64
	for _, n := range stats {
		server += n
	}
	perMin := float64(window) / float64(time.Minute)
	b.ReportMetric(float64(sent)/perMin, "client-cmds/min")
	b.ReportMetric(float64(sent)/window.Seconds(), "client-cmds/s")
	b.ReportMetric(float64(server)/perMin, "server-cmdstat-calls/min")
	b.ReportMetric(float64(stats["evalsha"]+stats["eval"])/perMin, "scripts/min")
	b.ReportMetric(float64(sent)/(window.Seconds()/leadership.DefaultRetryInterval.Seconds()), "client-cmds/baseline")
	b.ReportMetric(float64(setup), "setup-client-cmds")
	b.Logf("commandstats over %v: %v", window, stats)
}

// BenchmarkRedis_IsLeaderToken: the read path of a leading elector over
// Redis, side by side with an atomic.Bool load.
func BenchmarkRedis_IsLeaderToken(b *testing.B) {
	srv := redistest.Start(b)
	node := newRedisNode(b, srv)
	e, err := leadership.NewElector("reads", node.lock, leadership.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = e.Stop(context.Background()) }()
	if err := e.WaitForLeadership(context.Background()); err != nil {
		b.Fatal(err)
	}
	var sink atomic.Bool
	b.Run("IsLeader", func(b *testing.B) {
		b.ReportAllocs()
		v := false
		for b.Loop() {
			v = e.IsLeader()
		}
		sink.Store(v)
	})
	b.Run("Token", func(b *testing.B) {
		b.ReportAllocs()
		var c context.Context
		for b.Loop() {
			c = e.Token()
		}
		sink.Store(c != nil)
	})
	b.Run("Assert", func(b *testing.B) {
		b.ReportAllocs()
		ctx := e.Token()
		var err error
		for b.Loop() {
			err = leadership.Assert(ctx)
		}
		sink.Store(err == nil)
	})
	b.Run("Assert-derived", func(b *testing.B) {
		b.ReportAllocs()
		ctx, cancel := context.WithCancel(e.Token())
		defer cancel()
		var err error
		for b.Loop() {
			err = leadership.Assert(ctx)
		}
		sink.Store(err == nil)
	})
	b.Run("TokenErr", func(b *testing.B) {
		b.ReportAllocs()
		ctx := e.Token()
		var err error
		for b.Loop() {
			err = ctx.Err()
		}
		sink.Store(err == nil)
	})
	b.Run("baseline-atomic.Bool", func(b *testing.B) {
		b.ReportAllocs()
		var flag atomic.Bool
		flag.Store(true)
		v := false
		for b.Loop() {
			v = flag.Load()
		}
		sink.Store(v)
	})
}
