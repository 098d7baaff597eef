// Command hlbench compares HostLoom with its peers on one private
// redis-server and writes the results as Markdown.
//
//	go run ./cmd/hlbench          # full run, writes RESULTS.md (~7 min on 2 cores)
//	go run ./cmd/hlbench -short   # seconds: checks the harness, writes a temp file
//
// It exits non-zero when the harness fails (a library errs, a leader never
// appears, Redis does not start); a missed target is reported in the
// results, not in the exit code.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/hostloom/hostloom/bench/internal/redisproc"
	"github.com/redis/go-redis/v9"
	"k8s.io/klog/v2"
)

type config struct {
	short           bool
	repeats         int
	lockRepeats     int
	lockWarm        time.Duration
	lockTime        time.Duration
	refusedOps      int
	handovers       int
	failovers       int
	handoverDefault bool
	steadyRoles     []int
	steadyWarm      time.Duration
	steadyWindow    time.Duration
	memRoles        int
	memTimeout      time.Duration
	scaleRoles      int
	scaleReplicas   int
	scaleSet        settings
	scaleWarm       time.Duration
	scaleWindow     time.Duration
	scaleTimeout    time.Duration
	scaleJoins      int  // joins of the last replica (a leave between two)
	scaleCompare    bool // also measure the fleet without Balance
	scaleFx         bool // replicas are fx apps (leadershipfx)
}

func fullConfig() config {
	return config{
		repeats: 3, lockRepeats: 7, lockWarm: 300 * time.Millisecond, lockTime: 600 * time.Millisecond,
		refusedOps: 10000, handovers: 50, failovers: 100, handoverDefault: true,
		steadyRoles: []int{100, 1000}, steadyWarm: 6 * time.Second, steadyWindow: 20 * time.Second,
		memRoles: 10000, memTimeout: 120 * time.Second,
		scaleRoles: 1000, scaleReplicas: 5, scaleSet: defaultSettings, scaleJoins: 3,
		scaleWarm: 5 * time.Second, scaleWindow: 20 * time.Second, scaleTimeout: 180 * time.Second, scaleCompare: true,
	}
}

func shortConfig() config {
	return config{
		short: true, repeats: 1, lockRepeats: 1, lockWarm: 30 * time.Millisecond, lockTime: 100 * time.Millisecond,
		refusedOps: 200, handovers: 2, failovers: 2, handoverDefault: true,
		steadyRoles: []int{10, 50}, steadyWarm: 500 * time.Millisecond, steadyWindow: 6 * time.Second, // longer than RenewInterval (5s): at least one renewal per leader
		memRoles: 200, memTimeout: 30 * time.Second,
		scaleRoles: 50, scaleReplicas: 3, scaleSet: fastSettings, scaleJoins: 2,
		scaleWarm: 300 * time.Millisecond, scaleWindow: time.Second, scaleTimeout: 30 * time.Second, scaleCompare: true,
	}
}

// overrides are the command line's sizes; zero values keep the config's.
type sizeFlags struct {
	scaleRoles, scaleReplicas int
	scaleFx                   bool
	steadyRoles               string
}

var overrides sizeFlags

// apply sets cfg's sizes from the flags that were given.
func (o *sizeFlags) apply(cfg *config) error {
	if o.scaleRoles < 0 || o.scaleReplicas < 0 || o.scaleReplicas == 1 {
		return fmt.Errorf("-scale-roles %d and -scale-replicas %d: roles must not be negative, replicas 0 or at least 2", o.scaleRoles, o.scaleReplicas)
	}
	if o.scaleRoles > 0 {
		cfg.scaleRoles = o.scaleRoles
	}
	if o.scaleReplicas > 0 {
		cfg.scaleReplicas = o.scaleReplicas
	}
	cfg.scaleFx = o.scaleFx
	if o.steadyRoles != "" {
		cfg.steadyRoles = nil
		for _, f := range strings.Split(o.steadyRoles, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				return fmt.Errorf("-steady-roles %q: %q is not a positive count", o.steadyRoles, f)
			}
			cfg.steadyRoles = append(cfg.steadyRoles, n)
		}
	}
	return nil
}

var logOut io.Writer = os.Stderr

func logf(format string, args ...any) {
	fmt.Fprintf(logOut, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == replicaCmd { // a child of the scale section
		os.Exit(runReplica(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == memoryCmd { // a child of the memory section
		os.Exit(runMemoryChild(os.Args[2:]))
	}
	testing.Init()
	short := flag.Bool("short", false, "run every measure briefly to check the harness (seconds); results go to a temp file unless -out is set")
	out := flag.String("out", "", "where to write the Markdown results (default RESULTS.md, or a temp file with -short)")
	server := flag.String("redis-server", "redis-server", "redis-server binary")
	only := flag.String("only", "", "comma-separated sections to run (locks,refused,handover,failover,steady,memory,channel,scale); default all")
	flag.IntVar(&overrides.scaleRoles, "scale-roles", 0, "roles of the scale section (0: 1000, 50 with -short); e.g. 100000 for the large run")
	flag.IntVar(&overrides.scaleReplicas, "scale-replicas", 0, "replica processes of the scale section (0: 5, 3 with -short)")
	flag.BoolVar(&overrides.scaleFx, "scale-fx", false, "replicas of the scale section are fx apps whose roles are leadershipfx's (the leave is the app's Stop)")
	flag.StringVar(&overrides.steadyRoles, "steady-roles", "", "comma-separated role counts of the steady section (default 100,1000; 10,50 with -short)")
	flag.Parse()
	if err := run(*short, *out, *server, *only); err != nil {
		fmt.Fprintln(os.Stderr, "hlbench: FAILED:", err)
		os.Exit(1)
	}
}

func run(short bool, out, server, only string) error {
	want := func(section string) bool {
		return only == "" || strings.Contains(","+only+",", ","+section+",")
	}
	if only != "" && out == "" {
		out = filepath.Join(os.TempDir(), "hlbench-partial-RESULTS.md")
	}
	cfg := fullConfig()
	if short {
		cfg = shortConfig()
		if err := flag.Set("test.benchtime", "20ms"); err != nil {
			return err
		}
	}
	if err := overrides.apply(&cfg); err != nil {
		return err
	}
	if out == "" {
		if short {
			out = filepath.Join(os.TempDir(), "hlbench-short-RESULTS.md")
		} else {
			out = "RESULTS.md"
		}
	}
	// client-go logs every acquisition through klog; keep the output readable.
	klog.SetLogger(logr.Discard())

	began := time.Now()
	srv, err := redisproc.Start(server)
	if err != nil {
		return err
	}
	defer srv.Stop()
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()
	rep := &report{cfg: cfg, started: began.UTC(), loadStart: loadAvg()}
	if rep.redisVersion, err = redisproc.Version(ctx, admin); err != nil {
		return err
	}
	logf("redis-server %s on %s", rep.redisVersion, srv.Addr())

	libs := electionLibs()
	settle := func() time.Duration { return 100*time.Millisecond + rand.N(500*time.Millisecond) }
	sets := []settings{fastSettings}
	if cfg.handoverDefault {
		sets = []settings{defaultSettings, fastSettings}
	}
	sections := []struct {
		name, title string
		run         func() error
	}{
		{"locks", "lock round trips", func() (err error) {
			rep.locks, err = runLocks(ctx, cfg, srv.Addr(), admin)
			return err
		}},
		{"refused", "refused acquires", func() (err error) {
			rep.refused, err = runRefused(ctx, cfg, srv.Addr(), admin)
			return err
		}},
		{"handover", "graceful handover", func() error {
			ds, err := runHandoverFloor(ctx, srv.Addr(), cfg.handovers, fastSettings.Lease, settle)
			if err != nil {
				return err
			}
			rep.handoverFloor = summarize(ds)
			logf("handover %-9s %-20s n=%d p50 %s p99 %s max %s", "floor", "release script, SET NX", rep.handoverFloor.N,
				fmtDur(rep.handoverFloor.P50), fmtDur(rep.handoverFloor.P99), fmtDur(rep.handoverFloor.Max))
			for _, s := range sets {
				for _, lib := range libs {
					ds, took, err := runHandover(ctx, lib, srv.Addr(), s, cfg.handovers, settle)
					if err != nil {
						return fmt.Errorf("%s %s: %w", lib.name(), s.Name, err)
					}
					sm, tk := summarize(ds), summarize(took)
					logf("handover %-9s %-20s n=%d p50 %s p99 %s max %s (lease taken: p50 %s p99 %s)", lib.name(), s.Name, sm.N, fmtDur(sm.P50), fmtDur(sm.P99), fmtDur(sm.Max), fmtDur(tk.P50), fmtDur(tk.P99))
					rep.handover = append(rep.handover, electionResult{Lib: lib.name(), Set: s, S: sm, Took: tk})
				}
			}
			return nil
		}},
		{"failover", "crash failover", func() error {
			for _, lib := range libs {
				ds, err := runFailover(ctx, lib, srv.Addr(), fastSettings, cfg.failovers, settle)
				if err != nil {
					return fmt.Errorf("%s: %w", lib.name(), err)
				}
				sm := summarize(ds)
				logf("failover %-9s n=%d p50 %s p99 %s max %s %v", lib.name(), sm.N, fmtDur(sm.P50), fmtDur(sm.P99), fmtDur(sm.Max), ds)
				rep.failover = append(rep.failover, electionResult{Lib: lib.name(), Set: fastSettings, S: sm})
			}
			return nil
		}},
		{"steady", "steady-state Redis load", func() error {
			for _, roles := range cfg.steadyRoles {
				for _, lib := range libs {
					r, err := runSteady(ctx, cfg, lib, srv.Addr(), admin, roles)
					if err != nil {
						return fmt.Errorf("%s, %d roles: %w", lib.name(), roles, err)
					}
					rep.steady = append(rep.steady, r)
				}
			}
			return nil
		}},
		{"memory", "memory per elector", func() error {
			for _, lib := range libs {
				r, err := runMemory(cfg, lib, srv.Addr())
				if err != nil {
					return fmt.Errorf("%s: %w", lib.name(), err)
				}
				rep.memory = append(rep.memory, r)
			}
			return nil
		}},
		{"channel", "LeaderChannel", func() (err error) {
			rep.channel, err = runChannel(cfg)
			return err
		}},
		{"scale", "many roles over replica processes", func() error {
			r, err := runScale(ctx, cfg, srv.Addr(), admin)
			if err != nil {
				return err
			}
			rep.scale = &r
			return nil
		}},
	}
	for _, sec := range sections {
		if !want(sec.name) {
			continue
		}
		logf("== %s", sec.title)
		if err := sec.run(); err != nil {
			return fmt.Errorf("%s: %w", sec.title, err)
		}
	}
	if err := rep.sane(); err != nil {
		return fmt.Errorf("harness check: %w", err)
	}
	rep.elapsed = time.Since(began)
	md := rep.markdown()
	if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
		return err
	}
	logf("wrote %s (%s)", out, rep.elapsed.Round(time.Second))
	for _, t := range rep.targets() {
		logf("target %-60s %s", t.what, rep.verdict(t))
	}
	return nil
}

// steadyResult is the Redis load of roles × 3 replicas at the default
// settings.
type steadyResult struct {
	Lib        string
	Roles      int
	Replicas   int
	Window     time.Duration
	CmdsPerSec float64 // INFO commandstats: script-internal commands included
	PerRole    float64
	PerCommand map[string]float64
	ReqPerSec  float64 // requests the clients wrote (round trips)
	ReqPerRole float64
}

func runSteady(ctx context.Context, cfg config, lib electionLib, addr string, admin *redis.Client, roles int) (steadyResult, error) {
	const replicas = 3
	f, err := startFleet(lib, addr, fmt.Sprintf("steady-%s-%d", lib.name(), time.Now().UnixNano()), roles, replicas, defaultSettings)
	if err != nil {
		return steadyResult{}, err
	}
	defer f.stop()
	if err := f.waitLeaders(roles, 60*time.Second); err != nil {
		return steadyResult{}, err
	}
	time.Sleep(cfg.steadyWarm)
	before, err := redisproc.CommandStats(ctx, admin)
	if err != nil {
		return steadyResult{}, err
	}
	w0 := f.writes.Load()
	t0 := time.Now()
	time.Sleep(cfg.steadyWindow)
	w1 := f.writes.Load()
	after, err := redisproc.CommandStats(ctx, admin)
	if err != nil {
		return steadyResult{}, err
	}
	win := time.Since(t0)
	delta, total := redisproc.Delta(before, after)
	per := map[string]float64{}
	for k, v := range delta {
		per[k] = float64(v) / win.Seconds()
	}
	r := steadyResult{Lib: lib.name(), Roles: roles, Replicas: replicas, Window: win,
		CmdsPerSec: float64(total) / win.Seconds(), PerCommand: per,
		ReqPerSec: float64(w1-w0) / win.Seconds()}
	r.PerRole = r.CmdsPerSec / float64(roles)
	r.ReqPerRole = r.ReqPerSec / float64(roles)
	logf("steady %-9s %d roles × %d: %.1f requests/s (%.3f per role), %.1f cmds/s (%.3f per role) %v", r.Lib, r.Roles, replicas, r.ReqPerSec, r.ReqPerRole, r.CmdsPerSec, r.PerRole, fmtCmds(per))
	return r, nil
}

// memResult is the memory and goroutines of roles electors, one replica,
// all leading.
type memResult struct {
	Lib           string
	Roles         int
	HeapBytes     int64
	StackBytes    int64
	Goroutines    int
	TimeToAllLead time.Duration
}

func (m memResult) total() int64 { return m.HeapBytes + m.StackBytes }

// electionLibs are the election libraries the election sections compare,
// HostLoom first.
func electionLibs() []electionLib { return []electionLib{hostloomLib{}, clientGoLib{}} }

// memoryCmd is the hidden subcommand that measures one library's
// electors in a process of its own (runMemoryChild).
const memoryCmd = "__memory"

// runMemory measures lib's electors in a fresh hlbench process. In this
// process the earlier sections leave memory behind that the runtime hands
// back, or reuses, while the electors start: dead goroutines keep their
// stacks in per-P caches a collection does not empty, and a deep stack
// keeps shrinking over several collections. Measured here, the electors'
// stacks came out negative (-1.7 MB for 200 electors in one run); a
// process that has done nothing else has no such leftovers.
func runMemory(cfg config, lib electionLib, addr string) (memResult, error) {
	bin, err := os.Executable()
	if err != nil {
		return memResult{}, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, memoryCmd, "-lib", lib.name(), "-addr", addr,
		"-roles", strconv.Itoa(cfg.memRoles), "-timeout", cfg.memTimeout.String())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return memResult{}, fmt.Errorf("%s %s: %w: %s", memoryCmd, lib.name(), err, strings.TrimSpace(stderr.String()))
	}
	var r memResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return memResult{}, fmt.Errorf("%s %s: its answer %q: %w", memoryCmd, lib.name(), stdout.String(), err)
	}
	logf("memory %-9s %d electors: heap %.1f MB, stacks %.1f MB, %d goroutines (%.0f B/elector, %.2f goroutines/elector), all leading after %s",
		r.Lib, r.Roles, mb(r.HeapBytes), mb(r.StackBytes), r.Goroutines, float64(r.total())/float64(r.Roles), float64(r.Goroutines)/float64(r.Roles), fmtDur(r.TimeToAllLead))
	return r, nil
}

// runMemoryChild is the process runMemory starts: it runs -roles electors
// of -lib, all leading, and writes their memResult as JSON to stdout.
func runMemoryChild(args []string) int {
	fs := flag.NewFlagSet(memoryCmd, flag.ContinueOnError)
	libName := fs.String("lib", "", "library: hostloom or client-go")
	addr := fs.String("addr", "", "redis-server address")
	roles := fs.Int("roles", 0, "number of electors")
	timeout := fs.Duration("timeout", time.Minute, "how long the electors may take to all lead")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var lib electionLib
	for _, l := range electionLibs() {
		if l.name() == *libName {
			lib = l
		}
	}
	if lib == nil || *addr == "" || *roles <= 0 {
		fmt.Fprintf(os.Stderr, "%s: -lib (hostloom or client-go), -addr and -roles > 0 are required (got lib %q, addr %q, roles %d)\n", memoryCmd, *libName, *addr, *roles)
		return 2
	}
	klog.SetLogger(logr.Discard())
	r, err := measureMemory(lib, *addr, *roles, *timeout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s %s: %v\n", memoryCmd, *libName, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		fmt.Fprintf(os.Stderr, "%s %s: %v\n", memoryCmd, *libName, err)
		return 1
	}
	return 0
}

func measureMemory(lib electionLib, addr string, roles int, timeout time.Duration) (memResult, error) {
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	g0 := runtime.NumGoroutine()
	t0 := time.Now()
	f, err := startFleet(lib, addr, fmt.Sprintf("mem-%s-%d", lib.name(), time.Now().UnixNano()), roles, 1, defaultSettings)
	if err != nil {
		return memResult{}, err
	}
	defer f.stop()
	if err := f.waitLeaders(roles, timeout); err != nil {
		return memResult{}, err
	}
	took := time.Since(t0)
	time.Sleep(500 * time.Millisecond)
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	g1 := runtime.NumGoroutine()
	return memResult{Lib: lib.name(), Roles: roles,
		HeapBytes:  int64(ms1.HeapAlloc) - int64(ms0.HeapAlloc),
		StackBytes: int64(ms1.StackInuse) - int64(ms0.StackInuse),
		Goroutines: g1 - g0, TimeToAllLead: took}, nil
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

func fmtCmds(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", strings.ToUpper(k), m[k]))
	}
	return strings.Join(parts, ", ")
}
