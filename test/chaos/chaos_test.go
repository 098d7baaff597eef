//go:build unix

package chaos

import (
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/locking/etcdlock/etcdtest"
	"github.com/hostloom/hostloom/core/testing/pgtest"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

var (
	flagDuration   = flag.Duration("chaos.duration", 40*time.Second, "how long TestChaos injects faults")
	flagSeed       = flag.Uint64("chaos.seed", 0, "fault schedule seed (0: random, printed)")
	flagReplicas   = flag.Int("chaos.replicas", 5, "replica processes")
	flagRoles      = flag.Int("chaos.roles", 20, "roles per replica")
	flagRace       = flag.Bool("chaos.race", false, "build the replica with the race detector")
	flagExpiryRace = flag.Duration("chaos.expiry-race", 0, "checker tolerance for a leader noticing its expiry late (0: 1% of the lease + 2ms, negative: strict)")
	flagDir        = flag.String("chaos.dir", "", "keep histories and logs here (default: a temporary directory, removed unless the test fails)")
	flagCluster    = flag.Bool("chaos.cluster", false, "also run TestChaosCluster (Redis Cluster failovers)")
	flagSentinel   = flag.Bool("chaos.sentinel", false, "also run TestChaosSentinel (Sentinel failovers)")
	flagBackend    = flag.String("chaos.backend", "redis", "backend of TestChaos: redis (redis-server or valkey-server), postgres (PostgreSQL through pglock) or etcd (three etcd members through etcdlock)")
	flagFailD      = flag.Duration("chaos.failover.duration", 40*time.Second, "how long TestChaosCluster and TestChaosSentinel inject faults")
	flagFaults     = flag.String("chaos.faults", "", "comma-separated fault kinds TestChaos draws from (default: every kind of the backend)")
	flagProcess    = flag.Bool("chaos.process", false, "TestChaos: run each replica as one leadership.Process (gates, clock, work attached, Process.Leave)")
	flagBalance    = flag.Bool("chaos.balance", false, "with -chaos.process: each replica's electors form a balance group")
	flagEtcdQuar   = flag.Bool("chaos.etcd-expiry-quarantine", false, "with -chaos.backend etcd: run the replicas with locking.etcd.expiry_quarantine")
)

// tlog writes the harness log to t.Log, line by line.
type tlog struct {
	mu sync.Mutex
	t  *testing.T
}

func (w *tlog) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func testConfig(t *testing.T, name string) Config {
	t.Helper()
	if testing.Short() {
		t.Skip("chaos: skipped under -short (it runs replica processes for a minute)")
	}
	cfg := DefaultConfig()
	cfg.Replicas, cfg.Roles, cfg.Race = *flagReplicas, *flagRoles, *flagRace
	cfg.Seed = *flagSeed
	cfg.ExpiryRace = *flagExpiryRace
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	t.Logf("chaos: seed %d (rerun with -chaos.seed %d)", cfg.Seed, cfg.Seed)
	if *flagDir != "" {
		cfg.Dir = *flagDir + "/" + name
		if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
			t.Fatal(err)
		}
	} else {
		// Not t.TempDir: a failed run keeps its histories and the
		// replicas' and servers' logs, which the failure message names.
		dir, err := os.MkdirTemp("", "hostloom-chaos-"+name+"-")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Dir = dir
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("chaos: files kept in %s", dir)
				return
			}
			_ = os.RemoveAll(dir)
		})
	}
	cfg.Log = &tlog{t: t}
	return cfg
}

// runChaos runs cfg, failing (CI) or skipping (locally) without
// redis-server, and fails the test with the checker's problems.
func runChaos(t *testing.T, cfg Config) *Result {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if dl, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-30*time.Second))
		defer cancel()
	}
	res, err := Run(ctx, cfg)
	if errors.Is(err, ErrNoEtcd) && errors.Is(err, etcdtest.ErrNoServer) {
		if etcdtest.Required() {
			t.Fatalf("%v (required here: CI or HOSTLOOM_REQUIRE_ETCD=1 is set)", err)
		}
		t.Skipf("%v: set %s to an etcd server binary to run the etcd chaos test", err, etcdtest.ServerEnv)
	}
	if errors.Is(err, ErrNoPostgres) {
		if pgtest.Required() {
			t.Fatalf("%v (required here: CI or HOSTLOOM_REQUIRE_POSTGRES=1 is set)", err)
		}
		t.Skipf("%v: install the postgresql package to run the PostgreSQL chaos test", err)
	}
	if errors.Is(err, redistest.ErrNoServer) {
		if redistest.Required() {
			t.Fatalf("%v (required here: CI or HOSTLOOM_REQUIRE_REDIS=1 is set)", err)
		}
		t.Skip("redis-server not found: install redis-server to run the chaos tests")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.Report.Summary())
	if !res.Report.OK() {
		t.Errorf("chaos: the history breaks the guarantee (files in %s)", cfg.Dir)
	}
	// A run that injected nothing or never handed over proves nothing.
	if res.Report.Faults == 0 || res.Report.Handovers == 0 || res.Report.WorkRecords == 0 {
		t.Errorf("chaos: vacuous run: %d faults, %d handovers, %d work records", res.Report.Faults, res.Report.Handovers, res.Report.WorkRecords)
	}
	// Every slice writes a fenced effect; the store must hold them (G5).
	if e := res.Report.Effects; e.Attempted != res.Report.WorkRecords || e.Stored == 0 {
		t.Errorf("chaos: fenced effects: %d attempted for %d work records, %d in the store", e.Attempted, res.Report.WorkRecords, e.Stored)
	}
	return res
}

// TestChaos is the reliability smoke: 5 replicas x 20 roles over a real
// redis-server on sub-second leases (1s/250ms/250ms), every standalone
// fault kind, then the checker. Longer: -chaos.duration=10m, or
// go run ./test/chaos/cmd/chaos.
//
// With -chaos.backend postgres the replicas elect over PostgreSQL
// (pglock, D1–D4) through their proxies instead, with PostgresFaults:
// replica kill and pause, fast and immediate restarts and an outage of
// the server, blackholed, delayed and reset links; the same checker judges
// the history.
//
// With -chaos.backend etcd they elect over three etcd members (etcdlock,
// N1–N5) through one proxy per member each, with EtcdFaults: a member
// killed, paused or cut off from the others, the etcd leader killed, the
// whole cluster restarted, and the replica and link faults. Besides the
// checker's verdict the run fails on any overlap during a member fault
// (counted apart from the replicas' own pauses).
func TestChaos(t *testing.T) {
	kinds := StandaloneFaults
	name := "standalone"
	postgres, etcd := false, false
	switch *flagBackend {
	case "redis":
	case "postgres":
		kinds, name, postgres = PostgresFaults, "postgres", true
	case "etcd":
		kinds, name, etcd = EtcdFaults, "etcd", true
	default:
		t.Fatalf("-chaos.backend %q is not one of redis, postgres, etcd", *flagBackend)
	}
	cfg := testConfig(t, name)
	cfg.Duration = *flagDuration
	cfg.Postgres, cfg.Etcd = postgres, etcd
	cfg.EtcdExpiryQuarantine = etcd && *flagEtcdQuar
	cfg.Process, cfg.Balance = *flagProcess, *flagProcess && *flagBalance
	if *flagFaults != "" {
		kinds = nil
		for _, k := range strings.Split(*flagFaults, ",") {
			kinds = append(kinds, FaultKind(strings.TrimSpace(k)))
		}
		cfg.Faults = kinds
		if err := CheckFaultKinds(cfg); err != nil {
			t.Fatal(err)
		}
	}
	res := runChaos(t, cfg)
	for _, k := range kinds {
		if cfg.Duration >= 40*time.Second && res.Report.FaultsByKind[k] == 0 {
			t.Errorf("chaos: fault kind %s never injected in %v", k, cfg.Duration)
		}
	}
}

// failoverOptIn skips the replicated-backend runs unless asked for: each
// takes about a minute more than the smoke.
func failoverOptIn(t *testing.T, flagSet bool) {
	t.Helper()
	if !flagSet && os.Getenv("HOSTLOOM_CHAOS_FAILOVER") != "1" {
		t.Skip("chaos: the failover runs are opt-in: -chaos.cluster / -chaos.sentinel or HOSTLOOM_CHAOS_FAILOVER=1")
	}
}

// runFailover runs the replicas over a replicated backend on 2s/500ms/500ms
// leases. Overlaps after a failover (a write the replica never got) are
// outside the guarantee: they are reported and counted, not failed, as
// long as each ends within a lease of the failover.
func runFailover(t *testing.T, cfg Config) {
	t.Helper()
	cfg.Duration = *flagFailD
	cfg.Lease, cfg.RenewInterval, cfg.RetryInterval = 2*time.Second, 500*time.Millisecond, 500*time.Millisecond
	res := runChaos(t, cfg)
	t.Log(res.Failover)
	if res.Failover.Failovers == 0 || res.Failover.KilledMasters == 0 {
		t.Errorf("chaos: failover faults not injected: %s", res.Failover)
	}
}

// TestChaosCluster runs over a Redis Cluster of 3 masters with one replica
// each and fails masters over (CLUSTER FAILOVER) or kills them.
func TestChaosCluster(t *testing.T) {
	failoverOptIn(t, *flagCluster)
	cfg := testConfig(t, "cluster")
	cfg.Cluster = true
	runFailover(t, cfg)
}

// TestChaosSentinel runs over a master, a replica and three sentinels and
// fails the master over (SENTINEL FAILOVER) or kills it.
func TestChaosSentinel(t *testing.T) {
	failoverOptIn(t, *flagSentinel)
	cfg := testConfig(t, "sentinel")
	cfg.Sentinel = true
	runFailover(t, cfg)
}
