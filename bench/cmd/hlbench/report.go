package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

type electionResult struct {
	Lib  string
	Set  settings
	S    summary
	Took summary // handover: until the library took the lease (HostLoom's Change.At), before its callback ran
}

type report struct {
	cfg           config
	started       time.Time
	elapsed       time.Duration
	redisVersion  string
	loadStart     string
	locks         []lockResult
	refused       []refusedResult
	handover      []electionResult
	handoverFloor summary // raw release script + SET NX by the notified client (floor.go)
	failover      []electionResult
	steady        []steadyResult
	memory        []memResult
	channel       []chanResult
	scale         *scaleResult
}

type target struct {
	what, measured string
	ok             bool
}

func (t target) status() string { return mark(t.ok) }

// verdict is t's status in this run: a -short run (two samples, 200
// electors) checks the harness and judges nothing.
func (r *report) verdict(t target) string {
	if r.cfg.short {
		return "not judged (-short run; the sample would say " + t.status() + ")"
	}
	return t.status()
}

func (r *report) lock(name string, conc int) lockResult {
	for _, l := range r.locks {
		if l.Name == name && l.Conc == conc {
			return l
		}
	}
	return lockResult{}
}

func (r *report) election(rs []electionResult, lib, set string) summary {
	for _, e := range rs {
		if e.Lib == lib && e.Set.Name == set {
			return e.S
		}
	}
	return summary{}
}

func (r *report) steadyOf(lib string) steadyResult {
	for _, s := range r.steady {
		if s.Lib == lib {
			return s
		}
	}
	return steadyResult{}
}

func (r *report) memOf(lib string) memResult {
	for _, m := range r.memory {
		if m.Lib == lib {
			return m
		}
	}
	return memResult{}
}

// targets evaluates the targets against the measurements.
func (r *report) targets() []target {
	var ts []target
	if len(r.locks) > 0 {
		ts = append(ts, r.lockTargets()...)
	}
	ts = append(ts, r.electionTargets()...)
	ts = append(ts, r.scaleTargets()...)
	return ts
}

func (r *report) lockTargets() []target {
	var ts []target
	hl1, fl1 := r.lock("hostloom", 1), r.lock("floor", 1)
	hl64, fl64 := r.lock("hostloom", 64), r.lock("floor", 64)
	ts = append(ts,
		target{"lock round trip p50, 1 goroutine ≤ 1.1× floor",
			fmt.Sprintf("%s vs %s = %s", fmtDur(hl1.P50), fmtDur(fl1.P50), ratio(float64(hl1.P50), float64(fl1.P50))),
			float64(hl1.P50) <= 1.1*float64(fl1.P50)},
		target{"lock throughput, 64 goroutines ≥ floor/1.1",
			fmt.Sprintf("%.0f vs %.0f ops/s = %s of floor", hl64.OpsPerSec, fl64.OpsPerSec, ratio(hl64.OpsPerSec, fl64.OpsPerSec)),
			hl64.OpsPerSec*1.1 >= fl64.OpsPerSec},
	)
	for _, peer := range []string{"redsync", "bsm-redislock"} {
		p1, p64 := r.lock(peer, 1), r.lock(peer, 64)
		ts = append(ts,
			target{"lock round trip p50, 1 goroutine faster than " + peer,
				fmt.Sprintf("%s vs %s", fmtDur(hl1.P50), fmtDur(p1.P50)), hl1.P50 < p1.P50},
			target{"lock throughput, 64 goroutines above " + peer,
				fmt.Sprintf("%.0f vs %.0f ops/s", hl64.OpsPerSec, p64.OpsPerSec), hl64.OpsPerSec > p64.OpsPerSec},
		)
	}
	return ts
}

func (r *report) electionTargets() []target {
	var ts []target
	for _, e := range r.handover {
		if e.Lib != "hostloom" {
			continue
		}
		cg := r.election(r.handover, "client-go", e.Set.Name)
		ts = append(ts, target{"graceful handover p50 ≥ 100× faster than client-go (" + e.Set.Name + ")",
			fmt.Sprintf("%s vs %s = %s", fmtDur(e.S.P50), fmtDur(cg.P50), ratio(float64(cg.P50), float64(e.S.P50))),
			float64(cg.P50) >= 100*float64(e.S.P50)})
	}
	if len(r.failover) > 0 {
		fo := r.election(r.failover, "hostloom", fastSettings.Name)
		ts = append(ts, target{"crash takeover ≤ 25 ms after expiry (p99, " + fastSettings.Name + ")",
			fmt.Sprintf("p50 %s, p99 %s, max %s", fmtDur(fo.P50), fmtDur(fo.P99), fmtDur(fo.Max)), fo.P99 <= 25*time.Millisecond})
	}
	if len(r.steady) > 0 {
		ts = append(ts, r.steadyTargets()...)
	}
	if len(r.memory) > 0 {
		ts = append(ts, r.memTarget())
	}
	return ts
}

func (r *report) steadyTargets() []target {
	var ts []target
	hs, cs := r.steadyOf("hostloom"), r.steadyOf("client-go")
	ts = append(ts, target{"Redis load per role ≤ client-go's (default settings; INFO commandstats, script-internal commands counted)",
		fmt.Sprintf("%.3f vs %.3f commands/s per role = %s", hs.PerRole, cs.PerRole, ratio(hs.PerRole, cs.PerRole)), hs.PerRole <= cs.PerRole})
	ts = append(ts, target{"Redis load per role ≤ client-go's (default settings; requests sent = round trips)",
		fmt.Sprintf("%.3f vs %.3f requests/s per role = %s", hs.ReqPerRole, cs.ReqPerRole, ratio(hs.ReqPerRole, cs.ReqPerRole)), hs.ReqPerRole <= cs.ReqPerRole})
	return ts
}

func (r *report) memTarget() target {
	hm := r.memOf("hostloom")
	scaled := float64(hm.total()) / float64(max(hm.Roles, 1)) * 10000
	what := "10k electors ≤ 64 MB"
	meas := fmt.Sprintf("%.1f MB for %d electors", mb(hm.total()), hm.Roles)
	if hm.Roles != 10000 {
		meas += fmt.Sprintf(" (×%d scale: %.1f MB; short run)", 10000/max(hm.Roles, 1), scaled/(1<<20))
	}
	return target{what, meas, scaled <= 64*(1<<20)}
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func nproc() string {
	out, err := exec.Command("nproc").Output()
	if err != nil {
		return fmt.Sprint(runtime.NumCPU())
	}
	return strings.TrimSpace(string(out))
}

func (r *report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	mode := "full"
	if r.cfg.short {
		mode = "short (-short: harness check only, figures not meaningful)"
	}
	p("# HostLoom benchmark results")
	p("")
	p("Generated by `%s` on %s UTC, mode %s, in %s.", strings.Join(append([]string{"cd bench && go run ./cmd/hlbench"}, os.Args[1:]...), " "), r.started.Format("2006-01-02 15:04"), mode, r.elapsed.Round(time.Second))
	p("")
	p("| machine | |")
	p("|---|---|")
	p("| CPU | %s, nproc %s, GOMAXPROCS %d |", cpuModel(), nproc(), runtime.GOMAXPROCS(0))
	p("| OS/arch | %s/%s |", runtime.GOOS, runtime.GOARCH)
	p("| Go | %s |", runtime.Version())
	p("| Redis | redis-server %s, private, on 127.0.0.1, persistence off, same machine as the clients |", r.redisVersion)
	p("| load average | %s at start, %s at the end (1, 5, 15 min; other work on the machine shows here) |", r.loadStart, loadAvg())
	p("| repeats | lock round trips: %d repeats of %s per implementation and concurrency, implementations in a fresh random order each repeat, median repeat reported; channel: %d repeats, median; refused acquire: %d attempts; handovers: %d per library and set; crash failovers: %d per library |", r.cfg.lockRepeats, r.cfg.lockTime, r.cfg.repeats, r.cfg.refusedOps, r.cfg.handovers, r.cfg.failovers)
	p("")
	p("## Targets")
	p("")
	p("| target | measured | |")
	p("|---|---|---|")
	for _, t := range r.targets() {
		p("| %s | %s | %s |", t.what, t.measured, r.verdict(t))
	}
	p("")
	if len(r.locks) > 0 || len(r.refused) > 0 {
		p("## 1. Lock round trip (acquire + release)")
		p("")
		p("Each goroutine acquires and releases its own key (uncontended), %s per run, lease %s. Latency per round trip; allocations are the whole process's heap allocations divided by round trips (as `go test -benchmem` counts them); Redis commands from `INFO commandstats`, counting those a script runs; Redis CPU from `INFO cpu` (user + system) over the run, divided by round trips: the server's own time per acquire + release, reading and writing the connections included, which the client waits for at one goroutine. Every implementation makes two round trips (acquire, release); HostLoom's release script PUBLISHes the release only when someone may listen (an elector's lease, a handover, or a key a subscriber marked; L7), so an unwatched plain lock costs no PUBLISH. \"failed\" counts round trips that returned an error (over all repeats; not in the latencies). rueidislock's TryNextAfter, with one key the acquisition's timeout, is set to the lease: with its default (20 ms) it gave up every acquisition of a run when the machine was busy, while the others wait for Redis's answer. The ranges show how much repeats differ on this shared machine: differences smaller than the ranges are noise, and a target decided by such a difference can flip from run to run.", r.cfg.lockTime, "5s")
		p("")
		for _, conc := range []int{1, 64} {
			fl := r.lock("floor", conc)
			hl := r.lock("hostloom", conc)
			if conc == 1 {
				p("### 1 goroutine")
			} else {
				p("### %d goroutines", conc)
			}
			p("")
			p("| implementation | p50 | p50 range over repeats | p99 | round trips/s | range | failed | allocs/op | B/op | Redis commands/op | Redis CPU µs/op | p50 ÷ floor | throughput ÷ floor | HostLoom p50 ÷ this | HostLoom throughput ÷ this |")
			p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
			for _, l := range r.locks {
				if l.Conc != conc {
					continue
				}
				p("| %s | %s | %s–%s | %s | %.0f | %.0f–%.0f | %d of %d | %.1f | %.0f | %.2f | %.1f | %s | %s | %s | %s |", l.Name, fmtDur(l.P50), fmtDur(l.P50Min), fmtDur(l.P50Max), fmtDur(l.P99), l.OpsPerSec, l.OpsMin, l.OpsMax, l.Failed, l.Attempts, l.Allocs, l.Bytes, l.Commands, l.ServerUs,
					ratio(float64(l.P50), float64(fl.P50)), ratio(l.OpsPerSec, fl.OpsPerSec),
					ratio(float64(hl.P50), float64(l.P50)), ratio(hl.OpsPerSec, l.OpsPerSec))
			}
			p("")
		}
		p("### Refused acquire (key held by another owner)")
		p("")
		p("| implementation | p50 | allocs/op | round trips/op | Redis commands/op | commands per op (incl. inside scripts) |")
		p("|---|---|---|---|---|---|")
		for _, f := range r.refused {
			p("| %s | %s | %.1f | %.2f | %.2f | %s |", f.Name, fmtDur(f.P50), f.Allocs, f.RoundTrips, f.Commands, fmtCmds(f.PerCmd))
		}
		p("")
		p("Round trips = writes on the implementation's own connections (a counting net.Conn), per attempt. Commands = `INFO commandstats` delta per attempt, which counts the commands a Lua script runs as well as the EVALSHA itself. A HostLoom refusal also returns the holder's remaining TTL in the same round trip (L3).")
		p("")
	}
	if len(r.handover)+len(r.failover)+len(r.steady)+len(r.memory) > 0 {
		p("## 2. Leader election: HostLoom vs client-go `tools/leaderelection`")
		p("")
		p("client-go runs over `internal/k8slock`, a `resourcelock.Interface` that stores the LeaderElectionRecord as JSON in one Redis key (Get = GET, Create = SET NX, Update = a compare-and-swap on the resource version in one Lua script). Settings are applied equally: client-go LeaseDuration = Lease, RetryPeriod = RetryInterval, RenewDeadline = RenewInterval (default set), 500 ms in the fast set because client-go rejects RenewDeadline ≤ 1.2 × RetryPeriod. client-go's leader renews every RetryPeriod; HostLoom's every RenewInterval. Leadership is observed in each library's callback (HostLoom `OnChange`, client-go `OnStartedLeading`). Each replica has its own Redis client, as separate processes would.")
		p("")
		p("### Graceful handover (leader stops; client-go with ReleaseOnCancel)")
		p("")
		p("Two replicas; the leader is stopped at a random moment (100–600 ms after the previous handover) and a fresh candidate replaces it. Time from the stop call to the other replica's leadership callback.")
		p("")
		p("| settings | n | HostLoom p50 | p99 | max | client-go p50 | p99 | max | client-go ÷ HostLoom p50 | p99 | HostLoom ÷ floor p50 | p99 |")
		p("|---|---|---|---|---|---|---|---|---|---|---|---|")
		fl := r.handoverFloor
		for _, e := range r.handover {
			if e.Lib != "hostloom" {
				continue
			}
			hl, cg := e.S, r.election(r.handover, "client-go", e.Set.Name)
			p("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", e.Set.Name, hl.N, fmtDur(hl.P50), fmtDur(hl.P99), fmtDur(hl.Max),
				fmtDur(cg.P50), fmtDur(cg.P99), fmtDur(cg.Max), ratio(float64(cg.P50), float64(hl.P50)), ratio(float64(cg.P99), float64(hl.P99)),
				ratio(float64(hl.P50), float64(fl.P50)), ratio(float64(hl.P99), float64(fl.P99)))
		}
		p("")
		for _, e := range r.handover {
			if e.Lib == "hostloom" && e.Took.N > 0 {
				p("HostLoom, %s: the lease was taken (the new leader's `Change.At`, stamped when its elector learned the acquisition) p50 %s, p99 %s after the stop call, %s ÷ the floor at p50; the rest of the figure above is the `OnChange` callback's delivery goroutine waking up.", e.Set.Name, fmtDur(e.Took.P50), fmtDur(e.Took.P99), ratio(float64(e.Took.P50), float64(fl.P50)))
				p("")
			}
		}
		if fl.N > 0 {
			p("Floor: the same handover with no library, two go-redis clients on this server: one releases with a one-script DEL + PUBLISH, the other, subscribed, takes the key with SET NX PX on the message; time from the release call to that reply, after the same random idle time (n=%d): p50 %s, p99 %s, max %s. Three loopback round trips, each slower after an idle pause than in a busy loop (the CPUs sleep between handovers), so this is what any notified handover costs here.", fl.N, fmtDur(fl.P50), fmtDur(fl.P99), fmtDur(fl.Max))
			p("")
		}
		p("### Crash failover (leader stops renewing, no release)")
		p("")
		p("Fast set only (%s): with the default 15 s lease %d failovers would take several minutes. The crashed replica's lock wrapper fails every call without reaching Redis. Expiry: HostLoom — the key's PTTL read right after the crash; client-go — the crashed leader's last successful record write + LeaseDuration (client-go has no server-side expiry; candidates judge it locally). Takeover = the other replica's leadership callback minus that expiry. client-go's candidates notice a renewal by comparing the record's JSON, whose RenewTime has one-second precision: with renewals less than a second apart a candidate can miss the last ones and take over before the lease its predecessor last renewed has run out — a negative takeover time, measured, not an artefact of the harness.", fastSettings.Name, r.cfg.failovers)
		p("")
		p("| library | n | p50 | p99 | max |")
		p("|---|---|---|---|---|")
		for _, e := range r.failover {
			p("| %s | %d | %s | %s | %s |", e.Lib, e.S.N, fmtDur(e.S.P50), fmtDur(e.S.P99), fmtDur(e.S.Max))
		}
		p("")
		p("### Redis load at steady state (default settings)")
		p("")
		p("| library | roles × replicas | window | requests/s | per role | commands/s | per role | commands/s by command |")
		p("|---|---|---|---|---|---|---|---|")
		hs, cs := r.steadyOf("hostloom"), r.steadyOf("client-go")
		for _, s := range r.steady {
			p("| %s | %d × %d | %s | %.1f | %.3f | %.1f | %.3f | %s |", s.Lib, s.Roles, s.Replicas, s.Window.Round(100*time.Millisecond), s.ReqPerSec, s.ReqPerRole, s.CmdsPerSec, s.PerRole, fmtCmds(s.PerCommand))
		}
		p("")
		p("HostLoom ÷ client-go per role: %s in requests, %s in commands. Commands come from `INFO commandstats` deltas (the harness's own INFO calls excluded), which count every command a Lua script runs as well as the EVALSHA itself; requests are the writes on the replicas' own connections (one per round trip). Measured after every role had a leader plus %s.", ratio(hs.ReqPerRole, cs.ReqPerRole), ratio(hs.PerRole, cs.PerRole), r.cfg.steadyWarm)
		p("")
		p("### Memory and goroutines per elector (%d roles, one process, default settings, all leading)", r.cfg.memRoles)
		p("")
		p("| library | electors | heap | stacks | total | per elector | goroutines | per elector | all leading after |")
		p("|---|---|---|---|---|---|---|---|---|")
		for _, m := range r.memory {
			p("| %s | %d | %.1f MB | %.1f MB | %.1f MB | %.0f B | %d | %.2f | %s |", m.Lib, m.Roles, mb(m.HeapBytes), mb(m.StackBytes), mb(m.total()),
				float64(m.total())/float64(m.Roles), m.Goroutines, float64(m.Goroutines)/float64(m.Roles), fmtDur(m.TimeToAllLead))
		}
		p("")
		p("Each library is measured in a fresh hlbench process that does nothing else. Heap = HeapAlloc after two GCs minus before; stacks = StackInuse delta; one Redis client shared by the process's electors.")
		p("")
	}
	if len(r.channel) > 0 {
		p("## 3. LeaderChannel vs a plain buffered channel")
		p("")
		p("One goroutine writes and reads one item per op, capacity %d, the instance leads (a `leadershiptest.Fake`); `testing.Benchmark`, median of %d.", chanCapacity, r.cfg.repeats)
		p("")
		p("| benchmark | ns/op | allocs/op | B/op | ÷ plain chan |")
		p("|---|---|---|---|---|")
		base := 0.0
		if len(r.channel) > 0 {
			base = r.channel[0].NsPerOp
		}
		for _, c := range r.channel {
			p("| %s | %.1f | %.2f | %.0f | %s |", c.Name, c.NsPerOp, c.Allocs, c.Bytes, ratio(c.NsPerOp, base))
		}
		p("")
	}
	r.scaleSection(p)
	p("## Peers and how they are configured")
	p("")
	p("- floor: go-redis v9 `SET key token NX PX` + a compare-and-delete Lua script (EVALSHA); 128-bit random token.")
	p("- HostLoom: `redislock.New(client)` + `locking.New(provider, locking.DefaultOptions())`, `TryAcquire` + `Release`.")
	p("- go-redsync/redsync v4 over its go-redis v9 pool: `NewMutex(key, WithExpiry(5s))` per acquisition, `TryLockContext` + `UnlockContext` (one pool: a single Redis).")
	p("- bsm/redislock: `Obtain(ctx, key, 5s, nil)` (no retry, its default) + `Release`.")
	p("- rueidislock: `KeyMajority: 1` and `NoLoopTracking: true` as its README recommends for one Redis ≥ 7.0.5, KeyValidity 5s; `TryWithContext` + the returned cancel (which releases and waits). rueidis pipelines concurrent commands over one connection by design; go-redis clients use their default pool (10 × GOMAXPROCS connections).")
	p("- client-go `tools/leaderelection` with ReleaseOnCancel, over the Redis resource lock above.")
	p("")
	p("Every client runs in this one process on the same 2-core machine as redis-server, so the figures include client and server competing for CPU; ratios within one table are the comparison to read.")
	return b.String()
}

// sane reports figures that can only come from a broken harness: a
// measure that counted nothing.
func (r *report) sane() error {
	var errs []error
	for _, l := range r.locks {
		if l.OpsPerSec <= 0 || l.P50 <= 0 || l.Allocs <= 0 {
			errs = append(errs, fmt.Errorf("lock %s at %d goroutines measured nothing: %+v", l.Name, l.Conc, l))
		}
	}
	for _, f := range r.refused {
		if f.RoundTrips < 1 || f.Commands < 1 {
			errs = append(errs, fmt.Errorf("refused %s: %.2f round trips, %.2f commands per attempt", f.Name, f.RoundTrips, f.Commands))
		}
	}
	for _, e := range r.handover {
		if e.S.N == 0 || e.S.Max <= 0 {
			errs = append(errs, fmt.Errorf("handover %s %s: no samples", e.Lib, e.Set.Name))
		}
	}
	// A failover may be measured negative (client-go's candidates can take
	// over before the lease their predecessor last renewed has run out, see
	// the failover section), so only the count is checked.
	for _, e := range r.failover {
		if e.S.N == 0 {
			errs = append(errs, fmt.Errorf("failover %s %s: no samples", e.Lib, e.Set.Name))
		}
	}
	for _, s := range r.steady {
		if s.ReqPerSec <= 0 || s.CmdsPerSec <= 0 {
			errs = append(errs, fmt.Errorf("steady %s: %.1f requests/s, %.1f commands/s", s.Lib, s.ReqPerSec, s.CmdsPerSec))
		}
	}
	for _, m := range r.memory {
		if m.total() <= 0 || m.Goroutines < 0 {
			errs = append(errs, fmt.Errorf("memory %s: %+v", m.Lib, m))
		}
	}
	for _, c := range r.channel {
		if c.NsPerOp <= 0 {
			errs = append(errs, fmt.Errorf("channel %s: %.1f ns/op", c.Name, c.NsPerOp))
		}
	}
	errs = append(errs, r.scaleSane())
	return errors.Join(errs...)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
