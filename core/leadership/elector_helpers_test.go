package leadership_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// bareLock hides every optional interface of the lock it wraps (no
// Watcher, no HolderLookup, no Limits, no OwnedLock), and of its leases
// (no Fenced, no GrantedLease).
type bareLock struct{ inner locking.Lock }

// bareLease hides the optional interfaces of a lease.
type bareLease struct{ locking.Lease }

func (b bareLock) TryAcquire(ctx context.Context, key string, lease time.Duration) (locking.Lease, error) {
	l, err := b.inner.TryAcquire(ctx, key, lease)
	if err != nil {
		return nil, err
	}
	return bareLease{l}, nil
}
func (b bareLock) Coordinated() bool { return b.inner.Coordinated() }

// memLock returns a DistributedLock over a fresh memlock provider. Call it
// inside the synctest bubble that uses it.
func memLock(t testing.TB, mut ...func(*locking.Options)) *locking.DistributedLock {
	t.Helper()
	o := locking.DefaultOptions()
	for _, m := range mut {
		m(&o)
	}
	l, err := locking.New(memlock.New(), o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fastOpts: Lease 3s, RenewInterval 1s, RetryInterval 2s.
func fastOpts() leadership.Options {
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval = 3*time.Second, time.Second, 2*time.Second
	return o
}

func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(core), logs
}

func mustElector(t *testing.T, role string, lock locking.Lock, o leadership.Options, opts ...leadership.Option) *leadership.Elector {
	t.Helper()
	e, err := leadership.NewElector(role, lock, o, opts...)
	if err != nil {
		t.Fatalf("NewElector(%q): %v", role, err)
	}
	return e
}

func mustStart(t *testing.T, e *leadership.Elector) {
	t.Helper()
	if err := e.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
}

func mustStop(t *testing.T, e *leadership.Elector) {
	t.Helper()
	if err := e.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

// changeLog records the Changes delivered to a subscriber.
type changeLog struct {
	mu      sync.Mutex
	changes []leadership.Change
}

func subscribe(e leadership.Leadership) *changeLog {
	c := &changeLog{}
	e.OnChange(func(ch leadership.Change) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.changes = append(c.changes, ch)
	})
	return c
}

func (c *changeLog) all() []leadership.Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]leadership.Change(nil), c.changes...)
}

func (c *changeLog) reasons() []leadership.Reason {
	var rs []leadership.Reason
	for _, ch := range c.all() {
		rs = append(rs, ch.Reason)
	}
	return rs
}

// countLogs counts entries with message msg at level.
func countLogs(logs *observer.ObservedLogs, level zapcore.Level, msg string) int {
	n := 0
	for _, e := range logs.FilterMessage(msg).All() {
		if e.Level == level {
			n++
		}
	}
	return n
}

func tokenDone(e leadership.Leadership) bool {
	select {
	case <-e.Token().Done():
		return true
	default:
		return false
	}
}

// recLock records when each lease operation was called, then forwards it.
type recLock struct {
	locking.Lock
	mu      sync.Mutex
	extends []time.Time
	onRel   func()
}

func (r *recLock) TryAcquire(ctx context.Context, key string, lease time.Duration) (locking.Lease, error) {
	l, err := r.Lock.TryAcquire(ctx, key, lease)
	if l == nil {
		return nil, err
	}
	return &recLease{Lease: l, r: r}, err
}

func (r *recLock) extendTimes() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.extends...)
}

type recLease struct {
	locking.Lease
	r *recLock
}

func (l *recLease) Extend(ctx context.Context, d time.Duration) error {
	l.r.mu.Lock()
	l.r.extends = append(l.r.extends, time.Now())
	l.r.mu.Unlock()
	return l.Lease.Extend(ctx, d)
}

func (l *recLease) Release(ctx context.Context) error {
	if l.r.onRel != nil {
		l.r.onRel()
	}
	return l.Lease.Release(ctx)
}
