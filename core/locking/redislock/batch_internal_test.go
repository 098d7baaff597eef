package redislock

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/testing/redistest"
	"github.com/redis/go-redis/v9"
)

// tripCounter counts the round trips a client makes for scripts: one per
// script call sent alone, one per pipeline of them (a new connection's
// handshake is not counted).
type tripCounter struct{ single, pipelines atomic.Int64 }

func (h *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isScript(cmd) {
			h.single.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && isScript(cmds[0]) {
			h.pipelines.Add(1)
		}
		return next(ctx, cmds)
	}
}

func isScript(cmd redis.Cmder) bool {
	return cmd.Name() == "eval" || cmd.Name() == "evalsha"
}

// A server that lost its script cache (a restart without persistence)
// answers NOSCRIPT to a whole coalesced round: the round is sent again in
// one more round trip, not one per call, so the last call of a large round
// (a leader verifying its lease after the restart) is not delayed a round
// trip per call queued before it (Q1, L3).
func TestProvider_Q1_L3_RoundAfterScriptFlushIsOneMoreTrip(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	p := New(c)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const n = 50
	for i := range n {
		if err := c.Set(ctx, "k"+strconv.Itoa(i), "v", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	h := &tripCounter{}
	c.AddHook(h)
	q := make([]call, n)
	for i := range q {
		value := "v"
		if i%2 == 1 {
			value = "other" // not the holder: refused
		}
		key := "k" + strconv.Itoa(i)
		q[i] = call{ctx: ctx, s: p.s.extend,
			args: []any{nil, nil, "2", key, metaKey(key), value, int64(60000), "", participantMillis(0), metaTTLFor(time.Minute, 0), 0}}
	}
	if !p.pipeline(ctx, q) {
		t.Fatal("the pipeline reports no answer")
	}
	for i, w := range q {
		if w.cmd == nil {
			t.Fatalf("call %d not answered", i)
		}
		reply, err := w.cmd.Int64Slice()
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got, want := reply[0] >= 1, i%2 == 0; got != want {
			t.Fatalf("call %d: extended = %v, want %v", i, got, want)
		}
	}
	if single, pipes := h.single.Load(), h.pipelines.Load(); single != 0 || pipes != 2 {
		t.Fatalf("%d calls after a script flush took %d lone commands and %d pipelines, want 0 and 2", n, single, pipes)
	}
}

// holdFirst holds the first script call sent alone until release is
// closed, counting script calls sent alone and pipelines like tripCounter.
type holdFirst struct {
	tripCounter
	held    atomic.Bool
	release chan struct{}
}

func (h *holdFirst) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	count := h.tripCounter.ProcessHook(next)
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isScript(cmd) && h.held.CompareAndSwap(false, true) {
			<-h.release
		}
		return count(ctx, cmd)
	}
}

// The cleanups of acquisitions that failed at once (their replies lost or
// late, as on an overloaded machine) share pipelined round trips: sent one
// per connection they queued by the ten thousand for the pool, starving
// the pipelines that carry renewals, and a 50,000-elector process kept
// failing acquisitions and never led (L1, L7).
func TestProvider_L1_L7_CleanupsAfterFailedAcquisitionsShareRoundTrips(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	p := New(c)
	defer p.Close()
	p.cleanup(context.Background(), "warm", "v", false) // loads the script
	h := &holdFirst{release: make(chan struct{})}
	c.AddHook(h)
	const n = 200
	done := make(chan struct{}, n)
	for i := range n {
		go func() {
			p.cleanup(context.Background(), "k"+strconv.Itoa(i), "v", false)
			done <- struct{}{}
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		queued := p.releases.Len()
		if queued == n-1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(h.release)
	for range n {
		<-done
	}
	if single := h.single.Load(); single != 1 {
		t.Fatalf("%d cleanups went out %d alone (and %d pipelines); want 1 alone while the others queue", n, single, h.pipelines.Load())
	}
	if pl := h.pipelines.Load(); pl < 1 || pl > 2 {
		t.Fatalf("%d queued cleanups took %d pipelines; want 1 or 2", n-1, pl)
	}
}

// pipeSizes records the sizes of the script pipelines a client sends.
type pipeSizes struct {
	holdFirst
	mu    sync.Mutex
	sizes []int
}

func (h *pipeSizes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	count := h.holdFirst.ProcessPipelineHook(next)
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && isScript(cmds[0]) {
			h.mu.Lock()
			h.sizes = append(h.sizes, len(cmds))
			h.mu.Unlock()
		}
		return count(ctx, cmds)
	}
}

// sizedProvider is a Provider over a private server whose client records
// its pipelines' sizes and holds the first script call after this one;
// the acquisition and cleanup scripts are loaded and a connection made.
func sizedProvider(t *testing.T) (*redis.Client, *Provider, *pipeSizes) {
	t.Helper()
	c := redistest.Start(t).Client(t)
	p := New(c)
	t.Cleanup(func() { _ = p.Close() })
	if _, err := p.Acquire(context.Background(), locking.AcquireRequest{Key: "warm", Value: "v", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	p.cleanup(context.Background(), "warm", "v", false)
	h := &pipeSizes{holdFirst: holdFirst{release: make(chan struct{})}}
	c.AddHook(h)
	return c, p, h
}

// queueAcquisitions starts n acquisitions of keys prefix0… with timeout d
// behind the one h holds on the wire, waits until all are queued and
// returns their errors' channel.
func queueAcquisitions(t *testing.T, p *Provider, h *pipeSizes, prefix string, n int, d time.Duration) <-chan error {
	t.Helper()
	errs := make(chan error, n+1)
	acquire := func(key string) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		_, err := p.Acquire(ctx, locking.AcquireRequest{Key: key, Value: "v", TTL: time.Minute})
		errs <- err
	}
	go acquire(prefix + "held")
	for !h.held.Load() {
		time.Sleep(time.Millisecond)
	}
	for i := range n {
		go acquire(prefix + strconv.Itoa(i))
	}
	waitQueued(t, p, n)
	return errs
}

// waitQueued waits until n calls are queued in p's acquisitions queue.
func waitQueued(t *testing.T, p *Provider, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		queued := p.batch.Len()
		if queued == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acquisitions queued", queued, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Calls queued behind a round trip go out at most maxPipeline per
// pipeline, the first queued first (L1, L7).
func TestProvider_L1_L7_QueuedCallsGoOutInPipelinesOfAtMostMaxPipeline(t *testing.T) {
	_, p, h := sizedProvider(t)
	n := 2*maxPipeline + 1
	errs := queueAcquisitions(t, p, h, "chunk:", n, time.Minute)
	close(h.release)
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// The last one goes out alone, as the held one did.
	if want := []int{maxPipeline, maxPipeline}; !slices.Equal(h.sizes, want) || h.single.Load() != 2 {
		t.Fatalf("%d queued acquisitions went out in pipelines of %v and %d alone (the held one included); want %v and 2", n, h.sizes, h.single.Load(), want)
	}
}

// A call whose context ends while it is queued is not sent, and an
// acquisition that was not sent sends no cleanup: on a machine too busy
// to answer a large round of acquisitions in time, the late ones cost
// nothing instead of a cleanup each (L1, L7).
func TestProvider_L1_L7_AcquisitionsThatTimedOutQueuedAreNotSentNorCleanedUp(t *testing.T) {
	c, p, h := sizedProvider(t)
	const n = 300
	errs := queueAcquisitions(t, p, h, "late:", n, 200*time.Millisecond)
	for range n {
		err := <-errs
		// The server answered nothing while they waited (the round trip
		// before them is stuck): an outage, not a saturated client.
		if !errors.Is(err, errNotSent) || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, locking.ErrNotSent) {
			t.Fatalf("a queued acquisition whose context ended returned %v; want a deadline, not sent, not locking.ErrNotSent", err)
		}
	}
	close(h.release)
	<-errs // the held one: its reply came after its deadline
	time.Sleep(100 * time.Millisecond)
	h.mu.Lock()
	sizes := slices.Clone(h.sizes)
	h.mu.Unlock()
	if len(sizes) != 0 || h.single.Load() != 2 {
		t.Fatalf("after %d acquisitions timed out in the queue: pipelines %v, %d calls alone; want no pipeline, the held call and its cleanup", n, sizes, h.single.Load())
	}
	if keys, err := c.Keys(context.Background(), "late:[0-9]*").Result(); err != nil || len(keys) != 0 {
		t.Fatalf("keys of unsent acquisitions: %v, %v; want none", keys, err)
	}
}

// slowPipelines delays every script pipeline by d before it is sent, as a
// saturated server answers late.
type slowPipelines struct{ d time.Duration }

func (slowPipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (slowPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h slowPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && isScript(cmds[0]) {
			time.Sleep(h.d)
		}
		return next(ctx, cmds)
	}
}

// An acquisition whose deadline passes while its pipelined round trip is
// on the wire gets the reply when it comes: the server granted it, and
// its caller measures the lease from before it called (E5), so it counts
// rather than being undone by a cleanup and tried again, which on a
// saturated server only brought more late replies. An acquisition its
// caller cancelled on the wire still ends with the context's error and
// leaves no lease behind (L1, L3, E5).
func TestProvider_L3_E5_AcquisitionGrantedAfterItsDeadlineOnTheWireCounts(t *testing.T) {
	c, p, h := sizedProvider(t)
	c.AddHook(slowPipelines{d: 500 * time.Millisecond})
	type result struct {
		key string
		res locking.AcquireResult
		err error
	}
	results := make(chan result, 4)
	acquire := func(ctx context.Context, key string) {
		r, err := p.Acquire(ctx, locking.AcquireRequest{Key: key, Value: "v-" + key, TTL: time.Minute})
		results <- result{key, r, err}
	}
	long, cancelLong := context.WithTimeout(context.Background(), time.Minute)
	defer cancelLong()
	go acquire(long, "first") // held on the wire, alone
	for !h.held.Load() {
		time.Sleep(time.Millisecond)
	}
	late, cancelLate := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelLate()
	dropped, drop := context.WithCancel(context.Background())
	go acquire(late, "late")
	go acquire(dropped, "dropped")
	go acquire(long, "patient") // the pipeline's own deadline is this one's
	waitQueued(t, p, 3)
	close(h.release) // the three go out together, and their pipeline waits 500 ms
	time.Sleep(100 * time.Millisecond)
	drop() // on the wire
	got := map[string]result{}
	for range 4 {
		r := <-results
		got[r.key] = r
	}
	for _, key := range []string{"first", "late", "patient"} {
		if r := got[key]; r.err != nil || !r.res.Acquired || r.res.Fence == 0 {
			t.Errorf("%s: Acquire = %+v, %v; want granted with a fence", key, r.res, r.err)
		}
		if v, err := c.Get(context.Background(), key).Result(); err != nil || v != "v-"+key {
			t.Errorf("%s holds %q, %v; want the acquisition's value (no cleanup)", key, v, err)
		}
	}
	if r := got["dropped"]; !errors.Is(r.err, context.Canceled) {
		t.Errorf("the cancelled acquisition: %+v, %v; want the context's error", r.res, r.err)
	}
	if n, err := c.Exists(context.Background(), "dropped").Result(); err != nil || n != 0 {
		t.Errorf("the cancelled acquisition left its key: %d, %v; want it cleaned up", n, err)
	}
}

// A call that waits in the queue past its deadline while the server
// answers other round trips (more calls queued than it serves in their
// time: a saturated client) fails with locking.ErrNotSent, so an elector
// backs off rather than queueing its next try at once (L1, E7); one that
// waits behind a round trip the server does not answer does not (above).
func TestProvider_L1_E7_CallsNotSentWhileTheServerAnswersMatchErrNotSent(t *testing.T) {
	c, p, h := sizedProvider(t)
	c.AddHook(slowPipelines{d: 500 * time.Millisecond})
	errs := make(chan error, maxPipeline+2)
	acquire := func(key string, d time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		_, err := p.Acquire(ctx, locking.AcquireRequest{Key: key, Value: "v", TTL: time.Minute})
		errs <- err
	}
	go acquire("sat:held", 10*time.Second)
	for !h.held.Load() {
		time.Sleep(time.Millisecond)
	}
	// A full pipeline's worth queued first, then the call whose deadline
	// passes while that pipeline is on the wire.
	for i := range maxPipeline {
		go acquire("sat:"+strconv.Itoa(i), 10*time.Second)
	}
	waitQueued(t, p, maxPipeline)
	late := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := p.Acquire(ctx, locking.AcquireRequest{Key: "sat:late", Value: "v", TTL: time.Minute})
		late <- err
	}()
	waitQueued(t, p, maxPipeline+1)
	close(h.release) // the held call is answered; the full pipeline goes out, 500 ms on the wire
	select {
	case err := <-late:
		if !errors.Is(err, locking.ErrNotSent) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a call not sent while the server answered returned %v; want locking.ErrNotSent and a deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the late call did not return")
	}
	for range maxPipeline + 1 {
		if err := <-errs; err != nil {
			t.Fatalf("a call sent in time failed: %v", err)
		}
	}
	if n, err := c.Exists(context.Background(), "sat:late").Result(); err != nil || n != 0 {
		t.Fatalf("the late call's key: exists %d, %v; want not written", n, err)
	}
}
