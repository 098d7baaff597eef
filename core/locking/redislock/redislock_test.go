package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/lockingtest"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// redisShort is the conformance suite's short lease over Redis: real time
// on a shared machine, so with room for scheduling delays.
const redisShort = 100 * time.Millisecond

// backend is one Redis deployment shared by the locks of a check; every
// lock gets its own provider (and so its own subscription), like replicas.
type backend struct {
	c redis.UniversalClient
}

func (b backend) NewLock(t *testing.T, o locking.Options) *locking.DistributedLock {
	t.Helper()
	p := redislock.New(b.c)
	t.Cleanup(func() { _ = p.Close() })
	l, err := locking.New(p, o)
	if err != nil {
		t.Fatalf("locking.New: %v", err)
	}
	return l
}

// NewProvider implements lockingtest.ProviderBackend: a provider of its
// own over the deployment, closed when the check ends.
func (b backend) NewProvider(t *testing.T) locking.Provider {
	p := redislock.New(b.c)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func (b backend) Exists(t *testing.T, providerKey string) bool {
	t.Helper()
	n, err := b.c.Exists(context.Background(), providerKey).Result()
	if err != nil {
		t.Fatalf("EXISTS %q: %v", providerKey, err)
	}
	return n == 1
}

func (b backend) Size(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	if cc, ok := b.c.(*redis.ClusterClient); ok {
		var total atomic.Int64 // ForEachMaster runs concurrently
		err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			n, err := m.DBSize(ctx).Result()
			total.Add(n)
			return err
		})
		if err != nil {
			t.Fatalf("DBSIZE: %v", err)
		}
		return int(total.Load())
	}
	n, err := b.c.DBSize(ctx).Result()
	if err != nil {
		t.Fatalf("DBSIZE: %v", err)
	}
	return int(n)
}

// TestConformance runs the provider conformance suite (L1–L8) against a
// real redis-server, emptied before every check.
func TestConformance(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	lockingtest.Run(t, lockingtest.Config{
		Short: redisShort,
		New: func(t *testing.T) lockingtest.Backend {
			if err := c.FlushAll(context.Background()).Err(); err != nil {
				t.Fatalf("FLUSHALL: %v", err)
			}
			return backend{c}
		},
	})
}

func TestNew_L0_NilClientErrorsWithoutPanic(t *testing.T) {
	ctx := context.Background()
	var typedNil *redis.Client
	for name, c := range map[string]redis.UniversalClient{"nil": nil, "typed nil *redis.Client": typedNil, "typed nil *redis.ClusterClient": (*redis.ClusterClient)(nil)} {
		t.Run(name, func(t *testing.T) {
			p := redislock.New(c)
			defer p.Close()
			if _, _, err := acquireRaw(p, ctx, "k", "v", time.Second); !errors.Is(err, redislock.ErrNilClient) {
				t.Fatalf("Acquire = %v, want ErrNilClient", err)
			}
			if _, err := extendRaw(p, ctx, "k", "v", time.Second); !errors.Is(err, redislock.ErrNilClient) {
				t.Fatalf("Extend = %v, want ErrNilClient", err)
			}
			if _, err := releaseRaw(p, ctx, "k", "v"); !errors.Is(err, redislock.ErrNilClient) {
				t.Fatalf("Release = %v, want ErrNilClient", err)
			}
			if _, _, _, err := p.Get(ctx, "k"); !errors.Is(err, redislock.ErrNilClient) {
				t.Fatalf("Get = %v, want ErrNilClient", err)
			}
			if _, _, err := p.Advance(ctx, "k", 1); !errors.Is(err, redislock.ErrNilClient) {
				t.Fatalf("Advance = %v, want ErrNilClient", err)
			}
			if _, _, err := p.State(ctx, "k"); !errors.Is(err, redislock.ErrNilClient) {
				t.Fatalf("State = %v, want ErrNilClient", err)
			}
			if stop, err := p.Subscribe("k", func(locking.Event) {}); !errors.Is(err, redislock.ErrNilClient) || stop != nil {
				t.Fatalf("Subscribe = %v, want ErrNilClient and no stop function", err)
			}
			// Through a DistributedLock the error keeps the package prefix.
			l, err := locking.New(p, locking.DefaultOptions())
			if err != nil {
				t.Fatalf("locking.New: %v", err)
			}
			_, err = l.TryAcquire(ctx, "k", time.Second)
			if !errors.Is(err, redislock.ErrNilClient) || !strings.Contains(err.Error(), "redislock: nil client") {
				t.Fatalf("TryAcquire = %v, want the nil client error", err)
			}
		})
	}
}

func TestProvider_L3_TTLBelowOneMillisecondRefused(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	p := redislock.New(c)
	defer p.Close()
	ctx := context.Background()
	for _, ttl := range []time.Duration{0, time.Microsecond, 999 * time.Microsecond, -time.Second} {
		_, _, err := acquireRaw(p, ctx, "k", "v", ttl)
		if err == nil || !strings.HasPrefix(err.Error(), "redislock: ") || !strings.Contains(err.Error(), ttl.String()) {
			t.Fatalf("Acquire(ttl %v) = %v, want a redislock error naming the ttl", ttl, err)
		}
		if _, err := extendRaw(p, ctx, "k", "v", ttl); err == nil || !strings.Contains(err.Error(), ttl.String()) {
			t.Fatalf("Extend(ttl %v) = %v, want an error naming the ttl", ttl, err)
		}
	}
	if n, _ := c.DBSize(ctx).Result(); n != 0 {
		t.Fatalf("DBSIZE = %d after refused ttls, want 0", n)
	}
}

func TestProvider_L3_MillisecondTTLRoundedUp(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	p := redislock.New(c)
	defer p.Close()
	ctx := context.Background()
	ok, _, err := acquireRaw(p, ctx, "k", "v", 10*time.Second+time.Microsecond)
	if err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	// PX got 10001 ms, not 10000: the server never expires it early.
	ms, err := c.PTTL(ctx, "k").Result()
	if err != nil || ms <= 10*time.Second-time.Second || ms > 10*time.Second+time.Millisecond {
		t.Fatalf("PTTL = %v, %v; want about 10.001s", ms, err)
	}
	ok, remaining, err := acquireRaw(p, ctx, "k", "w", time.Second)
	if err != nil || ok || remaining <= 9*time.Second || remaining > 10*time.Second+time.Millisecond {
		t.Fatalf("refused Acquire = %v, %v, %v; want refused with about 10s remaining", ok, remaining, err)
	}
}

func TestProvider_L3_ValueStoredVerbatimAndCompared(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	p := redislock.New(c)
	defer p.Close()
	ctx := context.Background()
	value := "0123456789abcdef0123456789abcdef:host \"a\" ]]-- ключ"
	if ok, _, err := acquireRaw(p, ctx, "k", value, time.Minute); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if got, _ := c.Get(ctx, "k").Result(); got != value {
		t.Fatalf("stored %q, want %q", got, value)
	}
	// A prefix or a near miss of the value is not ownership.
	for _, v := range []string{value[:32], value + " ", strings.ToUpper(value), ""} {
		if ok, err := extendRaw(p, ctx, "k", v, time.Minute); ok || err != nil {
			t.Fatalf("Extend with %q = %v, %v; want refused", v, ok, err)
		}
		if ok, err := releaseRaw(p, ctx, "k", v); ok || err != nil {
			t.Fatalf("Release with %q = %v, %v; want refused", v, ok, err)
		}
	}
	if ok, err := releaseRaw(p, ctx, "k", value); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
}

func TestProvider_L3_HolderWithoutExpiryReportsUnknownTTL(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	p := redislock.New(c)
	defer p.Close()
	ctx := context.Background()
	// Someone else wrote the key without a TTL.
	if err := c.Set(ctx, "k", "foreign", 0).Err(); err != nil {
		t.Fatal(err)
	}
	ok, remaining, err := acquireRaw(p, ctx, "k", "v", time.Second)
	if ok || err != nil || remaining != 0 {
		t.Fatalf("Acquire = %v, %v, %v; want refused with unknown (0) remaining", ok, remaining, err)
	}
}

func TestProvider_L3_ScriptCacheFlushedFallsBackToEval(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	p := redislock.New(c)
	defer p.Close()
	ctx := context.Background()
	if ok, _, err := acquireRaw(p, ctx, "k", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := releaseRaw(p, ctx, "k", "v"); !ok || err != nil {
		t.Fatalf("Release after SCRIPT FLUSH = %v, %v; want released (NOSCRIPT → EVAL)", ok, err)
	}
}

func TestProvider_L3_ReplyLostLeavesNoLease(t *testing.T) {
	s := redistest.Start(t)
	direct := s.Client(t)
	px := startProxy(t, s.Addr())
	// go-redis honours context deadlines mid-command only with
	// ContextTimeoutEnabled; otherwise it waits for the reply.
	c := redis.NewClient(&redis.Options{Addr: px.addr, ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 1})
	defer c.Close()
	p := redislock.New(c)
	defer p.Close()
	ctx := context.Background()
	// Load the scripts, so that the acquisition below runs at once.
	if ok, _, err := acquireRaw(p, ctx, "warm", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if ok, err := releaseRaw(p, ctx, "warm", "v"); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}

	// The server runs the acquisition, but its reply never comes back: the
	// context ends first and the outcome is unknown to the caller. The
	// cleanup runs on a new connection, which works.
	px.loseReplies()
	actx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	ok, _, err := acquireRaw(p, actx, "k", "v", time.Minute)
	if err == nil || ok {
		t.Fatalf("Acquire without reply = %v, %v; want an error", ok, err)
	}
	if !strings.HasPrefix(err.Error(), "redislock: acquire") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %q: want the redislock prefix and the context's error", err)
	}
	// The best-effort cleanup deleted what the acquisition stored.
	if n, err := direct.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS k after the lost reply = %d, %v; want 0 (cleaned up)", n, err)
	}
	if n := px.lostRequests(); n != 1 {
		t.Fatalf("%d requests lost their replies, want 1 (the acquisition)", n)
	}
}

// proxy forwards TCP connections to a server and can lose the replies of
// the connections open at a given moment, like a network failing after the
// requests went out.
type proxy struct {
	addr string
	mu   sync.Mutex
	cons []*proxyConn
	wg   sync.WaitGroup
}

type proxyConn struct {
	down, up net.Conn
	drop     atomic.Bool  // replies are lost
	sent     atomic.Int64 // requests forwarded while replies are lost
}

func startProxy(t *testing.T, upstream string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	px := &proxy{addr: ln.Addr().String()}
	px.wg.Go(func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				_ = down.Close()
				continue
			}
			pc := &proxyConn{down: down, up: up}
			px.mu.Lock()
			px.cons = append(px.cons, pc)
			px.mu.Unlock()
			px.wg.Go(func() { pc.pipe(up, down, false) })
			px.wg.Go(func() { pc.pipe(down, up, true) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		px.mu.Lock()
		for _, pc := range px.cons {
			_ = pc.down.Close()
			_ = pc.up.Close()
		}
		px.mu.Unlock()
		px.wg.Wait()
	})
	return px
}

// pipe copies src to dst; replies are dropped once drop is set.
func (pc *proxyConn) pipe(dst, src net.Conn, replies bool) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !(replies && pc.drop.Load()) {
			if !replies && pc.drop.Load() {
				pc.sent.Add(1)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// loseReplies makes every connection open now lose its replies from here
// on; later connections work normally.
func (px *proxy) loseReplies() {
	px.mu.Lock()
	defer px.mu.Unlock()
	for _, pc := range px.cons {
		pc.drop.Store(true)
	}
}

// lostRequests counts requests forwarded whose replies were lost.
func (px *proxy) lostRequests() int64 {
	px.mu.Lock()
	defer px.mu.Unlock()
	var n int64
	for _, pc := range px.cons {
		n += pc.sent.Load()
	}
	return n
}

func TestProvider_L7_SubscriptionSurvivesRestart(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	p := redislock.New(c)
	defer p.Close()
	ctx := context.Background()
	events, stop := providerEvents(t, p, "k")
	defer stop()
	waitEvent(t, events, locking.EventSubscribed)
	s.Restart(t)
	// The subscriber learns the subscription was lost and is live again
	// (a release may have been lost meanwhile).
	waitEvent(t, events, locking.EventUnsubscribed)
	waitEvent(t, events, locking.EventSubscribed)
	// And releases are delivered again.
	holder := redislock.New(c)
	defer holder.Close()
	if ok, _, err := acquireRaw(holder, ctx, "k", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire after restart = %v, %v", ok, err)
	}
	if ok, err := releaseRaw(holder, ctx, "k", "v"); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	waitEvent(t, events, locking.EventReleased)
}

func TestProvider_L7_OneSubscriptionConnectionForManyWatches(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	p := redislock.New(c)
	defer p.Close()
	ctx := context.Background()
	var stops []func()
	for _, k := range []string{"a", "b", "c", "d", "a"} {
		_, stop := providerEvents(t, p, k)
		stops = append(stops, stop)
	}
	if n := pubsubClients(t, c); n != 1 {
		t.Fatalf("%d pub/sub connections for 5 subscriptions, want 1", n)
	}
	chans, err := c.PubSubChannels(ctx, "*").Result()
	if err != nil || len(chans) != 4 {
		t.Fatalf("PUBSUB CHANNELS = %v, %v; want the 4 keys' channels", chans, err)
	}
	for _, stop := range stops {
		stop()
		stop() // idempotent
	}
	// Unsubscribed as the watchers left (the UNSUBSCRIBE is written just
	// after stop returns; give the server a moment to process it).
	deadline := time.Now().Add(5 * time.Second)
	for {
		chans, err = c.PubSubChannels(ctx, "*").Result()
		if err == nil && len(chans) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PUBSUB CHANNELS after every stop = %v, %v; want none", chans, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// After Close, Subscribe says so.
	if stop, err := p.Subscribe("a", func(locking.Event) {}); !errors.Is(err, redislock.ErrClosed) || stop != nil {
		t.Fatalf("Subscribe after Close = %v, want ErrClosed and no stop function", err)
	}
}

// pubsubClients counts the server's connections in subscriber mode.
func pubsubClients(t *testing.T, c *redis.Client) int {
	t.Helper()
	list, err := c.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatalf("CLIENT LIST: %v", err)
	}
	n := 0
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, " sub=") && !strings.Contains(line, " sub=0 ") {
			n++
		}
	}
	return n
}

func TestProvider_ServerDownErrorsThenRecovers(t *testing.T) {
	s := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	p := redislock.New(c)
	defer p.Close()
	ctx := context.Background()
	s.Kill()
	if ok, _, err := acquireRaw(p, ctx, "k", "v", time.Minute); ok || err == nil || !strings.HasPrefix(err.Error(), "redislock: acquire: ") {
		t.Fatalf("Acquire with the server down = %v, %v; want a redislock error", ok, err)
	}
	if _, err := extendRaw(p, ctx, "k", "v", time.Minute); err == nil || !strings.HasPrefix(err.Error(), "redislock: extend: ") {
		t.Fatalf("Extend with the server down = %v; want a redislock error", err)
	}
	if _, err := releaseRaw(p, ctx, "k", "v"); err == nil || !strings.HasPrefix(err.Error(), "redislock: release: ") {
		t.Fatalf("Release with the server down = %v; want a redislock error", err)
	}
	s.Restart(t)
	if ok, _, err := acquireRaw(p, ctx, "k", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire after restart = %v, %v", ok, err)
	}
}

// markHook counts the waiter-mark SETs a client sends alone and in
// pipelines, and holds the first lone one until release is closed.
type markHook struct {
	release           chan struct{}
	held              atomic.Bool
	lone, pipes, sets atomic.Int64
}

func isMark(cmd redis.Cmder) bool {
	args := cmd.Args()
	return cmd.Name() == "set" && len(args) > 1 && strings.Contains(fmt.Sprint(args[1]), ":wait:")
}

func (h *markHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *markHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isMark(cmd) {
			h.lone.Add(1)
			if h.held.CompareAndSwap(false, true) {
				<-h.release
			}
		}
		return next(ctx, cmd)
	}
}
func (h *markHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && isMark(cmds[0]) {
			h.pipes.Add(1)
			for _, c := range cmds {
				if isMark(c) {
					h.sets.Add(1)
				}
			}
		}
		return next(ctx, cmds)
	}
}

// Many subscriptions made at once (a process starting its electors) set
// their waiter marks in shared pipelined round trips, not one round trip
// each on the client's pool; every mark is set before its Subscribe
// returns.
func TestProvider_L7_ConcurrentSubscriptionsShareMarkRoundTrips(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	h := &markHook{release: make(chan struct{})}
	c.AddHook(h)
	p := redislock.New(c)
	defer p.Close()
	const n = 300
	stops := make(chan func(), n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			stop, err := p.Subscribe(fmt.Sprintf("role-%d", i), func(locking.Event) {})
			if err != nil {
				t.Errorf("Subscribe: %v", err)
				return
			}
			stops <- stop
		})
	}
	// The first mark is on the wire (held by the hook); the others queue.
	deadline := time.Now().Add(10 * time.Second)
	for redislock.QueuedMarks(p) < n-1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d marks queued behind the first after 10s, want %d", redislock.QueuedMarks(p), n-1)
		}
		time.Sleep(time.Millisecond)
	}
	close(h.release)
	wg.Wait()
	close(stops)
	if lone, pipes, sets := h.lone.Load(), h.pipes.Load(), h.sets.Load(); lone != 1 || pipes != 1 || sets != n-1 {
		t.Fatalf("%d subscriptions sent %d lone mark SETs and %d pipelines of %d SETs; want 1 lone and 1 pipeline of %d", n, lone, pipes, sets, n-1)
	}
	ctx := context.Background()
	for i := range n {
		if ttl, err := c.PTTL(ctx, redislock.WaitKey(fmt.Sprintf("role-%d", i))).Result(); err != nil || ttl <= 0 {
			t.Fatalf("waiter mark of role-%d: PTTL %v, %v; want it set", i, ttl, err)
		}
	}
	for stop := range stops {
		stop()
	}
}

// Many subscriptions made, or ended, while a SUBSCRIBE is being written
// (a process starting or leaving its electors) go out together in one
// SUBSCRIBE or UNSUBSCRIBE naming every channel, not a command each on
// the subscription's one connection; each SUBSCRIBE is written before
// its Subscribe returns, and the server then has exactly the channels
// still subscribed.
func TestProvider_L7_ConcurrentSubscriptionsShareSubscribeCommands(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	p := redislock.New(c)
	defer p.Close()
	first, err := p.Subscribe("role-first", func(locking.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	defer first()
	const n = 300
	var mu sync.Mutex
	live := map[string]bool{}
	calls := func(cmd string) int64 { return commandCalls(t, c, cmd) }
	waitWanted := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for redislock.WantedChannels(p) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d channels waiting after 10s, want %d", what, redislock.WantedChannels(p), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// numsub waits until the server counts want subscribers on every
	// channel.
	numsub := func(want int64) {
		t.Helper()
		for i := range n {
			waitNumSub(t, c, redislock.ChannelOf(p, fmt.Sprintf("role-%d", i)), want)
		}
	}

	release := redislock.HoldPubsub(p)
	stops := make(chan func(), n)
	var wg sync.WaitGroup
	for i := range n {
		key := fmt.Sprintf("role-%d", i)
		wg.Go(func() {
			stop, err := p.Subscribe(key, func(e locking.Event) {
				if e.Kind == locking.EventSubscribed {
					mu.Lock()
					live[key] = true
					mu.Unlock()
				}
			})
			if err != nil {
				t.Errorf("Subscribe %s: %v", key, err)
				return
			}
			stops <- stop
		})
	}
	waitWanted("subscribing")
	subs := calls("subscribe")
	release()
	wg.Wait()
	close(stops)
	numsub(1)
	if got := calls("subscribe") - subs; got != 1 {
		t.Fatalf("%d subscriptions asked while a SUBSCRIBE was written sent %d SUBSCRIBE commands, want 1", n, got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		m := len(live)
		mu.Unlock()
		if m == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d subscribers heard EventSubscribed after 5s", m, n)
		}
		time.Sleep(time.Millisecond)
	}

	release = redislock.HoldPubsub(p)
	for stop := range stops {
		wg.Go(stop)
	}
	waitWanted("unsubscribing")
	unsubs := calls("unsubscribe")
	release()
	wg.Wait()
	numsub(0)
	if got := calls("unsubscribe") - unsubs; got != 1 {
		t.Fatalf("%d stops asked while an UNSUBSCRIBE was written sent %d UNSUBSCRIBE commands, want 1", n, got)
	}
	ch := redislock.ChannelOf(p, "role-first")
	if got, err := c.PubSubNumSub(ctx, ch).Result(); err != nil || got[ch] != 1 {
		t.Fatalf("PUBSUB NUMSUB %s = %v, %v; want the first subscription kept", ch, got, err)
	}
}

// Subscriptions ended one after another, as a leaving process ends its
// roles' between their releases, share UNSUBSCRIBE commands too: a stop
// does not wait for its UNSUBSCRIBE, which goes out with the channels let
// go meanwhile. Nothing reaches a stopped subscriber, and a key
// subscribed again before the UNSUBSCRIBE went out stays subscribed.
func TestProvider_L7_StopsOneAfterAnotherShareUnsubscribeCommands(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	p := redislock.New(c)
	defer p.Close()
	const n = 200
	var heard atomic.Int64
	var stops []func()
	for i := range n {
		stop, err := p.Subscribe(fmt.Sprintf("role-%d", i), func(e locking.Event) {
			if e.Kind != locking.EventSubscribed {
				heard.Add(1)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		stops = append(stops, stop)
	}
	for i := range n {
		waitNumSub(t, c, redislock.ChannelOf(p, fmt.Sprintf("role-%d", i)), 1)
	}
	unsubs := commandCalls(t, c, "unsubscribe")
	release := redislock.HoldPubsub(p)
	for _, stop := range stops { // one at a time: none may wait for the held write
		stop()
	}
	if got := redislock.WantedChannels(p); got != n {
		release()
		t.Fatalf("%d channels wait for their UNSUBSCRIBE after %d stops, want %d", got, n, n)
	}
	// Still subscribed on the server: the receive loop gets this, and no
	// stopped subscriber may hear it.
	if err := c.Publish(ctx, redislock.ChannelOf(p, "role-1"), "released").Err(); err != nil {
		release()
		t.Fatal(err)
	}
	again := make(chan locking.Event, 8)
	type subscribed struct {
		stop func()
		err  error
	}
	resub := make(chan subscribed, 1)
	go func() { // its SUBSCRIBE waits for the held write too
		stop, err := p.Subscribe("role-0", func(e locking.Event) { again <- e })
		resub <- subscribed{stop, err}
	}()
	release()
	r := <-resub
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.stop()
	for i := range n {
		want := int64(0)
		if i == 0 {
			want = 1
		}
		waitNumSub(t, c, redislock.ChannelOf(p, fmt.Sprintf("role-%d", i)), want)
	}
	if got := commandCalls(t, c, "unsubscribe") - unsubs; got != 1 {
		t.Fatalf("%d stops one after another sent %d UNSUBSCRIBE commands, want 1", n, got)
	}
	if err := c.Publish(ctx, redislock.ChannelOf(p, "role-0"), "released").Err(); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(5 * time.Second)
	for {
		select {
		case e := <-again:
			if e.Kind == locking.EventSubscribed {
				continue
			}
			if e.Kind != locking.EventReleased {
				t.Fatalf("role-0, subscribed again, heard %v, want its release", e)
			}
		case <-timeout:
			t.Fatal("role-0, subscribed again, heard nothing of its release in 5s")
		}
		break
	}
	// role-1's message came first on the one connection, and deliveries
	// are made in order.
	if got := heard.Load(); got != 0 {
		t.Fatalf("stopped subscribers heard %d events, want none", got)
	}
}

// commandCalls is INFO commandstats' count of cmd's calls on c's server.
func commandCalls(t *testing.T, c *redis.Client, cmd string) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls="); ok {
			v, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			if err != nil {
				t.Fatalf("commandstats %q: %v", line, err)
			}
			return v
		}
	}
	return 0
}

// waitNumSub waits until the server counts want subscribers on channel ch
// (a command written is processed a moment later, in its connection's
// order, so a command on another connection can come first).
func waitNumSub(t *testing.T, c *redis.Client, ch string, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := c.PubSubNumSub(context.Background(), ch).Result()
		if err == nil && got[ch] == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("PUBSUB NUMSUB %s = %v, %v after 5s; want %d", ch, got, err, want)
		}
		time.Sleep(time.Millisecond)
	}
}
