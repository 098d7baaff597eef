// Command replica is one process of the chaos harness (package
// test/chaos): it elects every role over Redis (or PostgreSQL, with
// -postgres, or etcd, with -etcd) through its own proxy and,
// while it leads a role, does work in short slices and appends one record
// per slice to its history file. The harness builds it with go build,
// starts several of them and injects faults.
//
// # Work
//
// Each slice calls leadership.Assert on the term's Token first (the
// Assert-checked effect is the instant it returns nil), then works until
// the slice length passes or the Token ends, then writes its fenced effect:
// fencing.Gate.Append of "identity term fence seq" to the role's log in the
// effects store (a separate redis-server that the harness never faults),
// with the fence from leadership.FenceFrom(Token). The record carries the
// gate's answer. A refused (stale) write ends the term's work.
//
// # Shutdown
//
// On SIGTERM or SIGINT it stops every elector (releasing its leases),
// closes the lock (its provider) and the client, waits for its goroutines, and
// writes an exit record with runtime.NumGoroutine before and after, so the
// harness can detect leaks. Any other exit is a crash.
//
// # As a Process
//
// With -process the replica is one leadership.Process, as a service wired
// with leadershipfx is: its electors come from Process.Elector (calls
// through the process's gates, wakes from its clock), each role's worker
// is attached as the role's Work, so the leave cancels and waits for it
// before the lease is released, and the shutdown is Process.Leave. With
// -balance too, the process's electors form one balance group, so roles
// move between replicas by named handovers while the faults run.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/hostloom/hostloom/backends/postgres/pglockbuild"
	"github.com/hostloom/hostloom/core/fencing"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
	"github.com/hostloom/hostloom/core/locking/pglock"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/test/chaos"
)

type config struct {
	replica              int
	identity             string
	addrs                string
	cluster              bool
	sentinel             string
	roles                int
	lease                time.Duration
	renew                time.Duration
	retry                time.Duration
	slice                time.Duration
	out                  string
	namespace            string
	effects              string
	verbose              bool
	quarantine           bool
	minReplicas          int
	postgres             bool
	etcd                 bool
	etcdExpiryQuarantine bool
	process              bool
	balance              bool
}

func main() {
	var c config
	flag.IntVar(&c.replica, "replica", 0, "replica index")
	flag.StringVar(&c.identity, "id", "", "incarnation identity, e.g. r2.3")
	flag.StringVar(&c.addrs, "addrs", "", "comma-separated Redis addresses (the proxy)")
	flag.BoolVar(&c.cluster, "cluster", false, "use a Redis Cluster client")
	flag.StringVar(&c.sentinel, "sentinel", "", "master name: -addrs are sentinels (go-redis failover client)")
	flag.IntVar(&c.roles, "roles", 20, "number of roles")
	flag.DurationVar(&c.lease, "lease", time.Second, "elector lease")
	flag.DurationVar(&c.renew, "renew", 250*time.Millisecond, "elector renew interval")
	flag.DurationVar(&c.retry, "retry", 250*time.Millisecond, "elector retry interval")
	flag.DurationVar(&c.slice, "slice", 20*time.Millisecond, "length of one work slice")
	flag.StringVar(&c.out, "out", "", "history file (appended)")
	flag.StringVar(&c.namespace, "namespace", "chaos", "lock namespace")
	flag.StringVar(&c.effects, "effects", "", "address of the effects store (redis-server) for the fenced effects")
	flag.BoolVar(&c.verbose, "v", false, "log elector transitions")
	flag.IntVar(&c.minReplicas, "min-replicas", 0, "replicas that must acknowledge an acquisition or renewal (redislock.Options.MinReplicas)")
	flag.BoolVar(&c.postgres, "postgres", false, "-addrs is a PostgreSQL server (the proxy): elect over pglock")
	flag.BoolVar(&c.etcd, "etcd", false, "-addrs are etcd client URLs (the proxies, one per member): elect over etcdlock")
	flag.BoolVar(&c.etcdExpiryQuarantine, "etcd-expiry-quarantine", false, "with -etcd: a key freed by its lease's end waits a lease (etcdlock.Options.ExpiryQuarantine)")
	flag.BoolVar(&c.quarantine, "quarantine", false, "refuse acquisitions for a lease after the server lost its state (redislock.Options.Quarantine)")
	flag.BoolVar(&c.process, "process", false, "run as one leadership.Process: electors from Process.Elector, each worker attached as its role's Work, Process.Leave at shutdown")
	flag.BoolVar(&c.balance, "balance", false, "with -process: the process's electors form a balance group (ProcessOptions.Balance)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		os.Exit(1)
	}
}

// history appends records to the history file, one write per line so a
// kill loses at most the line being written.
type history struct {
	mu    sync.Mutex
	f     *os.File
	start time.Time
}

func (h *history) write(r chaos.Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err = h.f.Write(b)
	return err
}

// mono is t's offset from the incarnation's start on the monotonic clock.
func (h *history) mono(t time.Time) int64 { return int64(t.Sub(h.start)) }

func run(c config) error {
	start := time.Now()
	if c.identity == "" || c.addrs == "" || c.out == "" || c.effects == "" {
		return errors.New("-id, -addrs, -effects and -out are required")
	}
	f, err := os.OpenFile(c.out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	h := &history{f: f, start: start}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sig)
	baseline := runtime.NumGoroutine()
	if err := h.write(chaos.Record{Kind: chaos.KindStart, Replica: c.replica, Identity: c.identity, PID: os.Getpid(), Start: start.UnixNano()}); err != nil {
		return err
	}

	level := zapcore.WarnLevel
	if c.verbose {
		level = zapcore.InfoLevel
	}
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.Lock(os.Stderr), level))

	// Timeouts well under the lease: the elector's own deadlines govern
	// (ContextTimeoutEnabled), these only bound what has no deadline.
	timeout := c.lease / 2
	// The effects store: never faulted, no retries (one attempt per
	// effect, so the store and the records can be compared exactly).
	effects := redis.NewClient(&redis.Options{Addr: c.effects, DialTimeout: c.lease, ReadTimeout: c.lease,
		WriteTimeout: c.lease, MaxRetries: -1, PoolSize: c.roles + 2})
	gate, err := fencing.New(effects)
	if err != nil {
		return err
	}
	provider, closeBackend, err := newProvider(c, timeout)
	if err != nil {
		return err
	}
	lo := locking.DefaultOptions()
	lo.Namespace = c.namespace
	lock, err := locking.New(provider, lo)
	if err != nil {
		return err
	}
	opts := leadership.DefaultOptions()
	opts.Lease, opts.RenewInterval, opts.RetryInterval = c.lease, c.renew, c.retry

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	workErr := make(chan error, c.roles)
	var workers sync.WaitGroup
	stop := stopElectors
	if c.process {
		stop, err = startProcess(ctx, c, lock, opts, logger, h, gate, workErr)
	} else {
		stop, err = startElectors(ctx, c, lock, opts, logger, h, gate, workErr, &workers)
	}
	if err != nil {
		return err
	}

	var runErr error
	select {
	case <-sig:
	case runErr = <-workErr:
	}
	// Stop every elector (cancels its token, releases its lease), then the
	// workers, then the provider and the client.
	for _, err := range stop() {
		// A release that fails because Redis is unreachable is not a
		// crash: the lease then expires on its own (E8).
		logger.Warn("ReplicaStopRelease", zap.Error(err))
	}
	cancel()
	workers.Wait()
	if err := lock.Close(); err != nil {
		logger.Warn("ReplicaProviderClose", zap.Error(err))
	}
	if err := closeBackend(); err != nil {
		logger.Warn("ReplicaClientClose", zap.Error(err))
	}
	if err := effects.Close(); err != nil {
		logger.Warn("ReplicaEffectsClose", zap.Error(err))
	}
	if runErr != nil {
		return runErr
	}
	// Goroutines wind down asynchronously (closed connections, timers):
	// give them a moment before calling it a leak.
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(3 * time.Second); n > baseline && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(20 * time.Millisecond)
	}
	exit := chaos.Record{Kind: chaos.KindExit, Replica: c.replica, Identity: c.identity, PID: os.Getpid(), Goroutines: n, Baseline: baseline}
	if n > baseline {
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
		exit.Leaked = buf.String()
	}
	return h.write(exit)
}

// stopTimeout bounds the shutdown's stops: a release that cannot reach
// the backend leaves the lease to expire on its own (E8).
const stopTimeout = 5 * time.Second

// startElectors makes one elector per role with NewElector, starts a
// worker for each on ctx and starts the electors. The function it returns
// stops every elector and reports what their releases returned, but a
// lease already lost.
func startElectors(ctx context.Context, c config, lock locking.Lock, opts leadership.Options, logger *zap.Logger,
	h *history, gate *fencing.Gate, workErr chan<- error, workers *sync.WaitGroup) (func() []error, error) {
	var electors []*leadership.Elector
	for i := range c.roles {
		role := chaos.RoleName(i)
		e, err := leadership.NewElector(role, lock, opts, leadership.WithIdentity(c.identity), leadership.WithLogger(logger))
		if err != nil {
			return nil, err
		}
		electors = append(electors, e)
		workers.Add(1)
		go func() {
			defer workers.Done()
			if err := work(ctx, e, h, gate, c); err != nil {
				workErr <- err
			}
		}()
	}
	for _, e := range electors {
		if err := e.Start(ctx); err != nil {
			return nil, err
		}
	}
	return func() []error {
		var (
			mu   sync.Mutex
			errs []error
			wg   sync.WaitGroup
		)
		for _, e := range electors {
			wg.Go(func() {
				sctx, scancel := context.WithTimeout(context.Background(), stopTimeout)
				defer scancel()
				if err := e.Stop(sctx); err != nil && !errors.Is(err, locking.ErrLeaseLost) {
					mu.Lock()
					errs = append(errs, fmt.Errorf("stop %s: %w", e.Role(), err))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return errs
	}, nil
}

// stopElectors is the stop of a replica that started nothing.
func stopElectors() []error { return nil }

// startProcess makes one leadership.Process with an elector per role,
// attaches each role's worker as its Work and starts the process. The
// function it returns is the process's leave, then a wait for every
// worker: the leave cancels them and waits for each at most until its
// ctx ends, and the lock must outlive them.
func startProcess(ctx context.Context, c config, lock locking.Lock, opts leadership.Options, logger *zap.Logger,
	h *history, gate *fencing.Gate, workErr chan<- error) (func() []error, error) {
	p, err := leadership.NewProcess(lock, leadership.ProcessOptions{Identity: c.identity, Balance: c.balance, Logger: logger})
	if err != nil {
		return nil, err
	}
	var works []leadership.Work
	for i := range c.roles {
		role := chaos.RoleName(i)
		e, err := p.Elector(role, opts, leadership.WithLogger(logger))
		if err != nil {
			return nil, err
		}
		w := leadership.GoWork("worker", "slices", func(wctx context.Context) {
			if err := work(wctx, e, h, gate, c); err != nil {
				workErr <- err
			}
		})
		if err := p.Attach(role, w); err != nil {
			return nil, err
		}
		works = append(works, w)
	}
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	return func() []error {
		sctx, scancel := context.WithTimeout(context.Background(), stopTimeout)
		defer scancel()
		var errs []error
		if err := p.Leave(sctx); err != nil {
			errs = append(errs, fmt.Errorf("leave: %w", err))
		}
		for _, w := range works {
			_ = w.Stop(context.Background()) // returns once the worker has
		}
		return errs
	}, nil
}

// newProvider returns the lock provider c selects and the function that
// closes its client (the provider itself is closed with its lock).
func newProvider(c config, timeout time.Duration) (locking.Provider, func() error, error) {
	addrs := strings.Split(c.addrs, ",")
	if c.etcd {
		// The client a service gets from locking.etcd (etcdlockbuild),
		// with keep-alive probes so that a paused member's or a
		// blackholed link's connections are found dead within seconds
		// and the requests move to another member.
		client, err := clientv3.New(clientv3.Config{Endpoints: addrs, DialTimeout: timeout,
			DialKeepAliveTime: time.Second, DialKeepAliveTimeout: time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, nil, err
		}
		p, err := etcdlock.New(client, etcdlock.Options{ExpiryQuarantine: c.etcdExpiryQuarantine})
		if err != nil {
			_ = client.Close()
			return nil, nil, err
		}
		return p, client.Close, nil
	}
	if c.postgres {
		// The pool a service gets by default: pgx's pool size (pglock
		// sends the acquisitions and renewals that fall due together in
		// one round trip, so two connections carry them for every role)
		// and pglockbuild's connect timeout, not one under the lease. The
		// pool opens connections detached from the statements' contexts,
		// so the elector's deadlines govern without it; a short one
		// abandons attempts the server has already queued (the kernel
		// completes the handshake), and a pool of one connection per role
		// dialled twenty at a time per replica: after a restart those
		// filled the server's accept queue faster than it started
		// backends for them, or all its connection slots, and nobody could
		// connect for tens of seconds.
		pc, err := pgxpool.ParseConfig(fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&connect_timeout=%d",
			addrs[0], int(pglockbuild.DefaultConnectTimeout/time.Second)))
		if err != nil {
			return nil, nil, err
		}
		pool, err := pgxpool.NewWithConfig(context.Background(), pc)
		if err != nil {
			return nil, nil, err
		}
		p, err := pglock.New(pool, pglock.Options{})
		if err != nil {
			pool.Close()
			return nil, nil, err
		}
		return p.ForLock(), func() error { pool.Close(); return nil }, nil
	}
	// Timeouts well under the lease: the elector's own deadlines govern
	// (ContextTimeoutEnabled), these only bound what has no deadline.
	var client redis.UniversalClient
	switch {
	case c.sentinel != "":
		client = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: c.sentinel, SentinelAddrs: addrs, Dialer: redislock.Dialer(nil), DialTimeout: timeout,
			ReadTimeout: timeout, WriteTimeout: timeout, ContextTimeoutEnabled: true, MaxRetries: -1})
	case c.cluster:
		client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Dialer: redislock.Dialer(nil), DialTimeout: timeout, ReadTimeout: timeout,
			WriteTimeout: timeout, ContextTimeoutEnabled: true, MaxRetries: -1})
	default:
		client = redis.NewClient(&redis.Options{Addr: addrs[0], Dialer: redislock.Dialer(nil), DialTimeout: timeout, ReadTimeout: timeout,
			WriteTimeout: timeout, ContextTimeoutEnabled: true, MaxRetries: -1})
	}
	provider, err := redislock.NewWithOptions(client, redislock.Options{Quarantine: c.quarantine, MinReplicas: c.minReplicas})
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	return provider, client.Close, nil
}

// work does slices of work for e's role while it leads. Before each slice
// it calls leadership.Assert on the term's Token; the slice ends after
// c.slice or the moment the Token is done; then the slice's fenced effect
// goes through gate with the term's fence, whatever the Token says by then
// (the gate, not the worker, decides whether a deposed leader's write
// lands).
func work(ctx context.Context, e *leadership.Elector, h *history, gate *fencing.Gate, c config) error {
	timer := time.NewTimer(c.slice)
	defer timer.Stop()
	var seq uint64
	for {
		if err := e.WaitForLeadership(ctx); err != nil {
			return nil // shutting down
		}
		tok := e.Token()
		term := e.Term()
		fence, fenced := leadership.FenceFrom(tok)
		current := e.Fence()  // 0 once the term has ended
		if tok != e.Token() { // a new term began in between: read again
			continue
		}
		if !fenced && leadership.Assert(tok) != nil {
			continue // not a term's Token: the term ended before it was read
		}
		if !fenced {
			return fmt.Errorf("role %s term %d: leadership.FenceFrom(Token()) reports no fence", e.Role(), term)
		}
		if current != 0 && current != fence {
			return fmt.Errorf("role %s term %d: Elector.Fence() = %d but FenceFrom(Token()) = %d", e.Role(), term, current, fence)
		}
		for {
			// The slice starts before the check, so a record never claims
			// less time than the work took.
			s := time.Now()
			if leadership.Assert(tok) != nil || ctx.Err() != nil {
				break
			}
			checked := time.Now()
			timer.Reset(c.slice)
			select {
			case <-tok.Done():
			case <-ctx.Done():
			case <-timer.C:
			}
			end := time.Now()
			if !timer.Stop() {
				select { // drain a fired timer before the next Reset
				case <-timer.C:
				default:
				}
			}
			seq++
			rec := chaos.Record{Kind: chaos.KindWork, Replica: c.replica, Identity: c.identity, Role: e.Role(), Term: term,
				Start: s.UnixNano(), End: end.UnixNano(), MonoStart: h.mono(s), MonoEnd: h.mono(end),
				Checked: checked.UnixNano(), Fence: fence, Seq: seq}
			stale := effect(gate, &rec, c.lease)
			if err := h.write(rec); err != nil {
				return fmt.Errorf("write history: %w", err)
			}
			if stale {
				break // a successor has written: this term is over
			}
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// effect writes rec's fenced effect through gate and records the outcome
// in rec; it reports whether the gate refused the fence as stale. The
// write has its own timeout, not the Token: a slice that ended because its
// term ended still delivers its result, and the gate judges it.
func effect(gate *fencing.Gate, rec *chaos.Record, timeout time.Duration) (stale bool) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	entry := chaos.EffectEntry{Identity: rec.Identity, Term: rec.Term, Fence: rec.Fence, Seq: rec.Seq}
	rec.EffectAt = time.Now().UnixNano()
	err := gate.Append(ctx, rec.Role, rec.Fence, entry.String())
	rec.EffectDone = time.Now().UnixNano()
	switch {
	case err == nil:
		rec.Effect = chaos.EffectAccepted
	case errors.Is(err, fencing.ErrStale):
		rec.Effect = chaos.EffectStale
		return true
	default:
		rec.Effect = chaos.EffectErrorPrefix + err.Error()
	}
	return false
}
