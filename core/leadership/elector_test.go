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

	"go.uber.org/zap/zapcore"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
)

var bg = context.Background()

func TestNewElector_BadInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t, func(o *locking.Options) { o.MaxKeyLength = 12 })
		bad := fastOpts()
		bad.RenewInterval = 2 * time.Second
		tests := []struct {
			name string
			role string
			lock locking.Lock
			opts leadership.Options
			want string
		}{
			{"empty role", "", lock, fastOpts(), `leadership: role "" must be nonempty`},
			{"nil lock", "r", nil, fastOpts(), `leadership: role "r": nil lock`},
			{"T1 invalid options", "r", lock, bad, "leadership: invalid options: Options.RenewInterval 2s exceeds half of Options.Lease 3s"},
			{"negative options", "r", lock, leadership.Options{Lease: -time.Second}, "leadership: invalid options: Options.Lease -1s must be positive"},
			{"K5 key too long", "abcdefg", lock, fastOpts(), `"leader:abcdefg": 14 bytes exceeds max_key_length 12`},
			{"panicking lock", "r", panicLock{}, fastOpts(), `leadership: role "r": lock Coordinated panicked: boom`},
		}
		for _, tt := range tests {
			e, err := leadership.NewElector(tt.role, tt.lock, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) || e != nil {
				t.Errorf("%s: NewElector() = %v, %v; want error containing %q", tt.name, e, err, tt.want)
			}
		}
	})
}

type panicLock struct{}

func (panicLock) TryAcquire(context.Context, string, time.Duration) (locking.Lease, error) {
	panic("boom")
}
func (panicLock) Coordinated() bool { panic("boom") }

func TestElector_K6_CapturedKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		o := fastOpts()
		o.LockKeyFormat = "election:eu:{role}"
		e := mustElector(t, "scheduler", lock, o)
		o.LockKeyFormat = "other:{role}" // mutating the caller's value changes nothing
		o.LockKey = "other"
		o.Lease = time.Hour
		if e.LockKey() != "election:eu:scheduler" || leadership.Describe(e).LockKey != "election:eu:scheduler" {
			t.Fatalf("LockKey = %q, Describe.LockKey = %q", e.LockKey(), leadership.Describe(e).LockKey)
		}
		if d := leadership.Describe(e); d.Lease != 3*time.Second {
			t.Fatalf("Describe.Lease = %v after mutating options", d.Lease)
		}
		mustStart(t, e)
		defer mustStop(t, e)
		// Across renewals, resignation and a retry, the key stays the same.
		for range 3 {
			synctest.Wait()
			if !e.IsLeader() {
				t.Fatal("not leader")
			}
			h, ok, err := lock.Holder(bg, "election:eu:scheduler")
			if err != nil || !ok {
				t.Fatalf("Holder(captured key) = %v, %v, %v", h, ok, err)
			}
			time.Sleep(1500 * time.Millisecond) // one renewal
			if err := e.Resign(bg); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Second) // sit out, then retry
		}
		synctest.Wait()
		if _, ok, _ := lock.Holder(bg, "other"); ok {
			t.Fatal("mutated key was used")
		}
		if e.Term() != 4 {
			t.Fatalf("Term = %d, want 4 (three resignations)", e.Term())
		}
	})
}

func TestElector_T2_CappedByLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t, func(o *locking.Options) { o.MaxLease = 4 * time.Second })
		fl := leadershiptest.NewFaultLock(lock)
		log, logs := observed()
		o := leadership.DefaultOptions() // 15s lease, 5s renew
		e := mustElector(t, "r", fl, o, leadership.WithLogger(log))
		d := leadership.Describe(e)
		if d.Lease != 4*time.Second || d.RequestedLease != 15*time.Second || d.RenewInterval != 2*time.Second {
			t.Fatalf("Describe = %+v, want lease capped at 4s, renew 2s", d)
		}
		if n := countLogs(logs, zapcore.WarnLevel, "LeadershipLeaseCapped"); n != 0 {
			t.Fatalf("LeadershipLeaseCapped logged %d times before Start, want 0 (a composition may still refuse the lease)", n)
		}
		mustStart(t, e)
		defer mustStop(t, e)
		time.Sleep(time.Minute)
		synctest.Wait()
		if !e.IsLeader() || e.Term() != 1 {
			t.Fatalf("IsLeader = %v, Term = %d after a minute with a capped lease", e.IsLeader(), e.Term())
		}
		if got := fl.Calls(leadershiptest.OpExtend); got != 30 {
			t.Fatalf("renewals in a minute = %d, want 30 (every 2s)", got)
		}
		if n := countLogs(logs, zapcore.WarnLevel, "LeadershipLeaseCapped"); n != 1 {
			t.Fatalf("LeadershipLeaseCapped logged %d times, want once", n)
		}
	})
}

func TestElector_E1_FirstAttemptImmediate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := mustElector(t, "r", memLock(t), fastOpts())
		start := time.Now()
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		if !e.IsLeader() || time.Since(start) != 0 {
			t.Fatalf("IsLeader = %v after %v, want leader at once", e.IsLeader(), time.Since(start))
		}
	})
}

func TestElector_E1_RetryCadenceExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		fl.Set(leadershiptest.OpAcquire, leadershiptest.FaultRefuse) // held, TTL unknown
		e := mustElector(t, "r", fl, fastOpts())
		mustStart(t, e)
		defer mustStop(t, e)
		for i := 1; i <= 5; i++ {
			synctest.Wait()
			if got := fl.Calls(leadershiptest.OpAcquire); got != i {
				t.Fatalf("attempts = %d, want %d", got, i)
			}
			time.Sleep(2*time.Second - time.Nanosecond)
			synctest.Wait()
			if got := fl.Calls(leadershiptest.OpAcquire); got != i {
				t.Fatalf("attempts = %d before the retry interval, want %d", got, i)
			}
			time.Sleep(time.Nanosecond)
		}
	})
}

func TestElector_E1_WakesAtHolderExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		// A crashed holder: its lease runs out in 500ms, nobody releases it.
		if _, err := lock.TryAcquire(bg, "leader:r", 500*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		e := mustElector(t, "r", lock, fastOpts())
		start := time.Now()
		mustStart(t, e)
		defer mustStop(t, e)
		if err := e.WaitForLeadership(bg); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 500*time.Millisecond {
			t.Fatalf("took over after %v, want 500ms (the TTL), not the 2s retry interval", got)
		}
	})
}

func TestElector_E1_WakesOnRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		a := mustElector(t, "r", lock, fastOpts())
		b := mustElector(t, "r", lock, fastOpts())
		mustStart(t, a)
		synctest.Wait()
		mustStart(t, b)
		defer mustStop(t, b)
		time.Sleep(500 * time.Millisecond)
		mustStop(t, a)
		stopped := time.Now()
		if err := b.WaitForLeadership(bg); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(stopped); got != 0 {
			t.Fatalf("handover took %v, want at once on the release notification", got)
		}
	})
}

func TestElector_E1_FallbackWithoutWatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		a := mustElector(t, "r", lock, fastOpts())
		b := mustElector(t, "r", bareLock{lock}, fastOpts()) // no release notification
		start := time.Now()
		mustStart(t, a)
		synctest.Wait()
		mustStart(t, b)
		defer mustStop(t, b)
		time.Sleep(500 * time.Millisecond)
		mustStop(t, a)
		if err := b.WaitForLeadership(bg); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 2*time.Second {
			t.Fatalf("took over at %v, want at the next retry (2s)", got)
		}
	})
}

// TestElector_E2_EveryWaiterReturnsAtTheNextAcquisition: waiters that
// come before Start, while a term runs and after it ended (each state's
// channel is made by its first waiter) all return at the next
// acquisition, and none returns while the elector does not lead.
func TestElector_E2_EveryWaiterReturnsAtTheNextAcquisition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := mustElector(t, "billing", memLock(t), fastOpts())
		const n = 16
		wait := func() chan error {
			done := make(chan error, n)
			for range n {
				go func() { done <- e.WaitForLeadership(bg) }()
			}
			return done
		}
		expect := func(done chan error, what string) {
			t.Helper()
			for range n {
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
				case <-time.After(time.Second):
					t.Fatalf("%s: a waiter still waits a second after the acquisition", what)
				}
			}
		}
		before := wait()
		synctest.Wait()
		if len(before) != 0 {
			t.Fatal("a waiter returned before Start")
		}
		mustStart(t, e)
		synctest.Wait()
		expect(before, "waiters before Start")
		expect(wait(), "waiters while leading")
		if err := e.Resign(bg); err != nil {
			t.Fatal(err)
		}
		after := wait()
		synctest.Wait()
		if len(after) != 0 || e.IsLeader() {
			t.Fatalf("%d waiters returned while sitting out (leader %v)", len(after), e.IsLeader())
		}
		time.Sleep(fastOpts().RetryInterval + time.Millisecond)
		synctest.Wait()
		if !e.IsLeader() || e.Term() != 2 {
			t.Fatalf("IsLeader = %v, Term = %d after the sit-out", e.IsLeader(), e.Term())
		}
		expect(after, "waiters after Resign")
		mustStop(t, e)
	})
}

func TestElector_E2_Acquisition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := mustElector(t, "billing", memLock(t), fastOpts())
		changes := subscribe(e)
		if e.IsLeader() || e.Term() != 0 || !tokenDone(e) {
			t.Fatal("a new elector must be a follower with a done token")
		}
		waited := make(chan error, 1)
		go func() { waited <- e.WaitForLeadership(bg) }()
		start := time.Now()
		mustStart(t, e)
		synctest.Wait()
		if err := <-waited; err != nil {
			t.Fatal(err)
		}
		if !e.IsLeader() || e.Term() != 1 || tokenDone(e) {
			t.Fatalf("IsLeader = %v, Term = %d, token done = %v", e.IsLeader(), e.Term(), tokenDone(e))
		}
		if e.Fence() == 0 {
			t.Fatal("no fence over memlock (G1, G2)")
		}
		want := []leadership.Change{{Role: "billing", IsLeader: true, Term: 1, Fence: e.Fence(), Reason: leadership.Acquired, At: start}}
		if got := changes.all(); !slices.Equal(got, want) {
			t.Fatalf("changes = %+v, want %+v", got, want)
		}
		tok, fence := e.Token(), e.Fence()
		mustStop(t, e)
		synctest.Wait()
		if tok.Err() == nil {
			t.Fatal("term token not cancelled by Stop")
		}
		want = append(want, leadership.Change{Role: "billing", Term: 1, Fence: fence, Reason: leadership.Released, At: start})
		if got := changes.all(); !slices.Equal(got, want) {
			t.Fatalf("changes = %+v, want %+v", got, want)
		}
	})
}

func TestElector_E3_RenewsForAsLongAsItLives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// MaxHold 1m: the lock's automatic extension would stop after a
		// minute; the elector renews on its own.
		lock := memLock(t, func(o *locking.Options) { o.MaxHold = time.Minute })
		fl := leadershiptest.NewFaultLock(lock)
		e := mustElector(t, "r", fl, fastOpts())
		mustStart(t, e)
		defer mustStop(t, e)
		time.Sleep(time.Hour)
		synctest.Wait()
		if !e.IsLeader() || e.Term() != 1 || tokenDone(e) {
			t.Fatalf("after an hour: IsLeader = %v, Term = %d", e.IsLeader(), e.Term())
		}
		if got := fl.Calls(leadershiptest.OpExtend); got != 3600 {
			t.Fatalf("renewals = %d, want 3600 (every RenewInterval)", got)
		}
	})
}

func TestElector_E4_RefusedRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		log, logs := observed()
		e := mustElector(t, "r", fl, fastOpts(), leadership.WithLogger(log))
		changes := subscribe(e)
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		tok := e.Token()
		fl.Set(leadershiptest.OpExtend, leadershiptest.FaultRefuse)
		time.Sleep(time.Second) // the renewal is refused
		synctest.Wait()
		if e.IsLeader() || tok.Err() == nil {
			t.Fatal("a refused renewal must end leadership at once")
		}
		if got := fl.Calls(leadershiptest.OpAcquire); got != 2 {
			t.Fatalf("acquire attempts = %d, want 2 (candidate at once)", got)
		}
		if got := changes.reasons(); !slices.Equal(got, []leadership.Reason{leadership.Acquired, leadership.Refused}) {
			t.Fatalf("reasons = %v", got)
		}
		if n := countLogs(logs, zapcore.WarnLevel, "LeadershipLost"); n != 1 {
			t.Fatalf("LeadershipLost at Warn: %d", n)
		}
		fl.Clear()
		// The old entry runs out at 3s; the refused acquire's TTL wakes us.
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !e.IsLeader() || e.Term() != 2 {
			t.Fatalf("IsLeader = %v, Term = %d, want a second term", e.IsLeader(), e.Term())
		}
	})
}

func TestElector_E5_DeadlineFromSendTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		fl.SetDelay(leadershiptest.OpAcquire, 500*time.Millisecond) // a slow round trip
		fl.Set(leadershiptest.OpExtend, leadershiptest.FaultHang)
		e := mustElector(t, "r", fl, fastOpts())
		changes := subscribe(e)
		start := time.Now()
		mustStart(t, e)
		defer mustStop(t, e)
		if err := e.WaitForLeadership(bg); err != nil {
			t.Fatal(err)
		}
		<-e.Token().Done()
		if got, want := time.Since(start), 3*time.Second-leadership.Describe(e).SafetyMargin; got != want {
			t.Fatalf("token done after %v, want %v (lease less the G4 margin): the lease counts from when the acquire was sent", got, want)
		}
		synctest.Wait()
		if got := changes.reasons(); !slices.Equal(got[:2], []leadership.Reason{leadership.Acquired, leadership.Expired}) {
			t.Fatalf("reasons = %v", got)
		}
	})
}

func TestElector_E5_TokenCancelledWhileCallIgnoresContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		e := mustElector(t, "r", fl, fastOpts())
		start := time.Now()
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		fl.Set(leadershiptest.OpExtend, leadershiptest.FaultStall) // the renewal never returns
		<-e.Token().Done()
		if got, want := time.Since(start), 3*time.Second-leadership.Describe(e).SafetyMargin; got != want {
			t.Fatalf("token done after %v, want at the deadline %v (lease less the G4 margin)", got, want)
		}
		if e.IsLeader() {
			t.Fatal("still leader past the deadline")
		}
		fl.Clear()
		fl.Unstall()
	})
}

func TestElector_E5_RenewalDeadlineFromSendTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		e := mustElector(t, "r", fl, fastOpts())
		start := time.Now()
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		// Renewal at 1s takes 400ms: the new deadline is 1s+3s, not 1.4s+3s.
		fl.SetDelay(leadershiptest.OpExtend, 400*time.Millisecond)
		time.Sleep(1500 * time.Millisecond)
		fl.Clear()
		fl.Set(leadershiptest.OpExtend, leadershiptest.FaultStall)
		<-e.Token().Done()
		if got, want := time.Since(start), 4*time.Second-leadership.Describe(e).SafetyMargin; got != want {
			t.Fatalf("token done after %v, want %v (lease less the G4 margin)", got, want)
		}
		fl.Clear()
		fl.Unstall()
	})
}

func TestElector_E6_RenewRetryKeepsTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		rec := &recLock{Lock: fl}
		e := mustElector(t, "r", rec, fastOpts())
		changes := subscribe(e)
		start := time.Now()
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		fl.Set(leadershiptest.OpExtend, leadershiptest.FaultError)
		time.Sleep(2600 * time.Millisecond)
		synctest.Wait()
		if !e.IsLeader() || e.Term() != 1 || tokenDone(e) {
			t.Fatal("a renewal failing at the provider must keep leadership while the lease runs")
		}
		// Retries at 1s, then min(renew 1s, remaining/2), then half the
		// rest again; the deadline is 3s less the G4 margin.
		var at []time.Duration
		for _, tm := range rec.extendTimes() {
			at = append(at, tm.Sub(start))
		}
		deadline := 3*time.Second - leadership.Describe(e).SafetyMargin
		second := time.Second + (deadline-time.Second)/2
		want := []time.Duration{time.Second, second, second + (deadline-second)/2}
		if !slices.Equal(at, want) {
			t.Fatalf("renewal attempts at %v, want %v", at, want)
		}
		fl.Clear() // the provider recovers: the retry at 2.75s succeeds
		time.Sleep(time.Second)
		synctest.Wait()
		if !e.IsLeader() || e.Term() != 1 {
			t.Fatalf("IsLeader = %v, Term = %d, want the same term", e.IsLeader(), e.Term())
		}
		if got := changes.reasons(); !slices.Equal(got, []leadership.Reason{leadership.Acquired}) {
			t.Fatalf("reasons = %v, want only the acquisition", got)
		}
	})
}

func TestElector_E6_NoRetryAtOrPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		rec := &recLock{Lock: fl}
		e := mustElector(t, "r", rec, fastOpts())
		changes := subscribe(e)
		start := time.Now()
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		fl.Set(leadershiptest.OpExtend, leadershiptest.FaultError)
		<-e.Token().Done()
		if got, want := time.Since(start), 3*time.Second-leadership.Describe(e).SafetyMargin; got != want {
			t.Fatalf("lost after %v, want at the deadline %v", got, want)
		}
		times := rec.extendTimes()
		if len(times) < 5 {
			t.Fatalf("only %d attempts", len(times))
		}
		deadline := start.Add(3*time.Second - leadership.Describe(e).SafetyMargin)
		for i, tm := range times {
			if !tm.Before(deadline) {
				t.Fatalf("attempt %d at %v, at or past the deadline", i, tm.Sub(start))
			}
			if i > 0 && tm.Sub(times[i-1]) < leadership.RenewRetryFloor {
				t.Fatalf("attempts %d and %d only %v apart", i-1, i, tm.Sub(times[i-1]))
			}
		}
		synctest.Wait()
		if got := changes.reasons(); !slices.Equal(got[:2], []leadership.Reason{leadership.Acquired, leadership.Expired}) {
			t.Fatalf("reasons = %v", got)
		}
	})
}

func TestElector_E7_ProviderOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		fl.Set(leadershiptest.OpAcquire, leadershiptest.FaultError)
		log, logs := observed()
		e := mustElector(t, "r", fl, fastOpts(), leadership.WithLogger(log))
		mustStart(t, e)
		defer mustStop(t, e)
		time.Sleep(time.Minute)
		synctest.Wait()
		if e.IsLeader() {
			t.Fatal("leader while the provider is unreachable")
		}
		if got := fl.Calls(leadershiptest.OpAcquire); got != 31 {
			t.Fatalf("attempts in a minute = %d, want 31 (every RetryInterval)", got)
		}
		if n := countLogs(logs, zapcore.WarnLevel, "LeadershipProviderUnavailable"); n != 1 {
			t.Fatalf("outage logged %d times at Warn, want once", n)
		}
		if n := countLogs(logs, zapcore.DebugLevel, "LeadershipProviderRetry"); n != 30 {
			t.Fatalf("retries logged %d times at Debug, want 30", n)
		}
		fl.Clear()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !e.IsLeader() {
			t.Fatal("not leader after recovery")
		}
		if n := countLogs(logs, zapcore.InfoLevel, "LeadershipProviderRecovered"); n != 1 {
			t.Fatalf("recovery logged %d times, want once", n)
		}
		// A second outage (renewals failing) is logged once more.
		fl.Set(leadershiptest.OpExtend, leadershiptest.FaultError)
		fl.Set(leadershiptest.OpAcquire, leadershiptest.FaultError)
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := countLogs(logs, zapcore.WarnLevel, "LeadershipProviderUnavailable"); n != 2 {
			t.Fatalf("second outage: logged %d times in total, want 2", n)
		}
	})
}

// TestElector_E7_HangingAttemptsKeepTheCadence: attempts that use their
// whole bound (min(RetryInterval, Lease)) without an answer, as they do
// against a server that accepts connections but answers late while it
// recovers, follow each other on the RetryInterval cadence counted from
// when each was sent, not one RetryInterval after each timed out; once the
// server answers, the next attempt takes the role.
func TestElector_E7_HangingAttemptsKeepTheCadence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		fl.Set(leadershiptest.OpAcquire, leadershiptest.FaultHang)
		e := mustElector(t, "r", fl, fastOpts()) // retry 2s, lease 3s: each attempt hangs 2s
		start := time.Now()
		mustStart(t, e)
		defer mustStop(t, e)
		time.Sleep(19 * time.Second) // the tenth attempt, sent at 18s, hangs
		synctest.Wait()
		if got := fl.Calls(leadershiptest.OpAcquire); got != 10 {
			t.Fatalf("attempts in 19s of hanging calls = %d, want 10 (one every 2s, from when each was sent)", got)
		}
		fl.Clear()
		time.Sleep(time.Second)
		synctest.Wait()
		if !e.IsLeader() || time.Since(start) != 20*time.Second {
			t.Fatalf("leader %v after %v, want leader at 20s (the attempt due when the server answers again)", e.IsLeader(), time.Since(start))
		}
	})
}

func TestElector_E8_StopAndResignBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := mustElector(t, "r", memLock(t), fastOpts())
		if err := e.Resign(bg); err != nil {
			t.Fatal(err)
		}
		if err := e.Stop(bg); err != nil {
			t.Fatal(err)
		}
		if err := e.Stop(bg); err != nil {
			t.Fatal(err)
		}
		if err := e.Resign(bg); err != nil {
			t.Fatal(err)
		}
		if err := e.Start(bg); err == nil || !strings.Contains(err.Error(), "stopped") {
			t.Fatalf("Start after Stop = %v", err)
		}
		e2 := mustElector(t, "r", memLock(t), fastOpts())
		ctx, cancel := context.WithCancel(bg)
		cancel()
		if err := e2.Start(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Start(done ctx) = %v", err)
		}
		mustStart(t, e2)
		if err := e2.Start(bg); err == nil || !strings.Contains(err.Error(), "already started") {
			t.Fatalf("second Start = %v", err)
		}
		mustStop(t, e2)
	})
}

func TestElector_E8_StopIsSynchronousAndReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		e := mustElector(t, "r", lock, fastOpts())
		mustStart(t, e)
		synctest.Wait()
		tok := e.Token()
		mustStop(t, e)
		if e.IsLeader() || tok.Err() == nil || !tokenDone(e) {
			t.Fatal("Stop returned while still leading")
		}
		if _, ok, _ := lock.Holder(bg, "leader:r"); ok {
			t.Fatal("Stop did not release the lease")
		}
		mustStop(t, e) // idempotent
	})
}

func TestElector_E8_ConcurrentStopResign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		e := mustElector(t, "r", lock, fastOpts())
		changes := subscribe(e)
		mustStart(t, e)
		synctest.Wait()
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				var err error
				if i%2 == 0 {
					err = e.Stop(bg)
				} else {
					err = e.Resign(bg)
				}
				if err != nil {
					t.Errorf("call %d: %v", i, err)
				}
				if e.IsLeader() || !tokenDone(e) {
					t.Errorf("call %d returned while leading", i)
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		if got := changes.all(); len(got) != 2 || got[1].IsLeader {
			t.Fatalf("changes = %+v, want one acquisition and one end", got)
		}
		if _, ok, _ := lock.Holder(bg, "leader:r"); ok {
			t.Fatal("lease not released")
		}
	})
}

func TestElector_E8_ResignSitsOutOneRetryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		e := mustElector(t, "r", lock, fastOpts())
		changes := subscribe(e)
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		time.Sleep(time.Second)
		if err := e.Resign(bg); err != nil {
			t.Fatal(err)
		}
		if e.IsLeader() || !tokenDone(e) {
			t.Fatal("Resign returned while leading")
		}
		if _, ok, _ := lock.Holder(bg, "leader:r"); ok {
			t.Fatal("Resign did not release the lease")
		}
		time.Sleep(2*time.Second - time.Nanosecond)
		synctest.Wait()
		if e.IsLeader() {
			t.Fatal("contended again before one RetryInterval")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if !e.IsLeader() || e.Term() != 2 {
			t.Fatalf("IsLeader = %v, Term = %d after sitting out", e.IsLeader(), e.Term())
		}
		if got := changes.reasons(); !slices.Equal(got, []leadership.Reason{leadership.Acquired, leadership.Resigned, leadership.Acquired}) {
			t.Fatalf("reasons = %v", got)
		}
	})
}

func TestElector_E8_ResignHandsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		a := mustElector(t, "r", lock, fastOpts())
		b := mustElector(t, "r", lock, fastOpts())
		mustStart(t, a)
		synctest.Wait()
		mustStart(t, b)
		defer mustStop(t, a)
		defer mustStop(t, b)
		time.Sleep(500 * time.Millisecond)
		if err := a.Resign(bg); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !b.IsLeader() || a.IsLeader() {
			t.Fatalf("a = %v, b = %v; want b to lead at once", a.IsLeader(), b.IsLeader())
		}
	})
}

func TestElector_E9_UncoordinatedFollow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t, func(o *locking.Options) { o.Disabled = true })
		fl := leadershiptest.NewFaultLock(lock)
		log, logs := observed()
		e := mustElector(t, "r", fl, fastOpts(), leadership.WithLogger(log))
		mustStart(t, e)
		defer mustStop(t, e)
		time.Sleep(time.Minute)
		synctest.Wait()
		if e.IsLeader() || e.IsCoordinated() {
			t.Fatalf("IsLeader = %v, IsCoordinated = %v; Follow must never lead", e.IsLeader(), e.IsCoordinated())
		}
		d := leadership.Describe(e)
		if d.Coordinated || d.WhenUncoordinated != leadership.Follow {
			t.Fatalf("Describe = %+v", d)
		}
		if fl.Calls(leadershiptest.OpAcquire) != 0 {
			t.Fatal("Follow must not contend")
		}
		if n := countLogs(logs, zapcore.WarnLevel, "LeadershipUncoordinated"); n != 1 {
			t.Fatalf("uncoordinated logged %d times, want once", n)
		}
		if err := e.Check(); err != nil {
			t.Fatalf("Check() = %v", err)
		}
	})
}

func TestElector_E9_UncoordinatedLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t, func(o *locking.Options) { o.Disabled = true })
		log, logs := observed()
		o := fastOpts()
		o.WhenUncoordinated = leadership.Lead
		a := mustElector(t, "r", lock, o, leadership.WithLogger(log))
		b := mustElector(t, "r", lock, o)
		mustStart(t, a)
		mustStart(t, b)
		defer mustStop(t, a)
		defer mustStop(t, b)
		time.Sleep(time.Minute)
		synctest.Wait()
		if !a.IsLeader() || !b.IsLeader() || a.Term() != 1 || a.IsCoordinated() {
			t.Fatalf("Lead: a = %v (term %d), b = %v; both lead without coordination", a.IsLeader(), a.Term(), b.IsLeader())
		}
		if d := leadership.Describe(a); d.Coordinated || d.WhenUncoordinated != leadership.Lead {
			t.Fatalf("Describe = %+v", d)
		}
		if n := countLogs(logs, zapcore.WarnLevel, "LeadershipUncoordinated"); n != 1 {
			t.Fatalf("uncoordinated logged %d times, want once", n)
		}
	})
}

func TestElector_E10_AcquirePanicSurvived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		fl.Set(leadershiptest.OpAcquire, leadershiptest.FaultPanic)
		log, logs := observed()
		e := mustElector(t, "r", fl, fastOpts(), leadership.WithLogger(log))
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		if n := countLogs(logs, zapcore.ErrorLevel, "LeadershipLoopFaulted"); n != 1 {
			t.Fatalf("LeadershipLoopFaulted logged %d times", n)
		}
		time.Sleep(2*time.Second - time.Nanosecond)
		synctest.Wait()
		if fl.Calls(leadershiptest.OpAcquire) != 1 {
			t.Fatal("retried before one RetryInterval")
		}
		fl.Clear()
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if !e.IsLeader() {
			t.Fatal("the loop did not survive the panic")
		}
	})
}

func TestElector_E10_RenewPanicSurvived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		log, logs := observed()
		e := mustElector(t, "r", fl, fastOpts(), leadership.WithLogger(log))
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		tok := e.Token()
		fl.Set(leadershiptest.OpExtend, leadershiptest.FaultPanic)
		time.Sleep(time.Second)
		synctest.Wait()
		if n := countLogs(logs, zapcore.ErrorLevel, "LeadershipLoopFaulted"); n != 1 {
			t.Fatalf("LeadershipLoopFaulted logged %d times", n)
		}
		if !e.IsLeader() {
			t.Fatal("a renewal fault must not end the term before the deadline")
		}
		// The back-off (2s) reaches past the 3s deadline: no further
		// attempt; the term expires at 3s, and the surviving loop takes
		// the expired key again at once.
		time.Sleep(2*time.Second - leadership.Describe(e).SafetyMargin - time.Nanosecond)
		synctest.Wait()
		if tok.Err() != nil || fl.Calls(leadershiptest.OpExtend) != 1 {
			t.Fatalf("before the deadline: token %v, renewals %d", tok.Err(), fl.Calls(leadershiptest.OpExtend))
		}
		fl.Clear()
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if tok.Err() == nil {
			t.Fatal("term 1 not ended at its deadline")
		}
		// The backend's lease outlives the local term by the G4 margin;
		// the refused attempt's TTL wakes the loop just after it.
		time.Sleep(leadership.Describe(e).SafetyMargin + 2*time.Millisecond)
		synctest.Wait()
		if !e.IsLeader() || e.Term() != 2 {
			t.Fatalf("IsLeader = %v, Term = %d; the loop must survive", e.IsLeader(), e.Term())
		}
		// A panicking Release during Resign is reported, not raised.
		fl.Set(leadershiptest.OpRelease, leadershiptest.FaultPanic)
		if err := e.Resign(bg); err == nil || !strings.Contains(err.Error(), "panicked") {
			t.Fatalf("Resign with a panicking release = %v", err)
		}
		fl.Clear()
	})
}

// nilLeaseLock breaks the Lock contract: no lease and no error.
type nilLeaseLock struct{}

func (nilLeaseLock) TryAcquire(context.Context, string, time.Duration) (locking.Lease, error) {
	return nil, nil
}
func (nilLeaseLock) Coordinated() bool { return true }

func TestElector_E10_ContractViolation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, logs := observed()
		e := mustElector(t, "r", nilLeaseLock{}, fastOpts(), leadership.WithLogger(log))
		mustStart(t, e)
		defer mustStop(t, e)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if e.IsLeader() {
			t.Fatal("leader without a lease")
		}
		if n := countLogs(logs, zapcore.ErrorLevel, "LeadershipLoopFaulted"); n != 3 {
			t.Fatalf("LeadershipLoopFaulted logged %d times in 5s, want 3 (0s, 2s, 4s)", n)
		}
	})
}

func TestElector_E11_StopCancelsTokenBeforeRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		rec := &recLock{Lock: lock}
		e := mustElector(t, "r", rec, fastOpts())
		var checked, ok atomic.Bool
		rec.onRel = func() {
			checked.Store(true)
			ok.Store(!e.IsLeader() && tokenDone(e))
		}
		mustStart(t, e)
		synctest.Wait()
		mustStop(t, e)
		if !checked.Load() || !ok.Load() {
			t.Fatalf("release called = %v, token done before release = %v", checked.Load(), ok.Load())
		}
	})
}

func TestElector_E11_StopBoundedByContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		e := mustElector(t, "r", fl, fastOpts())
		mustStart(t, e)
		synctest.Wait()
		fl.Set(leadershiptest.OpRelease, leadershiptest.FaultHang)
		ctx, cancel := context.WithTimeout(bg, time.Second)
		defer cancel()
		start := time.Now()
		err := e.Stop(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Fatalf("Stop = %v after %v, want the ctx deadline after 1s", err, time.Since(start))
		}
		if e.IsLeader() || !tokenDone(e) {
			t.Fatal("leading after Stop")
		}
	})
}

func TestElector_E11_StopWhileLoopStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		fl.Set(leadershiptest.OpAcquire, leadershiptest.FaultStall)
		e := mustElector(t, "r", fl, fastOpts())
		mustStart(t, e)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(bg, time.Second)
		defer cancel()
		if err := e.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Stop = %v, want the ctx deadline", err)
		}
		// The stalled acquisition completes after Stop gave up waiting: the
		// loop must not lead and must end.
		fl.Clear()
		fl.Unstall()
		synctest.Wait()
		if e.IsLeader() {
			t.Fatal("leader after Stop")
		}
		if err := e.Stop(bg); err != nil {
			t.Fatalf("second Stop = %v", err)
		}
	})
}

func TestElector_OnChange_SlowSubscriberDoesNotWedgeLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		log, logs := observed()
		e := mustElector(t, "r", fl, fastOpts(), leadership.WithLogger(log))
		gate := make(chan struct{})
		var mu sync.Mutex
		var got []leadership.Change
		var inside atomic.Int32
		e.OnChange(func(c leadership.Change) {
			if inside.Add(1) != 1 {
				t.Error("subscribers called concurrently")
			}
			defer inside.Add(-1)
			<-gate
			mu.Lock()
			got = append(got, c)
			mu.Unlock()
		})
		e.OnChange(func(leadership.Change) {
			if inside.Add(1) != 1 {
				t.Error("subscribers called concurrently")
			}
			defer inside.Add(-1)
			panic("subscriber bug")
		})
		late := subscribe(e)
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		if err := e.Resign(bg); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second) // re-acquires at 2s, renews while the subscriber blocks
		synctest.Wait()
		if !e.IsLeader() || e.Term() != 2 || fl.Calls(leadershiptest.OpExtend) < 2 {
			t.Fatalf("loop wedged by a slow subscriber: leader %v, term %d, renewals %d",
				e.IsLeader(), e.Term(), fl.Calls(leadershiptest.OpExtend))
		}
		close(gate)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		want := []leadership.Reason{leadership.Acquired, leadership.Resigned, leadership.Acquired}
		var reasons []leadership.Reason
		for i, c := range got {
			reasons = append(reasons, c.Reason)
			if c.Term != uint64(i/2+1) {
				t.Errorf("change %d term %d", i, c.Term)
			}
		}
		if !slices.Equal(reasons, want) || !slices.Equal(late.reasons(), want) {
			t.Fatalf("delivered %v and %v, want %v in order", reasons, late.reasons(), want)
		}
		if n := countLogs(logs, zapcore.ErrorLevel, "LeadershipSubscriberPanicked"); n != 3 {
			t.Fatalf("subscriber panics logged %d times, want 3", n)
		}
	})
}

func TestElector_OnChange_Unsubscribe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := mustElector(t, "r", memLock(t), fastOpts())
		var n atomic.Int32
		unsub := e.OnChange(func(leadership.Change) { n.Add(1) })
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		unsub()
		unsub() // idempotent
		if err := e.Resign(bg); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n.Load() != 1 {
			t.Fatalf("calls = %d, want 1 (unsubscribed after the first)", n.Load())
		}
		e.OnChange(nil)() // a nil subscriber is ignored
	})
}

func TestElector_WaitForLeadershipContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		fl.Set(leadershiptest.OpAcquire, leadershiptest.FaultRefuse)
		e := mustElector(t, "r", fl, fastOpts())
		mustStart(t, e)
		defer mustStop(t, e)
		ctx, cancel := context.WithTimeout(bg, 5*time.Second)
		defer cancel()
		if err := e.WaitForLeadership(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitForLeadership = %v", err)
		}
	})
}

func TestElector_SubSecondLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		fl.SetDelay(leadershiptest.OpExtend, 30*time.Millisecond)
		o := leadership.DefaultOptions()
		o.Lease, o.RenewInterval, o.RetryInterval = time.Second, 250*time.Millisecond, 100*time.Millisecond
		e := mustElector(t, "r", fl, o)
		changes := subscribe(e)
		mustStart(t, e)
		defer mustStop(t, e)
		time.Sleep(time.Minute)
		synctest.Wait()
		if !e.IsLeader() || e.Term() != 1 || len(changes.all()) != 1 {
			t.Fatalf("sub-second lease: leader %v, term %d, changes %v", e.IsLeader(), e.Term(), changes.reasons())
		}
	})
}

func TestElector_Guarantee_NeverTwoLeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		o := fastOpts()
		var electors []*leadership.Elector
		var fls []*leadershiptest.FaultLock
		for range 3 {
			fl := leadershiptest.NewFaultLock(lock)
			e := mustElector(t, "r", fl, o)
			mustStart(t, e)
			electors = append(electors, e)
			fls = append(fls, fl)
		}
		var transitions atomic.Int32
		for _, e := range electors {
			e.OnChange(func(c leadership.Change) {
				if c.IsLeader {
					transitions.Add(1)
				}
			})
		}
		stop := make(chan struct{})
		var maxLeaders atomic.Int32
		var wg sync.WaitGroup
		wg.Go(func() { // sampler
			// Every event of this test falls on a whole millisecond; sample
			// half-way between, so an overlap must last to be seen (two
			// terms that end and begin at the same fake instant do not
			// overlap in time).
			time.Sleep(500 * time.Microsecond)
			tk := time.NewTicker(time.Millisecond)
			defer tk.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tk.C:
				}
				n := int32(0)
				for _, e := range electors {
					if e.IsLeader() {
						n++
					}
				}
				if n > maxLeaders.Load() {
					maxLeaders.Store(n)
				}
			}
		})
		// Disturb the leader: resign, failing renewals, a stalled renewal.
		for round := range 30 {
			time.Sleep(1700 * time.Millisecond)
			for i, e := range electors {
				if !e.IsLeader() {
					continue
				}
				switch round % 3 {
				case 0:
					_ = e.Resign(bg)
				case 1:
					fls[i].Set(leadershiptest.OpExtend, leadershiptest.FaultError)
				case 2:
					fls[i].Set(leadershiptest.OpExtend, leadershiptest.FaultHang)
				}
			}
			time.Sleep(3 * time.Second)
			for _, fl := range fls {
				fl.Clear()
			}
		}
		close(stop)
		wg.Wait()
		for _, e := range electors {
			mustStop(t, e)
		}
		if maxLeaders.Load() > 1 {
			t.Fatalf("%d leaders at once", maxLeaders.Load())
		}
		if transitions.Load() < 20 {
			t.Fatalf("only %d acquisitions: the test did not exercise handovers", transitions.Load())
		}
	})
}

func TestElector_Leader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		a := mustElector(t, "r", lock, fastOpts(), leadership.WithIdentity("node-a"))
		b := mustElector(t, "r", lock, fastOpts(), leadership.WithIdentity("node-b"))
		if _, ok, err := b.LookupLeader(bg); ok || err != nil {
			t.Fatalf("before start: %v, %v", ok, err)
		}
		mustStart(t, a)
		synctest.Wait()
		mustStart(t, b)
		defer mustStop(t, a)
		defer mustStop(t, b)
		time.Sleep(500 * time.Millisecond)
		h, ok, err := b.LookupLeader(bg)
		if err != nil || !ok || h.Owner != "node-a" || h.TTL != 2500*time.Millisecond {
			t.Fatalf("Leader() = %+v, %v, %v; want node-a with 2.5s left", h, ok, err)
		}
		if d := leadership.Describe(a); d.Identity != "node-a" || d.LockType != "*locking.DistributedLock" {
			t.Fatalf("Describe = %+v", d)
		}
		c := mustElector(t, "r", bareLock{lock}, fastOpts())
		if _, _, err := c.LookupLeader(bg); !errors.Is(err, locking.ErrNotSupported) {
			t.Fatalf("Leader over a lock without lookup = %v", err)
		}
	})
}

func TestElector_Check_WedgedLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		e := mustElector(t, "r", fl, fastOpts())
		if err := e.Check(); err != nil {
			t.Fatalf("before Start: %v", err)
		}
		fl.Set(leadershiptest.OpAcquire, leadershiptest.FaultStall) // ignores its context
		mustStart(t, e)
		defer mustStop(t, e)
		defer fl.Unstall()
		synctest.Wait()
		// The acquire is bounded by 2s; tolerance is 2s+1s.
		time.Sleep(5 * time.Second)
		if err := e.Check(); err != nil {
			t.Fatalf("within tolerance: %v", err)
		}
		time.Sleep(time.Nanosecond)
		err := e.Check()
		if err == nil || !strings.Contains(err.Error(), `leadership: role "r": election loop made no progress`) {
			t.Fatalf("Check() = %v, want a wedged loop", err)
		}
		fl.Clear()
		fl.Unstall() // the late call fails on its expired context; the next one succeeds
		synctest.Wait()
		if err := e.Check(); err != nil {
			t.Fatalf("after unstall: %v", err)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if err := e.Check(); err != nil || !e.IsLeader() {
			t.Fatalf("after unstall: %v, leader %v", err, e.IsLeader())
		}
		mustStop(t, e)
		if err := e.Check(); err != nil {
			t.Fatalf("after Stop: %v", err)
		}
	})
}

func TestElector_IsLeaderTokenZeroAllocs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := mustElector(t, "r", memLock(t), fastOpts())
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		n := testing.AllocsPerRun(100, func() {
			_ = e.IsLeader()
			_ = e.Token()
			_ = e.Term()
		})
		if n != 0 {
			t.Fatalf("IsLeader+Token+Term allocate %v times", n)
		}
	})
}

// lateReplyLock's leases extend at the backend at once but report success
// only after replyAfter, ignoring the call's context, when slow is set.
type lateReplyLock struct {
	locking.Lock
	slow       atomic.Bool
	replyAfter time.Duration
}

func (l *lateReplyLock) TryAcquire(ctx context.Context, key string, d time.Duration) (locking.Lease, error) {
	ls, err := l.Lock.TryAcquire(ctx, key, d)
	if ls == nil {
		return nil, err
	}
	return &lateReplyLease{Lease: ls, l: l}, err
}

type lateReplyLease struct {
	locking.Lease
	l *lateReplyLock
}

func (s *lateReplyLease) Extend(ctx context.Context, d time.Duration) error {
	if !s.l.slow.Load() {
		return s.Lease.Extend(ctx, d)
	}
	err := s.Lease.Extend(context.Background(), d)
	time.Sleep(s.l.replyAfter)
	return err
}

func TestElector_E5_LateExtensionGivenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		ll := &lateReplyLock{Lock: lock, replyAfter: 2500 * time.Millisecond}
		e := mustElector(t, "r", ll, fastOpts())
		changes := subscribe(e)
		start := time.Now()
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		ll.slow.Store(true)
		// The renewal at 1s extends the backend lease to 4s but replies at
		// 3.5s; the term ends at its 3s deadline meanwhile.
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if e.IsLeader() {
			t.Fatal("leading past the deadline")
		}
		ll.slow.Store(false)
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		// At 3.5s the late extension is given back, so the key is free
		// before the backend's expiry at 4s and the candidate takes it.
		if !e.IsLeader() || e.Term() != 2 {
			t.Fatalf("leader %v term %d at %v; want term 2 at 3.5s", e.IsLeader(), e.Term(), time.Since(start))
		}
		if got := changes.reasons(); !slices.Equal(got, []leadership.Reason{leadership.Acquired, leadership.Expired, leadership.Acquired}) {
			t.Fatalf("reasons = %v", got)
		}
	})
}

// slowAcquireLock makes its next acquisitions wait for gate (or a fixed
// delay), ignoring the caller's context, then acquire on a fresh context.
type slowAcquireLock struct {
	locking.Lock
	mu    sync.Mutex
	gate  chan struct{} // when non-nil, acquisitions wait for it
	delay time.Duration // when > 0, the next acquisition waits this long
}

func (l *slowAcquireLock) TryAcquire(ctx context.Context, key string, d time.Duration) (locking.Lease, error) {
	l.mu.Lock()
	gate, delay := l.gate, l.delay
	l.delay = 0
	l.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	return l.Lock.TryAcquire(context.Background(), key, d)
}

func TestElector_E8_AcquiredWhileStoppingIsReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		sl := &slowAcquireLock{Lock: lock, gate: make(chan struct{})}
		e := mustElector(t, "r", sl, fastOpts())
		mustStart(t, e)
		synctest.Wait() // the first attempt waits on the gate
		stopped := make(chan error, 1)
		go func() { stopped <- e.Stop(bg) }()
		synctest.Wait()
		close(sl.gate) // the attempt now succeeds at the backend
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		if e.Term() != 0 || e.IsLeader() {
			t.Fatalf("led while stopping: term %d", e.Term())
		}
		if _, ok, _ := lock.Holder(bg, "leader:r"); ok {
			t.Fatal("the lease acquired while stopping was not released")
		}
	})
}

func TestElector_E5_AcquiredTooLateIsGivenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		// The first reply arrives 4s after the request, past its 3s lease.
		sl := &slowAcquireLock{Lock: lock, delay: 4 * time.Second}
		log, logs := observed()
		e := mustElector(t, "r", sl, fastOpts(), leadership.WithLogger(log))
		start := time.Now()
		mustStart(t, e)
		defer mustStop(t, e)
		time.Sleep(4 * time.Second)
		synctest.Wait()
		if n := countLogs(logs, zapcore.WarnLevel, "LeadershipAcquiredTooLate"); n != 1 {
			t.Fatalf("LeadershipAcquiredTooLate logged %d times", n)
		}
		// The late lease went back, so the next attempt, at once, wins.
		if !e.IsLeader() || e.Term() != 1 || time.Since(start) != 4*time.Second {
			t.Fatalf("leader %v term %d at %v", e.IsLeader(), e.Term(), time.Since(start))
		}
	})
}

// plainRefusal refuses without a *locking.HeldError.
type plainRefusal struct{ locking.Lock }

func (plainRefusal) TryAcquire(context.Context, string, time.Duration) (locking.Lease, error) {
	return nil, fmt.Errorf("custom backend: %w", locking.ErrNotAcquired)
}

// panicWatch is a lock whose Subscribe panics; it counts the attempts.
type panicWatch struct {
	locking.Lock
	calls *atomic.Int32
}

func (p panicWatch) Subscribe(string, func(locking.Event)) (func(), error) {
	p.calls.Add(1)
	panic("subscribe bug")
}

func TestElector_E1_PlainRefusalAndBrokenWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, logs := observed()
		var calls atomic.Int32
		e := mustElector(t, "r", panicWatch{plainRefusal{memLock(t)}, &calls}, fastOpts(), leadership.WithLogger(log))
		mustStart(t, e)
		defer mustStop(t, e)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := countLogs(logs, zapcore.DebugLevel, "LeadershipAcquireRefused"); n != 3 {
			t.Fatalf("refusals in 5s = %d, want 3 (0s, 2s, 4s)", n)
		}
		if n := countLogs(logs, zapcore.ErrorLevel, "LeadershipLoopFaulted"); n != 1 {
			t.Fatalf("a panicking Subscribe must be logged once as a fault, got %d", n)
		}
		// L9 bad input: the subscription is tried again every
		// RetryInterval (0s, 2s, 4s), the retries logged at Debug.
		if n := calls.Load(); n != 3 {
			t.Fatalf("Subscribe attempts in 5s = %d, want 3 (0s, 2s, 4s)", n)
		}
		if n := countLogs(logs, zapcore.DebugLevel, "LeadershipSubscribeRetry"); n != 2 {
			t.Fatalf("subscription retries logged = %d, want 2", n)
		}
	})
}

func TestElector_E6_HangingRenewalRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := leadershiptest.NewFaultLock(memLock(t))
		rec := &recLock{Lock: fl}
		e := mustElector(t, "r", rec, fastOpts())
		changes := subscribe(e)
		start := time.Now()
		mustStart(t, e)
		defer mustStop(t, e)
		synctest.Wait()
		// The renewal at 1s hangs; it gives up at half the remaining lease
		// (2s), and the retry at 2.5s reaches a healthy provider.
		fl.Set(leadershiptest.OpExtend, leadershiptest.FaultHang)
		time.Sleep(2200 * time.Millisecond)
		fl.Clear()
		time.Sleep(time.Second)
		synctest.Wait()
		if !e.IsLeader() || e.Term() != 1 {
			t.Fatalf("leader %v term %d: a hanging renewal must not cost the term", e.IsLeader(), e.Term())
		}
		var at []time.Duration
		for _, tm := range rec.extendTimes() {
			at = append(at, tm.Sub(start))
		}
		deadline := 3*time.Second - leadership.Describe(e).SafetyMargin
		gaveUp := time.Second + (deadline-time.Second)/2
		if want := []time.Duration{time.Second, gaveUp + (deadline-gaveUp)/2}; !slices.Equal(at[:2], want) {
			t.Fatalf("renewal attempts at %v, want %v first", at, want)
		}
		if got := changes.reasons(); !slices.Equal(got, []leadership.Reason{leadership.Acquired}) {
			t.Fatalf("reasons = %v", got)
		}
	})
}

// queuedLock holds every acquisition until its caller's context ends and
// fails it as notSent says: with locking.ErrNotSent (the client's queue
// held it), or as a server that did not answer. It records when each
// attempt began.
type queuedLock struct {
	locking.Lock
	mu      sync.Mutex
	notSent bool
	starts  []time.Time
}

func (l *queuedLock) TryAcquire(ctx context.Context, key string, d time.Duration) (locking.Lease, error) {
	l.mu.Lock()
	l.starts = append(l.starts, time.Now())
	notSent := l.notSent
	l.mu.Unlock()
	<-ctx.Done()
	if notSent {
		return nil, fmt.Errorf("queued: %w: %w", ctx.Err(), locking.ErrNotSent)
	}
	return nil, fmt.Errorf("no reply: %w", ctx.Err())
}

func (l *queuedLock) offsets(start time.Time) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Duration
	for _, s := range l.starts {
		out = append(out, s.Sub(start))
	}
	return out
}

// E1, E7: an attempt a server did not answer is followed at once (its
// RetryInterval was spent waiting), but one the lock never sent, because
// its client's queue held it past its bound, backs off: one RetryInterval,
// doubling with each one in a row, up to a Lease, so a saturated process
// does not keep its queue full with its own retries. An attempt that
// reaches the server ends the streak.
func TestElector_E1_E7_AttemptsNeverSentBackOff(t *testing.T) {
	s := time.Second
	o := fastOpts()
	o.Lease, o.RenewInterval = 10*s, 3*s // RetryInterval 2s: each attempt waits its 2s bound
	t.Run("unanswered", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ql := &queuedLock{Lock: memLock(t)}
			e := mustElector(t, "r", ql, o)
			start := time.Now()
			mustStart(t, e)
			time.Sleep(9 * s)
			synctest.Wait()
			if got, want := ql.offsets(start), []time.Duration{0, 2 * s, 4 * s, 6 * s, 8 * s}; !slices.Equal(got, want) {
				t.Errorf("attempts began at %v; want %v", got, want)
			}
			mustStop(t, e)
		})
	})
	t.Run("not sent", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ql := &queuedLock{Lock: memLock(t), notSent: true}
			e := mustElector(t, "r", ql, o)
			start := time.Now()
			mustStart(t, e)
			set := func(at time.Duration, notSent bool) {
				time.Sleep(time.Until(start.Add(at)))
				ql.mu.Lock()
				ql.notSent = notSent
				ql.mu.Unlock()
			}
			// Unsent at 0, 4, 10 and 20 s (waits of 2, 4 and 8 s after
			// each 2s bound), then 10 s (the Lease) after the one at 20.
			set(21*s, false)
			// 32: unanswered, so 34 at once; 34 unanswered too.
			set(35*s, true)
			// 36 is unsent again: the streak began anew, so 2s after its
			// bound.
			time.Sleep(time.Until(start.Add(41 * s)))
			synctest.Wait()
			want := []time.Duration{0, 4 * s, 10 * s, 20 * s, 32 * s, 34 * s, 36 * s, 40 * s}
			if got := ql.offsets(start); !slices.Equal(got, want) {
				t.Errorf("attempts began at %v; want %v", got, want)
			}
			mustStop(t, e)
		})
	})
}
