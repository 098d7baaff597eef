package roundtrip_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/kit/roundtrip"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const ms = time.Millisecond

// fakeCall is a call to fakeServer: its caller's context and, once
// answered, its reply or its error.
type fakeCall struct {
	id    int
	ctx   context.Context
	reply string
	err   error
}

// fakeServer answers every round trip rtt after it starts, or fails it
// when the round trip's context ends first; it records the rounds.
type fakeServer struct {
	rtt    time.Duration
	start  time.Time
	mu     sync.Mutex
	rounds []sentRound
}

// sentRound is one round trip a fakeServer saw.
type sentRound struct {
	ids      []int
	at       time.Duration // when it started, from the test's start
	deadline time.Duration // its context's deadline from the start; 0: none
	callers  bool          // sent on its lone call's own context
}

func (s *fakeServer) send(ctx context.Context, calls []fakeCall) bool {
	r := sentRound{at: time.Since(s.start), callers: len(calls) == 1 && ctx == calls[0].ctx}
	if d, ok := ctx.Deadline(); ok {
		r.deadline = d.Sub(s.start)
	}
	for _, c := range calls {
		r.ids = append(r.ids, c.id)
	}
	s.mu.Lock()
	s.rounds = append(s.rounds, r)
	s.mu.Unlock()
	t := time.NewTimer(s.rtt)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		for i := range calls {
			calls[i].err = ctx.Err()
		}
		return false
	}
	for i := range calls {
		calls[i].reply = fmt.Sprint("reply ", calls[i].id)
	}
	return true
}

// caller is one call of a test case.
type caller struct {
	at      time.Duration // when it calls Do, from the start
	timeout time.Duration // its context's deadline, after at; 0: none
	cancel  time.Duration // when its context is cancelled, from the start; 0: never
}

// outcome is what Do returned to a caller.
type outcome struct {
	reply     bool          // the server's reply
	err       error         // else an error matching this (Do's or the call's)
	notSent   bool          // a *roundtrip.NotSentError
	saturated bool          // matching locking.ErrNotSent
	at        time.Duration // when Do returned, from the start
}

func (o outcome) String() string {
	return fmt.Sprintf("{reply %v, err %v, not sent %v, saturated %v, at %v}", o.reply, o.err, o.notSent, o.saturated, o.at)
}

// TestQueue_X2_Rules runs each case's callers against a fakeServer in
// fake time and checks the round trips sent and what every caller got.
func TestQueue_X2_Rules(t *testing.T) {
	cases := []struct {
		name    string
		opts    []roundtrip.Option
		rtt     time.Duration
		callers []caller
		rounds  []sentRound
		want    []outcome
	}{
		{
			name:    "a lone call is sent at once by its caller",
			rtt:     100 * ms,
			callers: []caller{{}},
			rounds:  []sentRound{{ids: []int{0}, callers: true}},
			want:    []outcome{{reply: true, at: 100 * ms}},
		},
		{
			name:    "a lone call runs on its caller's context, which ends it",
			rtt:     100 * ms,
			callers: []caller{{timeout: 50 * ms}},
			rounds:  []sentRound{{ids: []int{0}, deadline: 50 * ms, callers: true}},
			want:    []outcome{{err: context.DeadlineExceeded, at: 50 * ms}},
		},
		{
			name:    "calls made while one is on the wire go together in the next round trip",
			rtt:     100 * ms,
			callers: []caller{{}, {at: 10 * ms}, {at: 20 * ms, timeout: time.Second}, {at: 30 * ms}},
			rounds: []sentRound{
				{ids: []int{0}, callers: true},
				{ids: []int{1, 2, 3}, at: 100 * ms, deadline: 100*ms + roundtrip.DefaultTimeout},
			},
			want: []outcome{{reply: true, at: 100 * ms}, {reply: true, at: 200 * ms}, {reply: true, at: 200 * ms}, {reply: true, at: 200 * ms}},
		},
		{
			name:    "a round of several ends at the latest of its callers' deadlines",
			rtt:     100 * ms,
			callers: []caller{{}, {at: 10 * ms, timeout: time.Second}, {at: 20 * ms, timeout: 2 * time.Second}},
			rounds: []sentRound{
				{ids: []int{0}, callers: true},
				{ids: []int{1, 2}, at: 100 * ms, deadline: 2020 * ms},
			},
			want: []outcome{{reply: true, at: 100 * ms}, {reply: true, at: 200 * ms}, {reply: true, at: 200 * ms}},
		},
		{
			name:    "MaxCalls caps a round, the first queued first",
			opts:    []roundtrip.Option{roundtrip.MaxCalls(2)},
			rtt:     100 * ms,
			callers: []caller{{}, {at: 10 * ms}, {at: 20 * ms}, {at: 30 * ms}, {at: 40 * ms}},
			rounds: []sentRound{
				{ids: []int{0}, callers: true},
				{ids: []int{1, 2}, at: 100 * ms, deadline: 100*ms + roundtrip.DefaultTimeout},
				{ids: []int{3, 4}, at: 200 * ms, deadline: 200*ms + roundtrip.DefaultTimeout},
			},
			want: []outcome{{reply: true, at: 100 * ms}, {reply: true, at: 200 * ms}, {reply: true, at: 200 * ms}, {reply: true, at: 300 * ms}, {reply: true, at: 300 * ms}},
		},
		{
			name:    "a call whose deadline passes while queued behind an unanswered round trip is not sent, an outage",
			rtt:     time.Second,
			callers: []caller{{}, {at: 10 * ms, timeout: 50 * ms}},
			rounds:  []sentRound{{ids: []int{0}, callers: true}},
			want:    []outcome{{reply: true, at: time.Second}, {err: context.DeadlineExceeded, notSent: true, at: 60 * ms}},
		},
		{
			name:    "a call cancelled while queued is not sent",
			rtt:     time.Second,
			callers: []caller{{}, {at: 10 * ms, cancel: 50 * ms}},
			rounds:  []sentRound{{ids: []int{0}, callers: true}},
			want:    []outcome{{reply: true, at: time.Second}, {err: context.Canceled, notSent: true, at: 50 * ms}},
		},
		{
			name:    "a call not sent while the server answered others matches locking.ErrNotSent",
			opts:    []roundtrip.Option{roundtrip.MaxCalls(1)},
			rtt:     100 * ms,
			callers: []caller{{}, {at: 10 * ms}, {at: 20 * ms, timeout: 150 * ms}},
			rounds: []sentRound{
				{ids: []int{0}, callers: true},
				{ids: []int{1}, at: 100 * ms, callers: true},
			},
			want: []outcome{{reply: true, at: 100 * ms}, {reply: true, at: 200 * ms}, {err: context.DeadlineExceeded, notSent: true, saturated: true, at: 170 * ms}},
		},
		{
			name:    "a caller whose call is on the wire waits for the reply and returns its context's error",
			rtt:     100 * ms,
			callers: []caller{{}, {at: 10 * ms}, {at: 20 * ms, timeout: 150 * ms}, {at: 30 * ms, cancel: 150 * ms}},
			rounds: []sentRound{
				{ids: []int{0}, callers: true},
				{ids: []int{1, 2, 3}, at: 100 * ms, deadline: 100*ms + roundtrip.DefaultTimeout},
			},
			want: []outcome{{reply: true, at: 100 * ms}, {reply: true, at: 200 * ms}, {err: context.DeadlineExceeded, at: 200 * ms}, {err: context.Canceled, at: 200 * ms}},
		},
		{
			name:    "with LateReplies a caller whose deadline passed on the wire gets the reply, a cancelled one its error",
			opts:    []roundtrip.Option{roundtrip.LateReplies()},
			rtt:     100 * ms,
			callers: []caller{{}, {at: 10 * ms}, {at: 20 * ms, timeout: 150 * ms}, {at: 30 * ms, cancel: 150 * ms}},
			rounds: []sentRound{
				{ids: []int{0}, callers: true},
				{ids: []int{1, 2, 3}, at: 100 * ms, deadline: 100*ms + roundtrip.DefaultTimeout},
			},
			want: []outcome{{reply: true, at: 100 * ms}, {reply: true, at: 200 * ms}, {reply: true, at: 200 * ms}, {err: context.Canceled, at: 200 * ms}},
		},
		{
			name:    "a caller waits for the reply at most the wire wait",
			opts:    []roundtrip.Option{roundtrip.WireWait(300 * ms)},
			rtt:     2 * time.Second,
			callers: []caller{{}, {at: 10 * ms}, {at: 20 * ms, timeout: 2500 * ms}},
			rounds: []sentRound{
				{ids: []int{0}, callers: true},
				{ids: []int{1, 2}, at: 2 * time.Second, deadline: 2*time.Second + roundtrip.DefaultTimeout},
			},
			want: []outcome{{reply: true, at: 2 * time.Second}, {reply: true, at: 4 * time.Second}, {err: context.DeadlineExceeded, at: 2820 * ms}},
		},
		{
			name:    "Timeout bounds a round whose callers set no deadline",
			opts:    []roundtrip.Option{roundtrip.Timeout(150 * ms)},
			rtt:     200 * ms,
			callers: []caller{{}, {at: 10 * ms}, {at: 20 * ms}},
			rounds: []sentRound{
				{ids: []int{0}, callers: true},
				{ids: []int{1, 2}, at: 200 * ms, deadline: 350 * ms},
			},
			want: []outcome{{reply: true, at: 200 * ms}, {err: context.DeadlineExceeded, at: 350 * ms}, {err: context.DeadlineExceeded, at: 350 * ms}},
		},
		{
			name:    "Detached sends a lone call from the queue on a context that outlives its caller's by the grace",
			opts:    []roundtrip.Option{roundtrip.Detached(time.Second)},
			rtt:     100 * ms,
			callers: []caller{{timeout: 50 * ms}, {at: 200 * ms}},
			rounds: []sentRound{
				{ids: []int{0}, deadline: 1050 * ms},
				{ids: []int{1}, at: 200 * ms, deadline: 200*ms + roundtrip.DefaultTimeout},
			},
			want: []outcome{{err: context.DeadlineExceeded, at: 100 * ms}, {reply: true, at: 300 * ms}},
		},
		{
			name:    "HoldLate keeps a call due before the round trip would come back for a later round",
			opts:    []roundtrip.Option{roundtrip.HoldLate()},
			rtt:     100 * ms,
			callers: []caller{{}, {at: 10 * ms, timeout: 150 * ms}, {at: 20 * ms, timeout: time.Second}, {at: 30 * ms, timeout: 500 * ms}},
			rounds: []sentRound{
				{ids: []int{0}, callers: true},
				{ids: []int{2, 3}, at: 100 * ms, deadline: 1020 * ms},
			},
			want: []outcome{{reply: true, at: 100 * ms}, {err: context.DeadlineExceeded, notSent: true, saturated: true, at: 160 * ms}, {reply: true, at: 200 * ms}, {reply: true, at: 200 * ms}},
		},
		{
			name:    "HoldLate sends the call due last however late",
			opts:    []roundtrip.Option{roundtrip.HoldLate(), roundtrip.Detached(time.Second)},
			rtt:     100 * ms,
			callers: []caller{{}, {at: 10 * ms, timeout: 170 * ms}, {at: 20 * ms, timeout: 150 * ms}},
			rounds: []sentRound{
				{ids: []int{0}, deadline: roundtrip.DefaultTimeout},
				{ids: []int{1}, at: 100 * ms, deadline: 1180 * ms},
			},
			want: []outcome{{reply: true, at: 100 * ms}, {err: context.DeadlineExceeded, at: 200 * ms}, {err: context.DeadlineExceeded, notSent: true, saturated: true, at: 170 * ms}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &fakeServer{rtt: tc.rtt, start: time.Now()}
				q := roundtrip.New(srv.send, tc.opts...)
				got := make([]outcome, len(tc.callers))
				var wg sync.WaitGroup
				for i, c := range tc.callers {
					wg.Go(func() {
						time.Sleep(c.at)
						got[i] = call(q, srv.start, i, c)
					})
				}
				wg.Wait()
				for i, want := range tc.want {
					if !same(got[i], want) {
						t.Errorf("caller %d got %v, want %v", i, got[i], want)
					}
				}
				if !slices.EqualFunc(srv.rounds, tc.rounds, func(a, b sentRound) bool {
					return slices.Equal(a.ids, b.ids) && a.at == b.at && a.deadline == b.deadline && a.callers == b.callers
				}) {
					t.Errorf("rounds sent:\n%+v\nwant\n%+v", srv.rounds, tc.rounds)
				}
				synctest.Wait() // the flush that skips dropped calls ends
				if n := q.Len(); n != 0 {
					t.Errorf("%d calls left queued", n)
				}
			})
		})
	}
}

// call makes c's call number id through q and returns what Do returned.
func call(q *roundtrip.Queue[fakeCall], start time.Time, id int, c caller) outcome {
	ctx := context.Background()
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	if c.cancel > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		t := time.AfterFunc(c.cancel-c.at, cancel)
		defer t.Stop()
	}
	r, err := q.Do(ctx, fakeCall{id: id, ctx: ctx})
	o := outcome{at: time.Since(start)}
	var ns *roundtrip.NotSentError
	o.notSent = errors.As(err, &ns)
	o.saturated = errors.Is(err, locking.ErrNotSent)
	if err == nil {
		err = r.err
	}
	o.err = err
	o.reply = err == nil && r.reply == fmt.Sprint("reply ", id)
	return o
}

// same reports whether got is the outcome want describes.
func same(got, want outcome) bool {
	errOK := (want.err == nil && got.err == nil) || (want.err != nil && errors.Is(got.err, want.err))
	return errOK && got.reply == want.reply && got.notSent == want.notSent && got.saturated == want.saturated && got.at == want.at
}

// TestQueue_X2_NotSentErrorWrapsTheContextsError: a call not sent
// matches its context's error, and locking.ErrNotSent only when the
// server answered round trips while it waited.
func TestQueue_X2_NotSentErrorWrapsTheContextsError(t *testing.T) {
	for _, tc := range []struct {
		err       *roundtrip.NotSentError
		text      string
		errNotSet bool
	}{
		{&roundtrip.NotSentError{Err: context.DeadlineExceeded}, "context deadline exceeded: not sent", false},
		{&roundtrip.NotSentError{Err: context.Canceled, Saturated: true}, "context canceled: " + locking.ErrNotSent.Error(), true},
	} {
		if got := tc.err.Error(); got != tc.text {
			t.Errorf("Error() = %q, want %q", got, tc.text)
		}
		if !errors.Is(tc.err, tc.err.Err) || errors.Is(tc.err, locking.ErrNotSent) != tc.errNotSet {
			t.Errorf("%v: matches its context's error %v, locking.ErrNotSent %v; want true, %v",
				tc.err, errors.Is(tc.err, tc.err.Err), errors.Is(tc.err, locking.ErrNotSent), tc.errNotSet)
		}
	}
}

// TestQueue_X2_LoneCallCostsNoAllocation: a call sent alone by its caller
// costs the queue no allocation (the hot path of every lock).
func TestQueue_X2_LoneCallCostsNoAllocation(t *testing.T) {
	q := roundtrip.New(func(_ context.Context, calls []int) bool {
		calls[0]++
		return true
	}, roundtrip.MaxCalls(8))
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		if n, err := q.Do(ctx, 1); n != 2 || err != nil {
			t.Fatalf("Do = %d, %v; want 2, nil", n, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("a lone call allocates %v times, want 0", allocs)
	}
}

// TestQueue_X2_ConcurrentCallsLeaveNoGoroutine: a burst of calls on real
// time is answered, every call once, and the queue's goroutines end with
// the last round trip (goleak checks the package at exit).
func TestQueue_X2_ConcurrentCallsLeaveNoGoroutine(t *testing.T) {
	for _, opts := range [][]roundtrip.Option{
		nil,
		{roundtrip.MaxCalls(3)},
		{roundtrip.Detached(time.Second), roundtrip.HoldLate()},
	} {
		var mu sync.Mutex
		seen := map[int]int{}
		q := roundtrip.New(func(_ context.Context, calls []int) bool {
			mu.Lock()
			defer mu.Unlock()
			for i := range calls {
				seen[calls[i]]++
				calls[i] = -calls[i]
			}
			return true
		}, opts...)
		var wg sync.WaitGroup
		for i := 1; i <= 200; i++ {
			wg.Go(func() {
				if n, err := q.Do(context.Background(), i); n != -i || err != nil {
					t.Errorf("call %d: Do = %d, %v; want %d, nil", i, n, err, -i)
				}
			})
		}
		wg.Wait()
		mu.Lock()
		for i := 1; i <= 200; i++ {
			if seen[i] != 1 {
				t.Errorf("call %d sent %d times, want once", i, seen[i])
			}
		}
		mu.Unlock()
		goleak.VerifyNone(t)
	}
}

// lateTimer is a context whose deadline has passed while its timer has
// not fired yet: Err is still nil.
type lateTimer struct {
	context.Context
	deadline time.Time
}

func (c lateTimer) Deadline() (time.Time, bool) { return c.deadline, true }

// TestContextErr_X2_DeadlinePassedBeforeItsTimer: ContextErr reports a
// deadline that has passed even while the context's timer has not fired,
// the context's own error once it ended, and nil while time is left.
func TestContextErr_X2_DeadlinePassedBeforeItsTimer(t *testing.T) {
	if err := roundtrip.ContextErr(lateTimer{context.Background(), time.Now().Add(-ms)}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ContextErr with its deadline passed = %v, want context.DeadlineExceeded", err)
	}
	if err := roundtrip.ContextErr(lateTimer{context.Background(), time.Now().Add(time.Hour)}); err != nil {
		t.Fatalf("ContextErr with an hour left = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := roundtrip.ContextErr(lateTimer{ctx, time.Now().Add(time.Hour)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("ContextErr of a cancelled context = %v, want context.Canceled", err)
	}
	if err := roundtrip.ContextErr(context.Background()); err != nil {
		t.Fatalf("ContextErr without a deadline = %v, want nil", err)
	}
}
