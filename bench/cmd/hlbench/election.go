package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostloom/hostloom/bench/internal/k8slock"
	"github.com/hostloom/hostloom/bench/internal/locks"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	hlredis "github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/redis/go-redis/v9"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// settings is one set of election timings, applied to both libraries.
type settings struct {
	Name                  string
	Lease, Renew, Retry   time.Duration
	ClientGoRenewDeadline time.Duration
}

// Both sets use client-go's RenewDeadline = RenewInterval where client-go
// accepts it; client-go requires RenewDeadline > 1.2 × RetryPeriod, so the
// fast set gives it 500 ms (2 × 250 ms).
var (
	defaultSettings = settings{Name: "default 15s/5s/2s", Lease: 15 * time.Second, Renew: 5 * time.Second, Retry: 2 * time.Second, ClientGoRenewDeadline: 5 * time.Second}
	fastSettings    = settings{Name: "fast 1s/250ms/250ms", Lease: time.Second, Renew: 250 * time.Millisecond, Retry: 250 * time.Millisecond, ClientGoRenewDeadline: 500 * time.Millisecond}
)

// candidate is one replica's elector for one role.
type candidate interface {
	start() error
	// stop ends the elector gracefully (releasing the lease).
	stop()
	// crash cuts the elector off from Redis without releasing, as a dead
	// process would, and returns when its lease expires on the server.
	crash(ctx context.Context) (expiry time.Time, err error)
}

// electionLib creates candidates for one library.
type electionLib interface {
	name() string
	// replica returns the shared state of one replica (one process: one
	// Redis client).
	// writes counts the requests the replica sends (nil: not counted).
	// With faults, each candidate gets a lock that crash can cut off;
	// without, candidates share what a real process would share.
	replica(addr string, writes *atomic.Int64, faults bool) (replica, error)
}

type replica interface {
	// onLead is called in the library's leadership callback with the
	// callback's time and when the library took the lease (HostLoom:
	// Change.At; client-go reports no such time: the callback's).
	candidate(role string, s settings, onLead func(cb, took time.Time)) (candidate, error)
	close()
}

// ---- HostLoom ----

type hostloomLib struct{}

func (hostloomLib) name() string { return "hostloom" }

func (hostloomLib) replica(addr string, writes *atomic.Int64, faults bool) (replica, error) {
	c := redis.NewClient(locks.RedisOptions(addr, writes))
	r := &hlReplica{c: c, p: hlredis.New(c), faults: faults}
	if !faults {
		// One lock per process, shared by its electors, as in production.
		lock, err := locking.New(r.p, locking.DefaultOptions())
		if err != nil {
			r.close()
			return nil, err
		}
		r.lock = lock
	}
	return r, nil
}

type hlReplica struct {
	c      *redis.Client
	p      *hlredis.Provider
	faults bool
	lock   *locking.DistributedLock // shared when !faults
	n      atomic.Int64
}

func (r *hlReplica) close() { _ = r.p.Close(); _ = r.c.Close() }

func (r *hlReplica) candidate(role string, s settings, onLead func(cb, took time.Time)) (candidate, error) {
	lock, fp := r.lock, (*faultProvider)(nil)
	if r.faults {
		fp = &faultProvider{inner: r.p}
		var err error
		if lock, err = locking.New(fp, locking.DefaultOptions()); err != nil {
			return nil, err
		}
	}
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval = s.Lease, s.Renew, s.Retry
	e, err := leadership.NewElector(role, lock, o, leadership.WithIdentity(fmt.Sprintf("%p-%d", r, r.n.Add(1))))
	if err != nil {
		return nil, err
	}
	e.OnChange(func(c leadership.Change) {
		if c.IsLeader {
			onLead(time.Now(), c.At)
		}
	})
	return &hlCandidate{e: e, lock: lock, fp: fp, admin: r.c}, nil
}

type hlCandidate struct {
	e     *leadership.Elector
	lock  *locking.DistributedLock
	fp    *faultProvider
	admin *redis.Client
}

func (c *hlCandidate) start() error { return c.e.Start(context.Background()) }

func (c *hlCandidate) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.e.Stop(ctx) // after crash the release fails: expected
}

func (c *hlCandidate) crash(ctx context.Context) (time.Time, error) {
	if c.fp == nil {
		return time.Time{}, errors.New("crash: replica built without faults")
	}
	c.fp.dead.Store(true)
	if err := waitIdle(ctx, &c.fp.inflight); err != nil { // a request in flight may still renew
		return time.Time{}, err
	}
	key, err := c.lock.ProviderKey(c.e.LockKey())
	if err != nil {
		return time.Time{}, err
	}
	t0 := time.Now()
	ttl, err := c.admin.PTTL(ctx, key).Result()
	t1 := time.Now()
	if err != nil {
		return time.Time{}, err
	}
	if ttl <= 0 {
		return time.Time{}, fmt.Errorf("crash: key %q has no TTL (%v)", key, ttl)
	}
	return t0.Add(t1.Sub(t0) / 2).Add(ttl), nil
}

var errCrashed = errors.New("bench: replica crashed")

// faultProvider forwards to a Redis provider until dead, then fails every
// call without reaching Redis: a process that stopped.
type faultProvider struct {
	inner    *hlredis.Provider
	dead     atomic.Bool
	inflight atomic.Int64
}

// enter counts a call in flight; it reports false once dead.
func enter(dead *atomic.Bool, inflight *atomic.Int64) bool {
	inflight.Add(1)
	if dead.Load() {
		inflight.Add(-1)
		return false
	}
	return true
}

// waitIdle waits until no call entered before the crash is in flight.
func waitIdle(ctx context.Context, inflight *atomic.Int64) error {
	deadline := time.Now().Add(10 * time.Second)
	for inflight.Load() > 0 {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.New("crash: a request in flight did not return within 10s")
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// Acquire forwards the fenced acquisition (fences, holder identity,
// participants) until dead.
func (f *faultProvider) Acquire(ctx context.Context, r locking.AcquireRequest) (locking.AcquireResult, error) {
	if !enter(&f.dead, &f.inflight) {
		return locking.AcquireResult{}, errCrashed
	}
	defer f.inflight.Add(-1)
	return f.inner.Acquire(ctx, r)
}

// Extend forwards the registering extension until dead.
func (f *faultProvider) Extend(ctx context.Context, r locking.ExtendRequest) (locking.ExtendResult, error) {
	if !enter(&f.dead, &f.inflight) {
		return locking.ExtendResult{}, errCrashed
	}
	defer f.inflight.Add(-1)
	return f.inner.Extend(ctx, r)
}

// Release forwards until dead.
func (f *faultProvider) Release(ctx context.Context, r locking.ReleaseRequest) (bool, error) {
	if !enter(&f.dead, &f.inflight) {
		return false, errCrashed
	}
	defer f.inflight.Add(-1)
	return f.inner.Release(ctx, r)
}

// Participants forwards until dead: with it the elector registers as a
// participant and a Stop deregisters, as over redislock in production.
func (f *faultProvider) Participants(ctx context.Context, key string) ([]locking.Participant, error) {
	if !enter(&f.dead, &f.inflight) {
		return nil, errCrashed
	}
	defer f.inflight.Add(-1)
	return f.inner.Participants(ctx, key)
}

// Deregister forwards until dead.
func (f *faultProvider) Deregister(ctx context.Context, key, owner string) error {
	if !enter(&f.dead, &f.inflight) {
		return errCrashed
	}
	defer f.inflight.Add(-1)
	return f.inner.Deregister(ctx, key, owner)
}

// Subscribe forwards events while alive: a dead process hears nothing.
func (f *faultProvider) Subscribe(key string, fn func(locking.Event)) (func(), error) {
	return f.inner.Subscribe(key, func(e locking.Event) {
		if !f.dead.Load() {
			fn(e)
		}
	})
}

// ---- client-go ----

type clientGoLib struct{}

func (clientGoLib) name() string { return "client-go" }

func (clientGoLib) replica(addr string, writes *atomic.Int64, faults bool) (replica, error) {
	return &cgReplica{c: redis.NewClient(locks.RedisOptions(addr, writes)), faults: faults}, nil
}

type cgReplica struct {
	c      *redis.Client
	faults bool
	n      atomic.Int64
}

func (r *cgReplica) close() { _ = r.c.Close() }

func (r *cgReplica) candidate(role string, s settings, onLead func(cb, took time.Time)) (candidate, error) {
	id := fmt.Sprintf("%p-%d", r, r.n.Add(1))
	var rl resourcelock.Interface = k8slock.New(r.c, "leader:"+role, id)
	var fl *faultLock
	if r.faults {
		fl = &faultLock{inner: rl}
		rl = fl
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          rl,
		LeaseDuration: s.Lease,
		RenewDeadline: s.ClientGoRenewDeadline,
		RetryPeriod:   s.Retry,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { now := time.Now(); onLead(now, now) },
			OnStoppedLeading: func() {},
		},
		ReleaseOnCancel: true,
		Name:            role,
	})
	if err != nil {
		return nil, err
	}
	return &cgCandidate{le: le, fl: fl, lease: s.Lease}, nil
}

type cgCandidate struct {
	le     *leaderelection.LeaderElector
	fl     *faultLock
	lease  time.Duration
	cancel context.CancelFunc
	done   chan struct{}
}

func (c *cgCandidate) start() error {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done = cancel, make(chan struct{})
	go func() {
		defer close(c.done)
		c.le.Run(ctx)
	}()
	return nil
}

func (c *cgCandidate) stop() {
	if c.cancel != nil {
		c.cancel()
		<-c.done
	}
}

func (c *cgCandidate) crash(ctx context.Context) (time.Time, error) {
	if c.fl == nil {
		return time.Time{}, errors.New("crash: replica built without faults")
	}
	c.fl.dead.Store(true)
	if err := waitIdle(ctx, &c.fl.inflight); err != nil {
		return time.Time{}, err
	}
	last := c.fl.lastWrite.Load()
	if last == nil {
		return time.Time{}, errors.New("crash: leader never wrote its record")
	}
	// client-go has no server-side expiry: the record's lease ends
	// LeaseDuration after its last renewal.
	return last.Add(c.lease), nil
}

// faultLock forwards to the Redis resource lock until dead, and records
// when this candidate last wrote the record.
type faultLock struct {
	inner     resourcelock.Interface
	dead      atomic.Bool
	inflight  atomic.Int64
	lastWrite atomic.Pointer[time.Time]
}

func (f *faultLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	if !enter(&f.dead, &f.inflight) {
		return nil, nil, errCrashed
	}
	defer f.inflight.Add(-1)
	return f.inner.Get(ctx)
}

func (f *faultLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if !enter(&f.dead, &f.inflight) {
		return errCrashed
	}
	defer f.inflight.Add(-1)
	err := f.inner.Create(ctx, ler)
	if err == nil {
		now := time.Now()
		f.lastWrite.Store(&now)
	}
	return err
}

func (f *faultLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if !enter(&f.dead, &f.inflight) {
		return errCrashed
	}
	defer f.inflight.Add(-1)
	err := f.inner.Update(ctx, ler)
	if err == nil {
		now := time.Now()
		f.lastWrite.Store(&now)
	}
	return err
}

func (f *faultLock) RecordEvent(s string) { f.inner.RecordEvent(s) }
func (f *faultLock) Identity() string     { return f.inner.Identity() }
func (f *faultLock) Describe() string     { return f.inner.Describe() }

// ---- measures ----

type leadEvent struct {
	replica int
	at      time.Time // the leadership callback ran
	took    time.Time // the library took the lease (client-go: at)
}

// pair runs two replicas of one role and hands leadership back and forth.
type pair struct {
	lib   electionLib
	reps  [2]replica
	cands [2]candidate
	role  string
	s     settings
	ev    chan leadEvent
}

func newPair(lib electionLib, addr, role string, s settings) (*pair, error) {
	p := &pair{lib: lib, role: role, s: s, ev: make(chan leadEvent, 64)}
	for i := range p.reps {
		r, err := lib.replica(addr, nil, true)
		if err != nil {
			return nil, err
		}
		p.reps[i] = r
	}
	return p, nil
}

func (p *pair) spawn(i int) error {
	c, err := p.reps[i].candidate(p.role, p.s, func(at, took time.Time) { p.ev <- leadEvent{i, at, took} })
	if err != nil {
		return err
	}
	p.cands[i] = c
	return c.start()
}

func (p *pair) wait(timeout time.Duration) (leadEvent, error) {
	select {
	case e := <-p.ev:
		return e, nil
	case <-time.After(timeout):
		return leadEvent{}, fmt.Errorf("%s: no leader for role %q within %v", p.lib.name(), p.role, timeout)
	}
}

func (p *pair) close() {
	for i := range p.cands {
		if p.cands[i] != nil {
			p.cands[i].stop()
		}
		p.reps[i].close()
	}
}

// start makes replica 0 the leader and replica 1 a candidate.
func (p *pair) start() (int, error) {
	if err := p.spawn(0); err != nil {
		return 0, err
	}
	e, err := p.wait(3*p.s.Lease + 5*time.Second)
	if err != nil {
		return 0, err
	}
	if err := p.spawn(1); err != nil {
		return 0, err
	}
	return e.replica, nil
}

// runHandover measures graceful handovers: the leader stops (releasing),
// the time until the other replica's elector reports leadership.
// It returns the times until the callback ran and until the lease was
// taken.
func runHandover(ctx context.Context, lib electionLib, addr string, s settings, n int, settle func() time.Duration) (cb, took []time.Duration, err error) {
	p, err := newPair(lib, addr, fmt.Sprintf("handover-%s-%d", lib.name(), time.Now().UnixNano()), s)
	if err != nil {
		return nil, nil, err
	}
	defer p.close()
	leader, err := p.start()
	if err != nil {
		return nil, nil, err
	}
	for range n {
		time.Sleep(settle())
		t0 := time.Now()
		p.cands[leader].stop()
		e, err := p.wait(3*s.Lease + 5*time.Second)
		if err != nil {
			return nil, nil, err
		}
		if e.replica == leader {
			return nil, nil, fmt.Errorf("%s: stopped replica %d reported leadership", lib.name(), leader)
		}
		cb = append(cb, e.at.Sub(t0))
		took = append(took, e.took.Sub(t0))
		if err := p.spawn(leader); err != nil {
			return nil, nil, err
		}
		leader = e.replica
	}
	return cb, took, nil
}

// runFailover measures crash failovers: the leader stops reaching Redis
// without releasing; the time from the lease's expiry on the server until
// the other replica reports leadership.
func runFailover(ctx context.Context, lib electionLib, addr string, s settings, n int, settle func() time.Duration) ([]time.Duration, error) {
	p, err := newPair(lib, addr, fmt.Sprintf("failover-%s-%d", lib.name(), time.Now().UnixNano()), s)
	if err != nil {
		return nil, err
	}
	defer p.close()
	leader, err := p.start()
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	for range n {
		time.Sleep(settle())
		expiry, err := p.cands[leader].crash(ctx)
		if err != nil {
			return nil, err
		}
		e, err := p.wait(3*s.Lease + 5*time.Second)
		if err != nil {
			return nil, err
		}
		if e.replica == leader {
			return nil, fmt.Errorf("%s: crashed replica %d reported leadership", lib.name(), leader)
		}
		out = append(out, e.at.Sub(expiry))
		p.cands[leader].stop()
		if err := p.spawn(leader); err != nil {
			return nil, err
		}
		leader = e.replica
	}
	return out, nil
}

// fleet is roles × replicas electors, each replica with its own client.
type fleet struct {
	writes  atomic.Int64 // requests sent by all replicas
	reps    []replica
	cands   []candidate
	leaders atomic.Int64
	led     sync.Map // role -> struct{}
}

func startFleet(lib electionLib, addr, prefix string, roles, replicas int, s settings) (*fleet, error) {
	f := &fleet{}
	for range replicas {
		r, err := lib.replica(addr, &f.writes, false)
		if err != nil {
			f.stop()
			return nil, err
		}
		f.reps = append(f.reps, r)
	}
	for role := range roles {
		name := fmt.Sprintf("%s-%d", prefix, role)
		for _, r := range f.reps {
			c, err := r.candidate(name, s, func(time.Time, time.Time) {
				if _, loaded := f.led.LoadOrStore(name, struct{}{}); !loaded {
					f.leaders.Add(1)
				}
			})
			if err != nil {
				f.stop()
				return nil, err
			}
			f.cands = append(f.cands, c)
		}
	}
	for _, c := range f.cands {
		if err := c.start(); err != nil {
			f.stop()
			return nil, err
		}
	}
	return f, nil
}

func (f *fleet) waitLeaders(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for f.leaders.Load() < int64(n) {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d roles got a leader within %v", f.leaders.Load(), n, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

func (f *fleet) stop() {
	var wg sync.WaitGroup
	work := make(chan candidate)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				c.stop()
			}
		}()
	}
	for _, c := range f.cands {
		work <- c
	}
	close(work)
	wg.Wait()
	for _, r := range f.reps {
		r.close()
	}
}
