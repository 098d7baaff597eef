//go:build unix

// Command chaos runs the HostLoom reliability harness (package
// test/chaos) for as long as asked and prints the checker's summary:
//
//	go run ./test/chaos/cmd/chaos -duration 10m -seed 42
//
// It exits 1 when the history breaks the guarantee, 2 on a harness error.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hostloom/hostloom/test/chaos"
)

func main() {
	cfg := chaos.DefaultConfig()
	flag.DurationVar(&cfg.Duration, "duration", 10*time.Minute, "how long to inject faults")
	flag.Uint64Var(&cfg.Seed, "seed", 0, "fault schedule seed (0: random, printed)")
	flag.IntVar(&cfg.Replicas, "replicas", cfg.Replicas, "replica processes")
	flag.IntVar(&cfg.Roles, "roles", cfg.Roles, "roles per replica")
	flag.DurationVar(&cfg.Lease, "lease", cfg.Lease, "elector lease")
	flag.DurationVar(&cfg.RenewInterval, "renew", cfg.RenewInterval, "elector renew interval")
	flag.DurationVar(&cfg.RetryInterval, "retry", cfg.RetryInterval, "elector retry interval")
	flag.DurationVar(&cfg.ExpiryRace, "expiry-race", 0, "checker tolerance for a leader noticing its expiry late (0: 1% of the lease + 2ms, negative: strict, no stall evidence either)")
	flag.BoolVar(&cfg.Race, "race", false, "build the replica with the race detector")
	flag.BoolVar(&cfg.Cluster, "cluster", false, "run over a Redis Cluster (3 masters + 3 replicas) with failovers")
	flag.BoolVar(&cfg.Sentinel, "sentinel", false, "run over Sentinel (master, replica, 3 sentinels) with failovers")
	flag.StringVar(&cfg.Dir, "dir", "", "keep histories and logs here (default: a new temporary directory)")
	flag.IntVar(&cfg.MinReplicas, "min-replicas", 0, "run the replicas with locking.redis.min_replicas")
	flag.BoolVar(&cfg.Quarantine, "quarantine", false, "run the replicas with locking.redis.quarantine")
	flag.BoolVar(&cfg.EtcdExpiryQuarantine, "etcd-expiry-quarantine", false, "with -backend etcd: run the replicas with locking.etcd.expiry_quarantine")
	flag.BoolVar(&cfg.Process, "process", false, "run each replica as one leadership.Process (electors through its gates and clock, workers attached as Work, Process.Leave at shutdown)")
	flag.BoolVar(&cfg.Balance, "balance", false, "with -process: each replica's electors form a balance group, so roles move by named handovers during the faults")
	backend := flag.String("backend", "redis", "redis (redis-server; -cluster and -sentinel choose the replicated ones), postgres (PostgreSQL through pglock, with its restarts and outage) or etcd (three etcd members through etcdlock, with member kills, pauses and partitions, leader kills and cluster restarts)")
	faults := flag.String("faults", "", "comma-separated fault kinds to draw from (default: every kind of the backend), e.g. redis-restart")
	recheck := flag.String("check", "", "judge the finished run in this directory again instead of running (with -expiry-race)")
	flag.Parse()
	switch *backend {
	case "redis":
	case "postgres":
		if cfg.Cluster || cfg.Sentinel {
			fmt.Fprintln(os.Stderr, "chaos: -backend postgres takes neither -cluster nor -sentinel")
			os.Exit(2)
		}
		cfg.Postgres = true
	case "etcd":
		if cfg.Cluster || cfg.Sentinel {
			fmt.Fprintln(os.Stderr, "chaos: -backend etcd takes neither -cluster nor -sentinel")
			os.Exit(2)
		}
		cfg.Etcd = true
	default:
		fmt.Fprintf(os.Stderr, "chaos: -backend %q is not one of redis, postgres, etcd\n", *backend)
		os.Exit(2)
	}
	if *recheck != "" {
		rep, err := chaos.Recheck(*recheck, cfg.ExpiryRace)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Print(rep.Summary())
		if !rep.OK() {
			os.Exit(1)
		}
		return
	}
	if *faults != "" {
		for _, k := range strings.Split(*faults, ",") {
			cfg.Faults = append(cfg.Faults, chaos.FaultKind(strings.TrimSpace(k)))
		}
		if err := chaos.CheckFaultKinds(cfg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "hostloom-chaos-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		cfg.Dir = d
	}
	cfg.Dir, _ = filepath.Abs(cfg.Dir)
	cfg.Log = os.Stdout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := chaos.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Printf("\nseed %d, %v, files in %s\n%s", cfg.Seed, cfg.Duration, cfg.Dir, res.Report.Summary())
	if res.Failover != nil {
		fmt.Println(res.Failover)
	}
	if !res.Report.OK() {
		os.Exit(1)
	}
}
