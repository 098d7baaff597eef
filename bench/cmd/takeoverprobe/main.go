// Command takeoverprobe measures HostLoom's takeover after a crash the way
// a crash happens in production: the leader runs in a process of its own,
// which gets SIGKILL, so nothing of it stays behind in the measuring
// process. It complements hlbench's crash failover, which keeps both
// replicas in one process (to compare with client-go side by side) and
// stops the leader by failing its lock calls.
//
// Each round starts a leader process (this binary with the hidden first
// argument leaderCmd), waits until it leads, starts a candidate elector in
// this process, waits a random pause, kills the leader and reads the key's
// expiry from Redis with PEXPIRETIME. Redis frees a key once its clock's
// millisecond passes that expiry, so the takeover is measured from the
// next millisecond: to the candidate's term (Change.At, the lease taken)
// and to its OnChange callback. Before the rounds it measures how late
// this machine's Go timers fire (time.AfterFunc after 50–350 ms), the
// floor under any wake at a learned expiry.
//
//	cd bench && go run ./cmd/takeoverprobe -n 100
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/bench/internal/redisproc"
	"github.com/hostloom/hostloom/bench/internal/stats"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	hlredis "github.com/hostloom/hostloom/core/locking/redislock"
)

// leaderCmd is the hidden first argument that makes this binary a leader
// process: it contends for one role and writes "led" on stdout once it
// leads, then runs until killed.
const leaderCmd = "__takeover-leader"

// role is the one role every round contends for.
const role = "takeover-probe"

// logSlower is -log-slower.
var logSlower time.Duration

func main() {
	if len(os.Args) > 1 && os.Args[1] == leaderCmd {
		fmt.Fprintln(os.Stderr, "takeoverprobe leader:", runLeader(os.Args[2:]))
		os.Exit(1)
	}
	n := flag.Int("n", 100, "rounds (killed leaders)")
	timers := flag.Int("timers", 100, "timer-lateness samples taken before the rounds")
	server := flag.String("redis-server", "", "redis-server binary (default: HOSTLOOM_REDIS_SERVER, redis-server, valkey-server)")
	lease := flag.Duration("lease", time.Second, "Options.Lease")
	renew := flag.Duration("renew", 250*time.Millisecond, "Options.RenewInterval")
	retry := flag.Duration("retry", 250*time.Millisecond, "Options.RetryInterval")
	flag.DurationVar(&logSlower, "log-slower", 0, "print the candidate's debug log (times to the microsecond) of each round whose callback came later than this after the key was free (0: never)")
	flag.Parse()
	if *n < 1 {
		fmt.Fprintf(os.Stderr, "takeoverprobe: -n %d: the rounds must be at least 1\n", *n)
		os.Exit(2)
	}
	if *timers < 0 {
		fmt.Fprintf(os.Stderr, "takeoverprobe: -timers %d: the samples must not be negative\n", *timers)
		os.Exit(2)
	}
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval = *lease, *renew, *retry
	if err := o.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "takeoverprobe:", err)
		os.Exit(2)
	}
	if err := run(*server, *n, *timers, o); err != nil {
		fmt.Fprintln(os.Stderr, "takeoverprobe: FAILED:", err)
		os.Exit(1)
	}
}

func run(server string, n, timers int, o leadership.Options) error {
	srv, err := redisproc.Start(server)
	if err != nil {
		return err
	}
	defer srv.Stop()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	p := hlredis.New(c)
	defer p.Close()
	lock, err := locking.New(p, locking.DefaultOptions())
	if err != nil {
		return err
	}
	fmt.Printf("takeoverprobe: %d rounds at %v/%v/%v, redis-server on %s\n", n, o.Lease, o.RenewInterval, o.RetryInterval, srv.Addr())
	if timers > 0 {
		fmt.Println(line("Go timer lateness (AfterFunc, 50–350 ms)", timerLateness(timers)))
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var took, cb []time.Duration
	for i := range n {
		t, cbd, err := round(self, srv.Addr(), c, lock, o, i)
		if err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		took, cb = append(took, t), append(cb, cbd)
	}
	fmt.Println(line("takeover to the lease taken (Change.At)", took))
	fmt.Println(line("takeover to the OnChange callback", cb))
	return nil
}

// round kills one leader process and measures the candidate's takeover
// from the moment Redis frees the key.
func round(self, addr string, admin *redis.Client, lock *locking.DistributedLock, o leadership.Options, i int) (took, cb time.Duration, err error) {
	cmd := exec.Command(self, leaderCmd, "-addr", addr, "-id", fmt.Sprintf("leader-%d", i),
		"-lease", o.Lease.String(), "-renew", o.RenewInterval.String(), "-retry", o.RetryInterval.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	led := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() && sc.Text() == "led" {
			led <- nil
			return
		}
		led <- errors.New("the leader process exited before it led")
	}()
	select {
	case err := <-led:
		if err != nil {
			return 0, 0, err
		}
	case <-time.After(3*o.Lease + 5*time.Second):
		return 0, 0, errors.New("the leader process did not lead in time")
	}

	type taken struct{ at, cb time.Time }
	won := make(chan taken, 1)
	logger, logs := zap.NewNop(), (*observer.ObservedLogs)(nil)
	if logSlower > 0 {
		var core zapcore.Core
		core, logs = observer.New(zap.DebugLevel)
		logger = zap.New(core)
	}
	e, err := leadership.NewElector(role, lock, o, leadership.WithIdentity(fmt.Sprintf("candidate-%d", i)), leadership.WithLogger(logger))
	if err != nil {
		return 0, 0, err
	}
	e.OnChange(func(ch leadership.Change) {
		if ch.IsLeader {
			won <- taken{at: ch.At, cb: time.Now()}
		}
	})
	if err := e.Start(context.Background()); err != nil {
		return 0, 0, err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if serr := e.Stop(ctx); serr != nil && err == nil {
			err = serr
		}
	}()
	time.Sleep(300*time.Millisecond + rand.N(1500*time.Millisecond))

	key, err := lock.ProviderKey(e.LockKey())
	if err != nil {
		return 0, 0, err
	}
	killed = true
	if err := cmd.Process.Kill(); err != nil {
		return 0, 0, err
	}
	_ = cmd.Wait()
	at, err := admin.PExpireTime(context.Background(), key).Result()
	if err != nil {
		return 0, 0, err
	}
	if at < 0 {
		return 0, 0, fmt.Errorf("key %q has no expiry after the kill (%v)", key, at)
	}
	free := time.UnixMilli(at.Milliseconds() + 1)
	select {
	case t := <-won:
		if !e.IsLeader() {
			return 0, 0, errors.New("the candidate's callback came but it does not lead")
		}
		if logSlower > 0 && t.cb.Sub(free) > logSlower {
			fmt.Printf("round %d: callback %v after the key was free (free %s, callback %s); the candidate's log:\n%s\n",
				i, t.cb.Sub(free), free.Format("15:04:05.000000"), t.cb.Format("15:04:05.000000"), formatLogs(logs))
		}
		return t.at.Sub(free), t.cb.Sub(free), nil
	case <-time.After(3*o.Lease + 5*time.Second):
		return 0, 0, errors.New("the candidate did not take over in time")
	}
}

// runLeader is the leader process: one elector, "led" on stdout once it
// leads, then it runs until killed. It returns only the error that kept
// it from running.
func runLeader(args []string) error {
	fs := flag.NewFlagSet(leaderCmd, flag.ContinueOnError)
	addr := fs.String("addr", "", "redis-server address")
	id := fs.String("id", "", "identity")
	lease := fs.Duration("lease", time.Second, "Options.Lease")
	renew := fs.Duration("renew", 250*time.Millisecond, "Options.RenewInterval")
	retry := fs.Duration("retry", 250*time.Millisecond, "Options.RetryInterval")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: *addr})
	lock, err := locking.New(hlredis.New(c), locking.DefaultOptions())
	if err != nil {
		return err
	}
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval = *lease, *renew, *retry
	e, err := leadership.NewElector(role, lock, o, leadership.WithIdentity(*id))
	if err != nil {
		return err
	}
	once := make(chan struct{})
	e.OnChange(func(ch leadership.Change) {
		if ch.IsLeader {
			select {
			case <-once:
			default:
				close(once)
				fmt.Println("led")
			}
		}
	})
	if err := e.Start(context.Background()); err != nil {
		return err
	}
	select {}
}

// formatLogs is one line per entry logs holds: its time to the
// microsecond, level, message and fields.
func formatLogs(logs *observer.ObservedLogs) string {
	var b strings.Builder
	for _, e := range logs.All() {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%v\n", e.Time.Format("15:04:05.000000"), e.Level.CapitalString(), e.Message, e.ContextMap())
	}
	return b.String()
}

// timerLateness measures how late time.AfterFunc fires after a random
// 50–350 ms, n times.
func timerLateness(n int) []time.Duration {
	out := make([]time.Duration, 0, n)
	for range n {
		d := 50*time.Millisecond + rand.N(300*time.Millisecond)
		fired := make(chan time.Time, 1)
		due := time.Now().Add(d)
		time.AfterFunc(d, func() { fired <- time.Now() })
		out = append(out, (<-fired).Sub(due))
	}
	return out
}

// line formats a sample's size, median, p90, p99 and maximum (nearest
// rank).
func line(what string, ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration { return stats.Quantile(s, p) }
	r := func(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }
	return fmt.Sprintf("%s: n %d, p50 %s, p90 %s, p99 %s, max %s", what, len(s), r(q(0.5)), r(q(0.9)), r(q(0.99)), r(s[len(s)-1]))
}
