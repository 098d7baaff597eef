package leadershiptest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

// ErrInjected is the transport error a FaultLock injects with FaultError.
var ErrInjected = errors.New("leadershiptest: injected transport error")

// Op is a lock operation a FaultLock can fault.
type Op int

// Operations.
const (
	// OpAcquire is TryAcquire and TryAcquireAs.
	OpAcquire Op = iota + 1
	// OpExtend is Lease.Extend.
	OpExtend
	// OpRelease is Lease.Release.
	OpRelease
	// OpHolder is Holder.
	OpHolder
)

// String returns the operation's lower-case name.
func (o Op) String() string {
	switch o {
	case OpAcquire:
		return "acquire"
	case OpExtend:
		return "extend"
	case OpRelease:
		return "release"
	case OpHolder:
		return "holder"
	default:
		return "unknown"
	}
}

// Fault is what a FaultLock does instead of an operation.
type Fault int

// Faults.
const (
	// FaultNone passes the operation through. It is the default.
	FaultNone Fault = iota
	// FaultError fails with an error wrapping ErrInjected (a transport
	// failure: the outcome is unknown), without calling the inner lock.
	FaultError
	// FaultRefuse refuses: TryAcquire returns a *locking.HeldError with no
	// remaining TTL; Extend and Release return an error matching
	// locking.ErrLeaseLost. The inner lock is not called.
	FaultRefuse
	// FaultHang blocks until the call's context ends, then returns its
	// error, without calling the inner lock.
	FaultHang
	// FaultPanic panics, without calling the inner lock.
	FaultPanic
	// FaultStall blocks until Unstall is called, ignoring the context (a
	// call that never honours cancellation), then passes the operation
	// through.
	FaultStall
)

// String returns the fault's lower-case name.
func (f Fault) String() string {
	switch f {
	case FaultNone:
		return "none"
	case FaultError:
		return "error"
	case FaultRefuse:
		return "refuse"
	case FaultHang:
		return "hang"
	case FaultPanic:
		return "panic"
	case FaultStall:
		return "stall"
	default:
		return "unknown"
	}
}

// FaultLock wraps a locking.Lock and injects faults per operation,
// switchable at run time with Set. It forwards the optional interfaces
// (locking.OwnedLock, locking.Subscriber for releases, locking.HolderLookup,
// locking.Limits, ProviderKey) to the inner lock; where the inner lock
// lacks one, the method reports locking.ErrNotSupported or no limits, and
// Features leaves it nil (found once, by NewFaultLock, with
// locking.FeaturesOf). Leases it returns are wrapped so Extend and
// Release faults apply to them. It starts no goroutine and works in
// testing/synctest bubbles. It is safe for concurrent use.
type FaultLock struct {
	inner   locking.Lock
	events  locking.Subscriber   // nil when the inner lock has no events
	holders locking.HolderLookup // nil when it cannot look holders up

	mu      sync.Mutex
	faults  map[Op]Fault
	delays  map[Op]time.Duration
	calls   map[Op]int
	stalled chan struct{} // closed by Unstall; replaced by the next stall
}

var (
	_ locking.Lock         = (*FaultLock)(nil)
	_ locking.OwnedLock    = (*FaultLock)(nil)
	_ locking.Subscriber   = (*FaultLock)(nil)
	_ locking.HolderLookup = (*FaultLock)(nil)
	_ locking.Limits       = (*FaultLock)(nil)
)

// NewFaultLock wraps inner with no faults set.
func NewFaultLock(inner locking.Lock) *FaultLock {
	has := locking.FeaturesOf(inner)
	events, holders := has.Events, has.Holders
	return &FaultLock{
		inner:   inner,
		events:  events,
		holders: holders,
		faults:  make(map[Op]Fault),
		delays:  make(map[Op]time.Duration),
		calls:   make(map[Op]int),
		stalled: make(chan struct{}),
	}
}

// Set makes op fail with f from now on; FaultNone passes it through again.
func (f *FaultLock) Set(op Op, fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault == FaultNone {
		delete(f.faults, op)
		return
	}
	f.faults[op] = fault
}

// SetDelay makes op wait d (or until its context ends, then failing with
// the context's error) before it proceeds, like a slow network; 0 removes
// the delay. A delay applies before the op's fault, if any.
func (f *FaultLock) SetDelay(op Op, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d <= 0 {
		delete(f.delays, op)
		return
	}
	f.delays[op] = d
}

// Clear removes every fault and delay (stalled calls stay stalled until
// Unstall).
func (f *FaultLock) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.faults)
	clear(f.delays)
}

// Unstall releases every call blocked by FaultStall.
func (f *FaultLock) Unstall() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.stalled)
	f.stalled = make(chan struct{})
}

// Calls reports how many times op was called, faulted or not.
func (f *FaultLock) Calls(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// enter counts a call and applies its fault. It returns done=true with err
// when the fault replaces the call.
func (f *FaultLock) enter(ctx context.Context, op Op, key string) (done bool, err error) {
	f.mu.Lock()
	f.calls[op]++
	fault := f.faults[op]
	delay := f.delays[op]
	stalled := f.stalled
	f.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return true, fmt.Errorf("leadershiptest: %s %q: %w", op, key, ctx.Err())
		}
	}
	switch fault {
	case FaultError:
		return true, fmt.Errorf("leadershiptest: %s %q: %w", op, key, ErrInjected)
	case FaultRefuse:
		if op == OpAcquire {
			return true, &locking.HeldError{Key: key}
		}
		return true, fmt.Errorf("leadershiptest: %s %q: %w", op, key, locking.ErrLeaseLost)
	case FaultHang:
		<-ctx.Done()
		return true, fmt.Errorf("leadershiptest: %s %q: %w", op, key, ctx.Err())
	case FaultPanic:
		panic(fmt.Sprintf("leadershiptest: injected panic in %s %q", op, key))
	case FaultStall:
		<-stalled
	}
	return false, nil
}

// Inner returns the wrapped lock.
func (f *FaultLock) Inner() locking.Lock { return f.inner }

// Coordinated forwards to the inner lock.
func (f *FaultLock) Coordinated() bool { return f.inner.Coordinated() }

// TryAcquire implements locking.Lock, subject to OpAcquire's fault.
func (f *FaultLock) TryAcquire(ctx context.Context, key string, lease time.Duration) (locking.Lease, error) {
	if done, err := f.enter(ctx, OpAcquire, key); done {
		return nil, err
	}
	l, err := f.inner.TryAcquire(ctx, key, lease)
	return f.wrap(l), err
}

// TryAcquireAs implements locking.OwnedLock, subject to OpAcquire's fault.
// Over an inner lock without owners it stores nothing and calls TryAcquire.
func (f *FaultLock) TryAcquireAs(ctx context.Context, key string, lease time.Duration, owner string) (locking.Lease, error) {
	if done, err := f.enter(ctx, OpAcquire, key); done {
		return nil, err
	}
	var l locking.Lease
	var err error
	if ol, ok := f.inner.(locking.OwnedLock); ok {
		l, err = ol.TryAcquireAs(ctx, key, lease, owner)
	} else {
		l, err = f.inner.TryAcquire(ctx, key, lease)
	}
	return f.wrap(l), err
}

// Features reports events (releases only, see Subscribe) and holder
// lookup when the inner lock has them, as the FaultLock itself; nothing
// else is forwarded.
func (f *FaultLock) Features() locking.Features {
	var has locking.Features
	if f.events != nil {
		has.Events = f
	}
	if f.holders != nil {
		has.Holders = f
	}
	return has
}

// Capabilities summarises Features as booleans.
func (f *FaultLock) Capabilities() locking.Capabilities { return f.Features().Capabilities() }

// Subscribe forwards the inner lock's release notifications
// (locking.EventReleased) and nothing else: an elector over a FaultLock
// is woken by releases, but never learns that its subscription is live,
// so it keeps the candidate cadence the faults are measured against.
// Without a Subscriber on the inner lock it returns an error matching
// locking.ErrNotSupported.
func (f *FaultLock) Subscribe(key string, fn func(locking.Event)) (func(), error) {
	if f.events == nil {
		return nil, fmt.Errorf("leadershiptest: subscribe %q: %w", key, locking.ErrNotSupported)
	}
	return f.events.Subscribe(key, func(e locking.Event) {
		if e.Kind == locking.EventReleased {
			fn(e)
		}
	})
}

// Holder forwards to the inner lock's HolderLookup, subject to OpHolder's
// fault; without one it returns locking.ErrNotSupported.
func (f *FaultLock) Holder(ctx context.Context, key string) (locking.Holder, bool, error) {
	if done, err := f.enter(ctx, OpHolder, key); done {
		return locking.Holder{}, false, err
	}
	if f.holders != nil {
		return f.holders.Holder(ctx, key)
	}
	return locking.Holder{}, false, locking.ErrNotSupported
}

// MaxKeyLength forwards to the inner lock's Limits; 0 (no limit) without.
func (f *FaultLock) MaxKeyLength() int {
	if l, ok := f.inner.(locking.Limits); ok {
		return l.MaxKeyLength()
	}
	return 0
}

// MaxLease forwards to the inner lock's Limits; 0 (no cap) without.
func (f *FaultLock) MaxLease() time.Duration {
	if l, ok := f.inner.(locking.Limits); ok {
		return l.MaxLease()
	}
	return 0
}

// ProviderKey forwards to the inner lock when it reports provider keys;
// otherwise it returns key unchanged.
func (f *FaultLock) ProviderKey(key string) (string, error) {
	if p, ok := f.inner.(interface {
		ProviderKey(string) (string, error)
	}); ok {
		return p.ProviderKey(key)
	}
	return key, nil
}

func (f *FaultLock) wrap(l locking.Lease) locking.Lease {
	if l == nil {
		return nil
	}
	return &faultLease{f: f, inner: l}
}

// faultLease applies OpExtend and OpRelease faults to a lease.
type faultLease struct {
	f     *FaultLock
	inner locking.Lease
}

var _ locking.GrantedLease = (*faultLease)(nil)

func (l *faultLease) Key() string { return l.inner.Key() }

func (l *faultLease) Extend(ctx context.Context, lease time.Duration) error {
	if done, err := l.f.enter(ctx, OpExtend, l.inner.Key()); done {
		return err
	}
	return l.inner.Extend(ctx, lease)
}

func (l *faultLease) Release(ctx context.Context) error {
	if done, err := l.f.enter(ctx, OpRelease, l.inner.Key()); done {
		return err
	}
	return l.inner.Release(ctx)
}

// Granted forwards to the inner lease; 0 when it does not report one.
func (l *faultLease) Granted() time.Duration {
	if g, ok := l.inner.(locking.GrantedLease); ok {
		return g.Granted()
	}
	return 0
}

// Owner forwards to the inner lease; "" when it does not report one.
func (l *faultLease) Owner() string {
	if g, ok := l.inner.(locking.GrantedLease); ok {
		return g.Owner()
	}
	return ""
}

// Fence forwards to the inner lease (locking.Fenced); 0 when it carries
// none, which the elector treats as a lock without fences.
func (l *faultLease) Fence() uint64 {
	if f, ok := l.inner.(locking.Fenced); ok {
		return f.Fence()
	}
	return 0
}

// LiveParticipants forwards locking.ParticipantCounted (0 when the inner
// lease does not count participants).
func (l *faultLease) LiveParticipants() int {
	if c, ok := l.inner.(locking.ParticipantCounted); ok {
		return c.LiveParticipants()
	}
	return 0
}

// Terms forwards the inner lease's terms (locking.TermsOf).
func (l *faultLease) Terms() locking.Terms { return locking.TermsOf(l.inner) }
