//go:build unix

package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/fencing"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// Config configures a run. Start from DefaultConfig.
type Config struct {
	// Replicas is the number of replica processes. Default 5.
	Replicas int
	// Roles is the number of roles each replica elects. Default 20.
	Roles int
	// Lease, RenewInterval and RetryInterval are the elector's timing.
	// Default 1s, 250ms, 250ms: sub-second cadences, so the machine's load
	// matters.
	Lease, RenewInterval, RetryInterval time.Duration
	// Slice is the length of one work slice. Default 20ms.
	Slice time.Duration
	// Duration is how long faults are injected. Default 60s.
	Duration time.Duration
	// Seed seeds the fault schedule (math/rand/v2 PCG).
	Seed uint64
	// Faults are the kinds drawn from. Default StandaloneFaults, or
	// ClusterFaults with Cluster.
	Faults []FaultKind
	// Dir receives the history files, logs and the fault log. Required.
	Dir string
	// Race builds the replica with the race detector.
	Race bool
	// Cluster runs over a Redis Cluster of 3 masters with one replica
	// each instead of one redis-server (no proxies: the cluster client
	// dials the nodes it discovers).
	Cluster bool
	// Sentinel runs over a master, one replica and three sentinels
	// (go-redis failover client, no proxies).
	Sentinel bool
	// ExpiryRace is the checker's Limits.ExpiryRace. Default
	// DefaultExpiryRace(Lease); negative means strict (zero).
	ExpiryRace time.Duration
	// Log receives the fault log as it happens. Default io.Discard.
	Log io.Writer
	// Quarantine runs the replicas' providers with
	// redislock.Options.Quarantine (locking.redis.quarantine).
	Quarantine bool
	// MinReplicas runs them with redislock.Options.MinReplicas
	// (locking.redis.min_replicas).
	MinReplicas int
	// Postgres runs the replicas over PostgreSQL (pglock) through one
	// proxy each instead of over redis-server (which still holds the
	// fenced effects); the faults are PostgresFaults.
	Postgres bool
	// Etcd runs the replicas over a cluster of three etcd members
	// (etcdlock) through one proxy per replica and member, with the
	// members' peer traffic through proxies too (a member can be cut off
	// from the others); the faults are EtcdFaults.
	Etcd bool
	// EtcdExpiryQuarantine runs the replicas' etcd providers with
	// etcdlock.Options.ExpiryQuarantine (locking.etcd.expiry_quarantine).
	EtcdExpiryQuarantine bool
	// Process runs each replica as one leadership.Process (the shape a
	// leadershipfx service has): electors through the process's gates and
	// clock, each role's worker attached as its Work, Process.Leave at
	// shutdown. Default: one NewElector per role.
	Process bool
	// Balance, with Process, makes each replica's electors one balance
	// group, so roles move between replicas by named handovers while the
	// faults run.
	Balance bool
}

// CheckFaultKinds reports an error naming the first of cfg.Faults that
// cfg's backend cannot inject (standalone, Cluster or Sentinel kinds).
func CheckFaultKinds(cfg Config) error {
	known := StandaloneFaults
	switch {
	case cfg.Cluster:
		known = clusterKinds
	case cfg.Sentinel:
		known = sentinelKinds
	case cfg.Postgres:
		known = PostgresFaults
	case cfg.Etcd:
		known = EtcdFaults
	}
	for _, k := range cfg.Faults {
		if !slices.Contains(known, k) {
			return fmt.Errorf("chaos: fault kind %q is not one of %v", k, known)
		}
	}
	return nil
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Replicas: 5, Roles: 20,
		Lease: time.Second, RenewInterval: 250 * time.Millisecond, RetryInterval: 250 * time.Millisecond,
		Slice: 20 * time.Millisecond, Duration: 60 * time.Second, Seed: 1,
	}
}

// Namespace is the lock namespace of every run.
const Namespace = "chaos"

// LockKey is the provider key of a role with the default key format.
func LockKey(role string) string { return Namespace + ":lock:leader:" + role }

// Result is a run's outcome.
type Result struct {
	Config   Config
	History  History
	Report   *Report
	Failover *FailoverStats // nil for a standalone run
}

// Limits returns the checker's limits for cfg.
func (c Config) Limits() Limits {
	race := c.ExpiryRace
	switch {
	case race == 0:
		race = DefaultExpiryRace(c.Lease)
	case race < 0:
		race = 0
	}
	lim := Limits{Lease: c.Lease, RetryInterval: c.RetryInterval, ExpiryRace: race, Slice: c.Slice}
	if c.Process && c.Balance {
		lim.BalanceWait = c.RetryInterval
	}
	if c.Etcd {
		lim.ExpiryLag = EtcdExpiryLag
		if c.EtcdExpiryQuarantine {
			lim.ExpiryWait = c.Lease.Round(time.Second)
			if lim.ExpiryWait < c.Lease {
				lim.ExpiryWait += time.Second
			}
		}
	}
	return lim
}

// run is the state of one run.
type run struct {
	cfg      Config
	rng      *rand.Rand
	log      io.Writer
	fleet    *fleet
	redis    *RedisServer // standalone
	cluster  *redisCluster
	sentinel *redisSentinel
	pg       *postgresBackend
	etcd     *etcdBackend
	proxies  []*Proxy   // one per replica (standalone Redis, PostgreSQL)
	links    [][]*Proxy // per replica, one per etcd member (etcd)
	// allProxies are the etcd runs' proxies, for close.
	allProxies []*Proxy
	client     redis.UniversalClient // direct, for leader lookups
	effects    *redistest.Server     // the effects store: never faulted
	faults     []Fault
	stats      *FailoverStats
	// opLock is the lock of the operator's requests (FaultHandOver),
	// closed by close when ownsOpLock (etcd runs reuse their backend's).
	opLock     *locking.DistributedLock
	ownsOpLock bool
}

// Run builds the replica, starts the backend, the proxies and the
// replicas, injects faults for cfg.Duration, shuts everything down and
// checks the history. The error reports a harness failure (e.g. no
// redis-server, wrapping redistest.ErrNoServer); the verdict is in
// Result.Report.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Dir == "" {
		return nil, errors.New("chaos: Config.Dir is required")
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if len(cfg.Faults) == 0 {
		cfg.Faults = StandaloneFaults
		if cfg.Cluster {
			cfg.Faults = ClusterFaults
		}
		if cfg.Sentinel {
			cfg.Faults = SentinelFaults
		}
		if cfg.Postgres {
			cfg.Faults = PostgresFaults
		}
		if cfg.Etcd {
			cfg.Faults = EtcdFaults
		}
	}
	if _, err := redisBinary(); err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), log: cfg.Log}
	r.logf("chaos: seed %d, %d replicas x %d roles, lease %v renew %v retry %v, %v of faults %v, dir %s",
		cfg.Seed, cfg.Replicas, cfg.Roles, cfg.Lease, cfg.RenewInterval, cfg.RetryInterval, cfg.Duration, cfg.Faults, cfg.Dir)
	bin, err := BuildReplica(ctx, cfg.Dir, cfg.Race)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := r.startBackend(); err != nil {
		return nil, err
	}
	eff, stopEffects, err := redistest.StartMain()
	if err != nil {
		return nil, fmt.Errorf("chaos: effects store: %w", err)
	}
	defer stopEffects()
	r.effects = eff
	r.fleet = newFleet(bin, cfg.Dir, cfg, r.replicaAddrs, eff.Addr())
	for i := range cfg.Replicas {
		if _, err := r.fleet.start(i); err != nil {
			return nil, err
		}
	}
	from, err := r.waitAllLed(ctx, 30*time.Second)
	if err != nil {
		r.fleet.stopAll(15 * time.Second)
		return nil, err
	}
	r.logf("chaos: every role led at %s", from.UTC().Format("15:04:05.000"))
	r.inject(ctx, from.Add(cfg.Duration))
	// Let the last fault's recovery show before measuring ends.
	sleep(ctx, cfg.Limits().RecoveryBound())
	to := time.Now()
	r.fleet.stopAll(15 * time.Second)
	r.logf("chaos: replicas stopped")

	recs, err := ReadDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	roles := make([]string, cfg.Roles)
	for i := range roles {
		roles[i] = RoleName(i)
	}
	effects, err := readEffects(eff.Addr(), roles)
	if err != nil {
		return nil, err
	}
	h := History{Roles: roles, Records: recs, Effects: effects, Faults: r.faults, Incarnations: r.fleet.incarnations(), From: from, To: to}
	if err := writeJSON(filepath.Join(cfg.Dir, effectsFile), h.Effects); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(cfg.Dir, "faults.json"), h.Faults); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(cfg.Dir, "incarnations.json"), h.Incarnations); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(cfg.Dir, "run.json"), runFile{Roles: roles, From: from, To: to, Limits: cfg.Limits(), Seed: cfg.Seed}); err != nil {
		return nil, err
	}
	res := &Result{Config: cfg, History: h, Report: Check(h, cfg.Limits()), Failover: r.stats}
	if r.stats != nil {
		r.stats.fill(res.Report)
	}
	return res, nil
}

// runFile is what a run saves besides the histories, so Recheck can judge
// it again.
type runFile struct {
	Roles    []string
	From, To time.Time
	Limits   Limits
	Seed     uint64
}

// effectsFile is where a run saves the effect logs read from the effects
// store (role -> entries in store order), for Recheck.
const effectsFile = "effects.json"

// readEffects reads every role's effect log from the effects store at
// addr, in the order the store accepted the entries.
func readEffects(addr string, roles []string) (map[string][]string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 30 * time.Second})
	defer c.Close()
	gate, err := fencing.New(c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := make(map[string][]string, len(roles))
	for _, role := range roles {
		entries, err := gate.Entries(ctx, role)
		if err != nil {
			return nil, fmt.Errorf("chaos: read the effects of %s: %w", role, err)
		}
		out[role] = entries
	}
	return out, nil
}

// Recheck loads a finished run from dir (histories, faults.json,
// incarnations.json, run.json, effects.json) and judges it again with the run's limits,
// except ExpiryRace when expiryRace is nonzero (negative: strict, which
// also turns off the stalled-leader classification).
func Recheck(dir string, expiryRace time.Duration) (*Report, error) {
	var rf runFile
	var h History
	for name, v := range map[string]any{"run.json": &rf, "faults.json": &h.Faults, "incarnations.json": &h.Incarnations} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("chaos: recheck: %w", err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			return nil, fmt.Errorf("chaos: recheck %s: %w", name, err)
		}
	}
	recs, err := ReadDir(dir)
	if err != nil {
		return nil, err
	}
	// Runs recorded before fenced effects have no effects file.
	if b, err := os.ReadFile(filepath.Join(dir, effectsFile)); err == nil {
		if err := json.Unmarshal(b, &h.Effects); err != nil {
			return nil, fmt.Errorf("chaos: recheck %s: %w", effectsFile, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("chaos: recheck: %w", err)
	}
	h.Roles, h.Records, h.From, h.To = rf.Roles, recs, rf.From, rf.To
	lim := rf.Limits
	if lim.Slice == 0 {
		lim.Slice = DefaultConfig().Slice // runs recorded before Limits had Slice used the default
	}
	if expiryRace != 0 {
		lim.ExpiryRace = max(expiryRace, 0)
	}
	if expiryRace < 0 {
		lim.Slice = 0 // strict: no stall evidence excuses an overlap either
	}
	return Check(h, lim), nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func (r *run) logf(format string, args ...any) {
	fmt.Fprintf(r.log, time.Now().UTC().Format("15:04:05.000")+" "+format+"\n", args...)
}

// startBackend starts redis-server (or the cluster, the Sentinel set or
// PostgreSQL) and the proxies.
func (r *run) startBackend() error {
	if r.cfg.Etcd {
		b, err := startEtcd()
		if err != nil {
			return err
		}
		r.etcd = b
		return r.startEtcdProxies()
	}
	if r.cfg.Postgres {
		b, err := startPostgres()
		if err != nil {
			return err
		}
		r.pg = b
		return r.startProxies(b.addr())
	}
	if r.cfg.Cluster {
		c, err := startCluster(r.cfg.Dir)
		if err != nil {
			return err
		}
		r.cluster = c
		r.client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.addrs(), ReadTimeout: time.Second, DialTimeout: time.Second})
		r.stats = &FailoverStats{Backend: "cluster"}
		return nil
	}
	if r.cfg.Sentinel {
		rs, err := startSentinelSet(r.cfg.Dir)
		if err != nil {
			return err
		}
		r.sentinel = rs
		r.client = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: SentinelMaster, SentinelAddrs: rs.sentinelAddrs(),
			ReadTimeout: time.Second, DialTimeout: time.Second})
		r.stats = &FailoverStats{Backend: "sentinel"}
		return nil
	}
	s, err := StartRedis(r.cfg.Dir, false)
	if err != nil {
		return err
	}
	r.redis = s
	r.client = redis.NewClient(&redis.Options{Addr: s.Addr(), ReadTimeout: time.Second, DialTimeout: time.Second, MaxRetries: -1})
	return r.startProxies(s.Addr())
}

// startProxies starts one proxy per replica in front of addr.
func (r *run) startProxies(addr string) error {
	for range r.cfg.Replicas {
		p, err := NewProxy(addr)
		if err != nil {
			return err
		}
		r.proxies = append(r.proxies, p)
	}
	return nil
}

func (r *run) replicaAddrs(i int) string {
	if r.cluster != nil {
		return strings.Join(r.cluster.addrs(), ",")
	}
	if r.sentinel != nil {
		return r.sentinel.replicaAddrs()
	}
	if r.etcd != nil {
		return r.etcdEndpoints(i)
	}
	return r.proxies[i].Addr()
}

// setLink sets the mode of every proxy between replica i and the backend.
func (r *run) setLink(i int, m Mode, delay time.Duration) {
	if r.etcd != nil {
		for _, p := range r.links[i] {
			p.Set(m, delay)
		}
		return
	}
	r.proxies[i].Set(m, delay)
}

func (r *run) close() {
	if r.ownsOpLock {
		_ = r.opLock.Close()
	}
	if r.client != nil {
		_ = r.client.Close()
	}
	for _, p := range r.proxies {
		_ = p.Close()
	}
	for _, p := range r.allProxies {
		_ = p.Close()
	}
	if r.redis != nil {
		r.redis.Stop()
	}
	if r.cluster != nil {
		r.cluster.stop()
	}
	if r.sentinel != nil {
		r.sentinel.stop()
	}
	if r.pg != nil {
		r.pg.stop()
	}
	if r.etcd != nil {
		r.etcd.stop()
	}
}

// holder returns the replica leading role according to the backend.
func (r *run) holder(ctx context.Context, role string) (int, string, bool) {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var v string
	switch {
	case r.pg != nil:
		var ok bool
		if v, ok = r.pg.holderValue(cctx, LockKey(role)); !ok {
			return 0, "", false
		}
	case r.etcd != nil:
		var ok bool
		if v, ok = r.etcd.holderValue(cctx, LockKey(role)); !ok {
			return 0, "", false
		}
	default:
		var err error
		if v, err = r.client.Get(cctx, LockKey(role)).Result(); err != nil {
			return 0, "", false
		}
	}
	// The stored value is "<32 hex token>:<owner>".
	_, owner, ok := strings.Cut(v, ":")
	if !ok {
		return 0, "", false
	}
	i, ok := replicaOf(owner)
	return i, owner, ok && i < r.cfg.Replicas
}

// waitAllLed waits until every role has a holder.
func (r *run) waitAllLed(ctx context.Context, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		missing := ""
		for i := range r.cfg.Roles {
			if _, _, ok := r.holder(ctx, RoleName(i)); !ok {
				missing = RoleName(i)
				break
			}
		}
		if missing == "" {
			return time.Now(), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("chaos: %s has no leader %v after the replicas started (see %s/r*.log)", missing, timeout, r.cfg.Dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leader picks a random replica that currently leads some role.
func (r *run) leader(ctx context.Context) (int, bool) {
	for _, k := range r.rng.Perm(r.cfg.Roles) {
		if i, _, ok := r.holder(ctx, RoleName(k)); ok && r.fleet.current(i) != nil {
			return i, true
		}
	}
	return 0, false
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// inject injects faults until the deadline, with a quiet period of one
// recovery bound plus up to a lease between faults. Kinds are drawn in
// rounds: every kind once per round, in a seeded random order, so even a
// short run covers every kind.
func (r *run) inject(ctx context.Context, deadline time.Time) {
	order := &faultOrder{rng: r.rng, kinds: r.cfg.Faults}
	for seq := 1; time.Now().Before(deadline) && ctx.Err() == nil; seq++ {
		kind := order.next()
		f, err := r.injectOne(ctx, seq, kind)
		if err != nil {
			r.logf("chaos: fault #%d %s not injected: %v", seq, kind, err)
		} else {
			r.faults = append(r.faults, f)
			r.logf("chaos: fault %s", f)
		}
		sleep(ctx, r.cfg.Limits().RecoveryBound()+time.Duration(r.rng.Int64N(int64(r.cfg.Lease))))
		r.settle(ctx)
	}
}

// faultOrder draws fault kinds in rounds: every kind once per round, in
// an order drawn from rng.
type faultOrder struct {
	rng   *rand.Rand
	kinds []FaultKind
	round []int
}

func (o *faultOrder) next() FaultKind {
	if len(o.round) == 0 {
		o.round = o.rng.Perm(len(o.kinds))
	}
	k := o.kinds[o.round[0]]
	o.round = o.round[1:]
	return k
}

// restartTimeout bounds a graceful restart's wait for the replica to
// exit: its stops are bounded by 5 s, its goroutines' wind-down by 3 s.
const restartTimeout = 15 * time.Second

// longerThanLease is a duration from 1.2 to 2 leases.
func (r *run) longerThanLease() time.Duration {
	l := r.cfg.Lease
	return l + l/5 + time.Duration(r.rng.Int64N(int64(l*4/5)))
}

func (r *run) injectOne(ctx context.Context, seq int, kind FaultKind) (Fault, error) {
	f := Fault{Seq: seq, Kind: kind, Target: -1}
	needLeader := kind == FaultKill || kind == FaultRestart || kind == FaultPause || kind == FaultBlackhole || kind == FaultDelay || kind == FaultReset
	if needLeader {
		i, ok := r.leader(ctx)
		if !ok {
			return f, errors.New("no replica leads a role")
		}
		f.Target = i
		if p := r.fleet.current(i); p != nil {
			f.Identity = p.inc.Identity
		}
	}
	var err error
	switch kind {
	case FaultKill:
		f.Start = time.Now()
		if _, err = r.fleet.kill(f.Target); err != nil {
			return f, err
		}
		// Let the others take over without the victim, then restart it.
		sleep(ctx, r.cfg.Limits().RecoveryBound())
		var id string
		id, err = r.fleet.start(f.Target)
		f.Heal = time.Now()
		f.Detail = "restarted as " + id
	case FaultRestart:
		f.Start = time.Now()
		var old, id string
		old, id, err = r.fleet.restart(f.Target, restartTimeout)
		f.Heal = time.Now()
		f.Detail = fmt.Sprintf("%s left, restarted as %s", old, id)
	case FaultPause:
		d := r.longerThanLease()
		f.Start = time.Now()
		if _, err = r.fleet.signal(f.Target, syscall.SIGSTOP); err != nil {
			return f, err
		}
		sleep(ctx, d)
		// Heal is taken before SIGCONT: the process cannot run (and write a
		// record) before it, so the paused window is never understated.
		f.Heal = time.Now()
		_, err = r.fleet.signal(f.Target, syscall.SIGCONT)
	case FaultRedisRestart:
		f.Start = time.Now()
		f.LostState, f.Unavailable = true, true
		err = r.redis.Restart()
		f.Heal = time.Now()
	case FaultRedisDown:
		d := r.longerThanLease()
		f.Start = time.Now()
		f.LostState, f.Unavailable = true, true
		r.redis.Kill()
		sleep(ctx, d)
		err = r.redis.Restart()
		f.Heal = time.Now()
	case FaultBlackhole:
		d := r.longerThanLease()
		f.Start = time.Now()
		r.setLink(f.Target, Blackhole, 0)
		sleep(ctx, d)
		r.setLink(f.Target, Pass, 0)
		f.Heal = time.Now()
	case FaultDelay:
		delay := r.cfg.Lease/10 + time.Duration(r.rng.Int64N(int64(r.cfg.Lease/2)))
		f.Delay, f.Detail = delay, fmt.Sprintf("delay %v", delay)
		f.Start = time.Now()
		r.setLink(f.Target, Delay, delay)
		sleep(ctx, 2*r.cfg.Lease)
		r.setLink(f.Target, Pass, 0)
		f.Heal = time.Now()
	case FaultReset:
		d := 100*time.Millisecond + time.Duration(r.rng.Int64N(int64(r.cfg.Lease)))
		f.Start = time.Now()
		r.setLink(f.Target, Reset, 0)
		sleep(ctx, d)
		r.setLink(f.Target, Pass, 0)
		f.Heal = time.Now()
	case FaultLoad:
		f.Detail = fmt.Sprintf("%d spinning goroutines", runtime.NumCPU())
		f.Start = time.Now()
		burn(ctx, runtime.NumCPU(), 2*r.cfg.Lease)
		f.Heal = time.Now()
	case FaultFailover, FaultKillMaster, FaultClusterLagKillMaster:
		err = r.clusterFault(ctx, &f)
	case FaultSentinelFailover, FaultSentinelKillMaster, FaultSentinelLagKillMaster:
		err = r.sentinelFault(ctx, &f)
	case FaultPostgresRestartFast, FaultPostgresRestartImmediate, FaultPostgresDown:
		err = r.postgresFault(ctx, &f)
	case FaultEtcdMemberKill, FaultEtcdMemberPause, FaultEtcdPartition, FaultEtcdLeaderKill, FaultEtcdRestart:
		err = r.etcdFault(ctx, &f)
	case FaultHandOver:
		err = r.handOverFault(ctx, &f)
	default:
		return f, fmt.Errorf("unknown fault kind %q", kind)
	}
	return f, err
}

// burn keeps n goroutines spinning for d.
func burn(ctx context.Context, n int, d time.Duration) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := uint64(1)
			for {
				select {
				case <-stop:
					return
				default:
				}
				for range 10000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
		}()
	}
	sleep(ctx, d)
	close(stop)
	wg.Wait()
}
