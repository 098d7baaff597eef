// Command pglock compares HostLoom's PostgreSQL provider (pglock) with its
// Redis provider (redislock), side by side in one run, on private servers
// it starts on 127.0.0.1 (core/testing/pgtest, core/testing/redistest):
//
//   - acquire + release of an uncontended key: p50/p99 latency;
//   - graceful handover between two electors (the leader stops): from the
//     start of Stop to the successor's leadership, p50/p99;
//   - takeover after expiry (the leader freezes: every lock call hangs):
//     from the lease's end at the server (now + the holder's TTL read at the
//     freeze) to the successor's leadership, p50/p99;
//   - steady load: 100 and 1000 roles × 3 replicas (-steady-roles) at the
//     default timings (15s lease, 5s renew, 2s retry), once every role is
//     led, over a window of -steady (default 30s):
//   - requests per role per second at the server: PostgreSQL transactions
//     committed (pg_stat_database xact_commit: every statement of the
//     provider is one), Redis commands processed (INFO stats), each minus
//     the harness's own reads. The PostgreSQL counter is flushed by the
//     server at most once a second and counts every transaction of the
//     database (autovacuum's too): measure over tens of seconds, not the
//     -short window;
//   - the server's CPU, in CPU milliseconds per second of the window per
//     1000 roles: for PostgreSQL utime+stime of the whole server (the
//     postmaster, its live children, and the children it reaped during the
//     window: its cutime+cstime) from /proc/<pid>/stat, so background
//     processes (checkpointer, WAL writer, autovacuum) count too; for Redis
//     used_cpu_user+used_cpu_sys (INFO cpu). /proc counts in ticks of 10ms:
//     a short window of few roles reads 0 or one tick. Without /proc (not
//     Linux) the PostgreSQL figure is "n/a".
//
// It is a module of its own (bench/pglock), so neither the library nor the
// main benchmark module (bench/) gains a database driver. Client and servers
// share the machine: compare the two columns of one run, not runs of
// different machines.
//
//	cd bench/pglock && go run . [-short] [-n 50] [-ops 2000] [-steady 30s] [-steady-roles 100,1000] [-out FILE]
//
// -short runs every measure a few times, the steady load at 5 and 10 roles
// unless -steady-roles is given, to check the harness (CI). It exits
// non-zero when the harness fails (a server does not start, a leader never
// appears).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/testing/pgtest"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// breakdown is -breakdown; resetStats clears pg_stat_statements and
// printStats writes its calls per role per second to stderr.
var (
	breakdown  bool
	printStats func(roles int, elapsed float64) error
	resetStats func() (any, error)
)

func main() {
	short := flag.Bool("short", false, "run every measure a few times, to check the harness")
	rounds := flag.Int("n", 50, "handovers and takeovers per backend")
	steadyFor := flag.Duration("steady", 30*time.Second, "how long the steady load is measured")
	ops := flag.Int("ops", 2000, "acquire+release pairs per backend")
	steadyRoles := flag.String("steady-roles", "100,1000", "comma-separated role counts of the steady load (5,10 with -short)")
	out := flag.String("out", "", "write the results to FILE (default: stdout)")
	flag.BoolVar(&breakdown, "breakdown", false, "load pg_stat_statements and print, after each steady load over PostgreSQL, the statements per role per second by statement")
	flag.Parse()
	rolesSet := false
	flag.Visit(func(f *flag.Flag) { rolesSet = rolesSet || f.Name == "steady-roles" })
	if *short {
		*rounds, *ops, *steadyFor = 3, 50, 2*time.Second
		settle = 0
		if !rolesSet {
			*steadyRoles = "5,10"
		}
	}
	var roles []int
	for _, f := range strings.Split(*steadyRoles, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "pglock bench: -steady-roles %q: %q is not a positive count\n", *steadyRoles, f)
			os.Exit(2)
		}
		roles = append(roles, n)
	}
	if err := run(*rounds, *ops, roles, *steadyFor, *out); err != nil {
		fmt.Fprintln(os.Stderr, "pglock bench:", err)
		os.Exit(1)
	}
}

// backend makes the locks of one provider: each call is one simulated
// process (its own provider; for PostgreSQL over a shared pool).
type backend struct {
	name    string
	newLock func() (*locking.DistributedLock, func(), error)
}

func run(rounds, ops int, roles []int, steadyFor time.Duration, out string) error {
	pg, err := pgtest.Start()
	if err != nil {
		return err
	}
	defer pg.Stop()
	if breakdown {
		if err := pg.Exec("postgres", "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"); err != nil {
			return err
		}
		if err := pg.Restart(); err != nil {
			return err
		}
		if err := pg.Exec("postgres", "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
			return err
		}
	}
	rs, err := redistest.Launch(redistest.Options{})
	if err != nil {
		return err
	}
	defer rs.Stop()

	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pg.ConnString("postgres"))
	if err != nil {
		return err
	}
	defer pool.Close()
	resetStats = func() (any, error) {
		return pool.Exec(ctx, "SELECT pg_stat_statements_reset()", pgx.QueryExecModeSimpleProtocol)
	}
	printStats = func(n int, elapsed float64) error {
		rows, err := pool.Query(ctx, "SELECT calls, left(regexp_replace(query, '\\s+', ' ', 'g'), 160) FROM pg_stat_statements ORDER BY calls DESC LIMIT 12", pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var calls int64
			var q string
			if err := rows.Scan(&calls, &q); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "  %7.3f /role/s  %6d calls  %s\n", float64(calls)/float64(n)/elapsed, calls, q)
		}
		return rows.Err()
	}
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rc.Close()

	lockOpts := locking.DefaultOptions()
	lockOpts.Namespace = "bench"
	backends := []backend{
		{"redislock", func() (*locking.DistributedLock, func(), error) {
			l, err := redislock.NewLock(rc, lockOpts)
			if err != nil {
				return nil, nil, err
			}
			return l, func() { _ = l.Close() }, nil
		}},
		{"pglock", func() (*locking.DistributedLock, func(), error) {
			l, err := pglock.NewLock(pool, pglock.Options{}, lockOpts)
			if err != nil {
				return nil, nil, err
			}
			return l, func() { _ = l.Close() }, nil
		}},
	}

	var w io.Writer = os.Stdout
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	var version string
	if err := pool.QueryRow(ctx, "SHOW server_version", pgx.QueryExecModeSimpleProtocol).Scan(&version); err != nil {
		return err
	}
	info, _ := rc.InfoMap(ctx, "server").Result()
	fmt.Fprintf(w, "# pglock vs redislock\n\nPostgreSQL %s, Redis %s, %d acquire+release pairs, %d handovers and %d takeovers per backend, lease 1s / renew 250ms / retry 250ms.\n\n",
		version, info["Server"]["redis_version"], ops, rounds, rounds)
	fmt.Fprintln(w, "| measure | backend | p50 | p99 |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, m := range []struct {
		name string
		fn   func(backend, int) ([]time.Duration, error)
		n    int
	}{
		{"acquire + release", acquireRelease, ops},
		{"graceful handover", handover, rounds},
		{"takeover after expiry", takeover, rounds},
	} {
		for _, b := range backends {
			d, err := m.fn(b, m.n)
			if err != nil {
				return fmt.Errorf("%s over %s: %w", m.name, b.name, err)
			}
			fmt.Fprintf(w, "| %s | %s | %v | %v |\n", m.name, b.name, pct(d, 50), pct(d, 99))
		}
	}
	counters := map[string]func() (int64, error){
		"redislock": func() (int64, error) {
			m, err := rc.InfoMap(ctx, "stats").Result()
			if err != nil {
				return 0, err
			}
			return strconv.ParseInt(m["Stats"]["total_commands_processed"], 10, 64)
		},
		"pglock": func() (int64, error) {
			var n int64
			err := pool.QueryRow(ctx, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()", pgx.QueryExecModeSimpleProtocol).Scan(&n)
			return n, err
		},
	}
	var pgPID int
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()", pgx.QueryExecModeSimpleProtocol).Scan(&pgPID); err != nil {
		return err
	}
	pgPID, pgPIDErr := parentPID(pgPID) // a backend's parent is the postmaster
	cpus := map[string]func() (time.Duration, error){
		"redislock": func() (time.Duration, error) {
			m, err := rc.InfoMap(ctx, "cpu").Result()
			if err != nil {
				return 0, err
			}
			var sum float64
			for _, k := range []string{"used_cpu_user", "used_cpu_sys"} {
				v, err := strconv.ParseFloat(m["CPU"][k], 64)
				if err != nil {
					return 0, fmt.Errorf("INFO cpu %s: %w", k, err)
				}
				sum += v
			}
			return time.Duration(sum * float64(time.Second)), nil
		},
		"pglock": func() (time.Duration, error) {
			if pgPIDErr != nil {
				return 0, pgPIDErr
			}
			return treeCPU(pgPID)
		},
	}
	fmt.Fprintf(w, "\n| steady load, 3 replicas, %v | backend | requests per role per second | CPU ms per second per 1000 roles |\n|---|---|---|---|\n", steadyFor)
	for _, n := range roles {
		for _, b := range backends {
			rate, cpu, err := steady(b, n, steadyFor, counters[b.name], cpus[b.name])
			if err != nil {
				return fmt.Errorf("steady load of %d roles over %s: %w", n, b.name, err)
			}
			c := "n/a"
			if cpu >= 0 {
				c = fmt.Sprintf("%.1f", cpu)
			}
			fmt.Fprintf(w, "| %d roles | %s | %.3f | %s |\n", n, b.name, rate, c)
		}
	}
	return nil
}

// clockTick is the unit of the times in /proc/<pid>/stat (USER_HZ, 100 on
// every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// procStat reads /proc/<pid>/stat: the parent's pid and the CPU times in
// ticks (utime, stime, cutime, cstime).
func procStat(pid int) (ppid int, ticks [4]int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, ticks, err
	}
	// The command name, in parentheses, may hold spaces: the fields start
	// after the last ')' (state, ppid, ..., utime is the 12th).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, ticks, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0, ticks, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	if ppid, err = strconv.Atoi(f[1]); err != nil {
		return 0, ticks, fmt.Errorf("/proc/%d/stat: ppid %q", pid, f[1])
	}
	for k := range ticks {
		if ticks[k], err = strconv.ParseInt(f[11+k], 10, 64); err != nil {
			return 0, ticks, fmt.Errorf("/proc/%d/stat: field %d %q", pid, 14+k, f[11+k])
		}
	}
	return ppid, ticks, nil
}

func parentPID(pid int) (int, error) {
	ppid, _, err := procStat(pid)
	return ppid, err
}

// treeCPU is the CPU time of process root and its children, live or
// reaped: root's utime+stime+cutime+cstime plus each live child's
// utime+stime (a child that exits between two reads moves from the second
// sum into the first).
func treeCPU(root int) (time.Duration, error) {
	_, t, err := procStat(root)
	if err != nil {
		return 0, err
	}
	sum := t[0] + t[1] + t[2] + t[3]
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process
		}
		ppid, t, err := procStat(pid)
		if err != nil || ppid != root {
			continue // gone since the listing, or not a child
		}
		sum += t[0] + t[1]
	}
	return time.Duration(sum) * clockTick, nil
}

// steady runs roles × 3 electors at the default timings until every role
// is led, then counts the server's requests over d with count (a
// cumulative counter read twice; each read is one request of its own,
// subtracted) and its CPU time with cpu (cumulative too), and returns
// requests per role per second and CPU milliseconds per second per 1000
// roles (-1 when cpu cannot be read).
func steady(b backend, roles int, d time.Duration, count func() (int64, error), cpu func() (time.Duration, error)) (rate, cpuRate float64, err error) {
	var electors []*elector
	var closers []func()
	defer func() { // electors first, then their locks
		for _, el := range electors {
			el.stop()
		}
		for _, c := range closers {
			c()
		}
	}()
	// One lock (one provider: one LISTEN connection, one subscription
	// connection) per replica process, shared by its electors.
	var locks []*locking.DistributedLock
	for range 3 {
		l, done, err := b.newLock()
		if err != nil {
			return 0, 0, err
		}
		closers = append(closers, done)
		locks = append(locks, l)
	}
	for r := range roles {
		for i, l := range locks {
			e, err := leadership.NewElector(fmt.Sprintf("steady%d-%d", roles, r), l, leadership.DefaultOptions(), leadership.WithIdentity(fmt.Sprintf("replica-%d", i)))
			if err != nil {
				return 0, 0, err
			}
			if err := e.Start(context.Background()); err != nil {
				return 0, 0, err
			}
			electors = append(electors, &elector{e: e, fault: leadershiptest.NewFaultLock(l), done: func() {}})
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		led := 0
		for _, el := range electors {
			if el.e.IsLeader() {
				led++
			}
		}
		if led == roles {
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("%d of %d roles led after a minute", led, roles)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// PostgreSQL's backends publish their counters at most once a second
	// while busy and within 10s of going idle: the acquisitions that made
	// every role led would otherwise land inside the window.
	time.Sleep(settle)
	cpuBefore, cpuErr := cpu()
	before, err := count()
	if err != nil {
		return 0, 0, err
	}
	if breakdown && b.name == "pglock" {
		if _, err := resetStats(); err != nil {
			return 0, 0, err
		}
	}
	began := time.Now()
	time.Sleep(d)
	after, err := count()
	if err != nil {
		return 0, 0, err
	}
	elapsed := time.Since(began).Seconds()
	if breakdown && b.name == "pglock" {
		if err := printStats(roles, elapsed); err != nil {
			return 0, 0, err
		}
	}
	cpuRate = -1
	if cpuAfter, err := cpu(); err == nil && cpuErr == nil {
		cpuRate = float64(cpuAfter-cpuBefore) / float64(time.Millisecond) / elapsed / float64(roles) * 1000
	}
	return float64(after-before-1) / float64(roles) / elapsed, cpuRate, nil
}

// settle is how long the steady load runs before its window opens: longer
// than PostgreSQL's 10s at most before an idle backend publishes its
// counters (PGSTAT_IDLE_INTERVAL).
var settle = 11 * time.Second

// pct is the p-th percentile of ds (nearest rank).
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)].Round(10 * time.Microsecond)
}

func acquireRelease(b backend, n int) ([]time.Duration, error) {
	l, done, err := b.newLock()
	if err != nil {
		return nil, err
	}
	defer done()
	ctx := context.Background()
	ds := make([]time.Duration, 0, n)
	for range n {
		began := time.Now()
		ls, err := l.TryAcquire(ctx, "rt", time.Minute)
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

// fast are the timings of the handover and takeover rounds.
func fast() leadership.Options {
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval = time.Second, 250*time.Millisecond, 250*time.Millisecond
	return o
}

// elector is one simulated process's elector for role, with the moment
// it last became leader.
type elector struct {
	e      *leadership.Elector
	fault  *leadershiptest.FaultLock
	done   func()
	leadAt chan time.Time
}

func newElector(b backend, role, id string) (*elector, error) {
	l, done, err := b.newLock()
	if err != nil {
		return nil, err
	}
	f := leadershiptest.NewFaultLock(l)
	e, err := leadership.NewElector(role, f, fast(), leadership.WithIdentity(id))
	if err != nil {
		done()
		return nil, err
	}
	el := &elector{e: e, fault: f, done: done, leadAt: make(chan time.Time, 8)}
	e.OnChange(func(c leadership.Change) {
		if c.IsLeader {
			el.leadAt <- time.Now()
		}
	})
	if err := e.Start(context.Background()); err != nil {
		done()
		return nil, err
	}
	return el, nil
}

func (el *elector) stop() {
	el.fault.Clear()
	_ = el.e.Stop(context.Background())
	el.done()
}

// leads waits for el's next leadership.
func (el *elector) leads() (time.Time, error) {
	select {
	case at := <-el.leadAt:
		return at, nil
	case <-time.After(30 * time.Second):
		return time.Time{}, errors.New("no leader within 30s")
	}
}

// pair starts two electors for a fresh role and returns them leader
// first.
func pair(b backend, round int) (leader, follower *elector, err error) {
	role := fmt.Sprintf("r%d", round)
	a, err := newElector(b, role, "a")
	if err != nil {
		return nil, nil, err
	}
	if _, err := a.leads(); err != nil {
		a.stop()
		return nil, nil, err
	}
	f, err := newElector(b, role, "b")
	if err != nil {
		a.stop()
		return nil, nil, err
	}
	time.Sleep(50 * time.Millisecond) // b has tried once and waits
	return a, f, nil
}

func handover(b backend, n int) ([]time.Duration, error) {
	var ds []time.Duration
	for i := range n {
		leader, follower, err := pair(b, i)
		if err != nil {
			return nil, err
		}
		began := time.Now()
		leader.stop()
		at, err := follower.leads()
		follower.stop()
		if err != nil {
			return nil, err
		}
		ds = append(ds, at.Sub(began))
	}
	return ds, nil
}

func takeover(b backend, n int) ([]time.Duration, error) {
	var ds []time.Duration
	for i := range n {
		leader, follower, err := pair(b, 1000+i)
		if err != nil {
			return nil, err
		}
		// The lease's end at the server: now + the holder's TTL, read
		// after freezing the leader (no renewal can move it afterwards).
		for _, op := range []leadershiptest.Op{leadershiptest.OpAcquire, leadershiptest.OpExtend, leadershiptest.OpRelease} {
			leader.fault.Set(op, leadershiptest.FaultHang)
		}
		time.Sleep(20 * time.Millisecond) // a renewal in flight lands
		h, ok, err := follower.e.LookupLeader(context.Background())
		if err != nil || !ok {
			leader.stop()
			follower.stop()
			return nil, fmt.Errorf("holder lookup: %v, %w", ok, err)
		}
		expiry := time.Now().Add(h.TTL)
		at, err := follower.leads()
		leader.stop()
		follower.stop()
		if err != nil {
			return nil, err
		}
		ds = append(ds, at.Sub(expiry))
	}
	return ds, nil
}
