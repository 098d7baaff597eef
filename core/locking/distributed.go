package locking

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hostloom/hostloom/core/internal/keycache"
	"github.com/hostloom/hostloom/core/jobrecord"
)

// tokenBytes is the size of the random owner token (L3): 128 bits.
const tokenBytes = 16

// DistributedLock implements Lock over a Provider: it validates keys,
// prefixes them with the namespace, caps leases at MaxLease, generates owner
// tokens, and implements disabled mode. It is safe for concurrent use.
type DistributedLock struct {
	p      Provider
	o      Options
	prefix string // provider key prefix, e.g. "billing:lock:"
	state  string // state key prefix, e.g. "billing:state:"
	owner  string // default owner identity
	keys   keycache.Cache

	// The provider's optional capabilities, found once by New (L9); nil
	// when it lacks one or the lock is disabled. feat is the same on
	// consumer keys, as Features reports it (X3).
	feat         Features
	events       Subscriber
	resign       ResignRequester
	participants ParticipantRegistry
	withdraws    bool // Release honours ReleaseRequest.Withdraw (ReleaseWithdrawer, with participants)
	inspector    Inspector
	jobs         jobrecord.Jobs
	closer       io.Closer

	closeOnce sync.Once
	closeErr  error
}

var (
	_ Lock                = (*DistributedLock)(nil)
	_ OwnedLock           = (*DistributedLock)(nil)
	_ PriorityLock        = (*DistributedLock)(nil)
	_ Subscriber          = (*DistributedLock)(nil)
	_ ResignRequester     = (*DistributedLock)(nil)
	_ ParticipantRegistry = (*DistributedLock)(nil)
	_ HolderLookup        = (*DistributedLock)(nil)
	_ Limits              = (*DistributedLock)(nil)
	_ KeyInspector        = (*DistributedLock)(nil)
	_ io.Closer           = (*DistributedLock)(nil)
)

// New returns a DistributedLock over p. Fields of o left zero take their
// documented defaults (L10); a value that is set and invalid is an error
// naming the field and the value, matching ErrInvalidOptions. A nil p is
// an error unless the lock is disabled (o.Disabled), which never calls
// the provider.
//
// New finds p's optional capabilities once (Subscriber, ResignRequester,
// ParticipantRegistry, Inspector, RecordStore, Durable, io.Closer) and
// reports them as values through Features (nil when absent; X3) and as
// booleans through Capabilities. The lock's methods for a capability p
// lacks return ErrNotSupported (L9). The lock owns p: Close closes it.
func New(p Provider, o Options) (*DistributedLock, error) {
	o = o.withDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if p == nil && !o.Disabled {
		return nil, fmt.Errorf("%w: nil provider (set Options.Disabled for a lock that grants everyone)", ErrInvalidOptions)
	}
	ns := o.Namespace
	if o.UseHashTags {
		ns = "{" + ns + "}"
	}
	if ns != "" {
		ns += ":"
	}
	l := &DistributedLock{
		p:      p,
		o:      o,
		prefix: ns + "lock:",
		state:  ns + "state:",
		owner:  DefaultOwner(),
	}
	l.closer, _ = p.(io.Closer)
	if o.Disabled {
		return l, nil
	}
	l.events, _ = p.(Subscriber)
	l.participants, _ = p.(ParticipantRegistry)
	if w, ok := p.(ReleaseWithdrawer); ok && l.participants != nil {
		l.withdraws = w.WithdrawsOnRelease()
	}
	l.inspector, _ = p.(Inspector)
	l.jobs = findJobs(p)
	if r, ok := p.(ResignRequester); ok && l.events != nil {
		l.resign = r
	}
	if l.events != nil {
		l.feat.Events = l
	}
	if l.resign != nil {
		l.feat.Resign = l
	}
	if l.participants != nil {
		l.feat.Participants = l
		if pr, ok := p.(ParticipantProbe); ok {
			l.feat.Probe = probe{l: l, p: pr}
		}
	}
	if l.inspector != nil {
		l.feat.Holders = l
		l.feat.Inspect = l
	}
	if l.jobs != nil {
		l.feat.Jobs = l
	}
	if d, ok := p.(Durable); ok {
		l.feat.Durable = d.Durable()
	}
	return l, nil
}

// Capabilities reports what the lock's provider can do beyond the
// required methods, as New found it (L9): Features as booleans. A
// disabled lock has none.
func (l *DistributedLock) Capabilities() Capabilities { return l.feat.Capabilities() }

// Provider returns the provider the lock was built over (nil for a
// disabled lock built without one).
func (l *DistributedLock) Provider() Provider { return l.p }

// Close closes the provider when it implements io.Closer (redislock ends
// its subscriptions; it does not close the Redis client it was given).
// It is idempotent: later calls return the first call's error.
func (l *DistributedLock) Close() error {
	l.closeOnce.Do(func() {
		if l.closer != nil {
			l.closeErr = l.closer.Close()
		}
	})
	return l.closeErr
}

// DefaultOwner is the owner identity stored with leases when the caller
// names none: "hostname:pid".
func DefaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// Options returns the options the lock was built with.
func (l *DistributedLock) Options() Options { return l.o }

// Coordinated reports whether the lock coordinates: false when it is
// disabled (L4).
func (l *DistributedLock) Coordinated() bool { return !l.o.Disabled }

// MaxKeyLength is the longest consumer key accepted, in bytes (L1).
func (l *DistributedLock) MaxKeyLength() int { return l.o.MaxKeyLength }

// MaxLease is the cap applied to every lease (L1, L5).
func (l *DistributedLock) MaxLease() time.Duration { return l.o.MaxLease }

// ProviderKey validates key and returns the key the backend stores:
// {namespace}:lock:{key}, or {{namespace}}:lock:{key} with UseHashTags.
func (l *DistributedLock) ProviderKey(key string) (string, error) {
	if err := CheckKey(key, l.o.MaxKeyLength); err != nil {
		return "", err
	}
	return l.keys.Get(key, l.prefixed), nil
}

// prefixed is key with the namespace's provider key prefix.
func (l *DistributedLock) prefixed(key string) string { return l.prefix + key }

func (l *DistributedLock) capLease(lease time.Duration) (time.Duration, error) {
	if lease <= 0 {
		return 0, fmt.Errorf("%w: lease %v must be positive", ErrInvalidLease, lease)
	}
	return min(lease, l.o.MaxLease), nil
}

// TryAcquire makes one attempt to take key for lease (capped at MaxLease),
// storing the default owner identity. A plain lock user is not registered
// as a participant and its acquisition is not announced (P1, P2 are for
// electors, which use TryAcquireAs or TryAcquirePriority): it costs the
// fewest commands.
func (l *DistributedLock) TryAcquire(ctx context.Context, key string, lease time.Duration) (Lease, error) {
	return l.tryAcquire(ctx, key, lease, l.owner, 0, 0, false)
}

// TryAcquireAs is TryAcquire storing owner as the holder identity reported
// by Holder. An empty owner stores the default identity.
func (l *DistributedLock) TryAcquireAs(ctx context.Context, key string, d time.Duration, owner string) (Lease, error) {
	return l.TryAcquirePriority(ctx, key, d, owner, 0, 0)
}

// TryAcquirePriority is TryAcquireAs registering owner as a participant
// with priority (B2). A refusal's *HeldError reports the highest priority
// among the key's live participants; the lease's Extend keeps registering
// the priority and reports, through Preempted, a higher-priority
// participant registered for a full lease. With yield positive, a free key
// waits up to yield for a live participant with a higher priority before
// this caller may take it; meanwhile it is refused with *HeldError whose
// Owner is "". Providers without ParticipantRegistry ignore both.
func (l *DistributedLock) TryAcquirePriority(ctx context.Context, key string, d time.Duration, owner string, priority int, yield time.Duration) (Lease, error) {
	return l.tryAcquire(ctx, key, d, owner, priority, yield, true)
}

// tryAcquire is TryAcquirePriority, registering the participant only when
// register is set.
func (l *DistributedLock) tryAcquire(ctx context.Context, key string, d time.Duration, owner string, priority int, yield time.Duration, register bool) (Lease, error) {
	pkey, err := l.ProviderKey(key)
	if err != nil {
		return nil, err
	}
	ttl, err := l.capLease(d)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("locking: acquire %q: %w", key, err)
	}
	if owner == "" {
		owner = l.owner
	}
	if l.o.Disabled {
		return &placeholder{key: key, granted: ttl, owner: owner}, nil
	}
	value, err := newValue(owner)
	if err != nil {
		return nil, err
	}
	var pttl time.Duration
	if register {
		pttl = participantTTL(ttl)
	}
	r, err := l.p.Acquire(ctx, AcquireRequest{
		Key: pkey, Value: value, TTL: ttl,
		Owner: owner, ParticipantTTL: pttl, Priority: priority, Yield: yield,
	})
	if err != nil {
		return nil, fmt.Errorf("locking: acquire %q: %w", key, err)
	}
	if !r.Acquired {
		h := &HeldError{Key: key, Remaining: max(r.Remaining, 0), TopPriority: r.TopPriority}
		if r.HolderValue != "" {
			h.Owner = ownerOf(r.HolderValue)
		}
		return nil, h
	}
	// One allocation for the lease, after the outcome is known.
	if r.Fence != 0 {
		fl := &fencedLease{fence: r.Fence}
		fl.lease = lease{l: l, key: key, pkey: pkey, value: value, owner: owner, priority: priority, granted: ttl, register: register}
		return fl, nil
	}
	return &lease{l: l, key: key, pkey: pkey, value: value, owner: owner, priority: priority, granted: ttl, register: register}, nil
}

// participantTTL is how long a request registers its owner as a
// participant: two leases (P1).
func participantTTL(lease time.Duration) time.Duration { return 2 * lease }

// newValue returns a fresh ownership record: a 128-bit random token in hex,
// a colon, and the owner identity.
func newValue(owner string) (string, error) {
	var b [tokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("locking: owner token: %w", err)
	}
	var sb strings.Builder
	sb.Grow(2*tokenBytes + 1 + len(owner))
	var hx [2 * tokenBytes]byte
	hex.Encode(hx[:], b[:])
	sb.Write(hx[:])
	sb.WriteByte(':')
	sb.WriteString(owner)
	return sb.String(), nil
}

// ownerOf extracts the owner identity from an ownership record.
func ownerOf(value string) string {
	if len(value) > 2*tokenBytes && value[2*tokenBytes] == ':' {
		return value[2*tokenBytes+1:]
	}
	return value
}

// Subscribe implements Subscriber: fn receives key's events (releases,
// acquisitions with the new holder's identity, resign requests, the
// subscription's own state) until stop is called. It returns an error
// matching ErrNotSupported when the provider publishes no events or the
// lock is disabled, and one matching ErrInvalidKey for an invalid key.
func (l *DistributedLock) Subscribe(key string, fn func(Event)) (func(), error) {
	pkey, err := l.ProviderKey(key)
	if err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, fmt.Errorf("locking: subscribe %q: nil callback", key)
	}
	if l.events == nil {
		return nil, fmt.Errorf("locking: subscribe %q: %w", key, ErrNotSupported)
	}
	stop, err := l.events.Subscribe(pkey, decodeHandOver(fn))
	if err != nil {
		return nil, fmt.Errorf("locking: subscribe %q: %w", key, err)
	}
	if stop == nil {
		return nil, fmt.Errorf("locking: subscribe %q: the provider returned no stop function", key)
	}
	return stop, nil
}

// Holder reports who holds key and for how long (L7), in one step
// through the provider's Inspector. It returns an error matching
// ErrNotSupported when the provider cannot inspect keys; a disabled lock
// reports nobody.
func (l *DistributedLock) Holder(ctx context.Context, key string) (Holder, bool, error) {
	pkey, err := l.ProviderKey(key)
	if err != nil {
		return Holder{}, false, err
	}
	if l.o.Disabled {
		return Holder{}, false, nil
	}
	if l.inspector == nil {
		return Holder{}, false, fmt.Errorf("locking: holder %q: %w", key, ErrNotSupported)
	}
	st, err := l.inspector.Inspect(ctx, pkey)
	if err != nil && !errors.Is(err, ErrBadRecord) {
		return Holder{}, false, fmt.Errorf("locking: holder %q: %w", key, err)
	}
	if !st.Held {
		return Holder{}, false, nil
	}
	return Holder{Owner: ownerOf(st.Value), TTL: max(st.TTL, 0)}, true, nil
}

// stateKey validates key and returns its provider state key.
func (l *DistributedLock) stateKey(key string) (string, error) {
	if err := CheckKey(key, l.o.MaxKeyLength); err != nil {
		return "", err
	}
	return l.state + key, nil
}

// Advance sets the monotonic state value under key (namespaced as
// {namespace}:state:{key}) when value is greater than the stored one (L8).
// It returns an error matching ErrNotSupported when the provider keeps no
// job slots (jobrecord.Jobs) or the lock is disabled.
func (l *DistributedLock) Advance(ctx context.Context, key string, value int64) (bool, int64, error) {
	skey, err := l.stateKey(key)
	if err != nil {
		return false, 0, err
	}
	if l.jobs == nil {
		return false, 0, fmt.Errorf("locking: advance %q: %w", key, ErrNotSupported)
	}
	adv, cur, err := l.jobs.Advance(ctx, skey, value)
	if err != nil {
		return false, 0, fmt.Errorf("locking: advance %q: %w", key, err)
	}
	return adv, cur, nil
}

// State reads the state value under key (L8).
func (l *DistributedLock) State(ctx context.Context, key string) (int64, bool, error) {
	skey, err := l.stateKey(key)
	if err != nil {
		return 0, false, err
	}
	if l.jobs == nil {
		return 0, false, fmt.Errorf("locking: state %q: %w", key, ErrNotSupported)
	}
	v, found, err := l.jobs.State(ctx, skey)
	if err != nil {
		return 0, false, fmt.Errorf("locking: state %q: %w", key, err)
	}
	return v, found, nil
}

// lease is a lease held through a provider.
type lease struct {
	l         *DistributedLock
	key, pkey string
	value     string
	owner     string
	priority  int
	register  bool // extensions register the participant (not for plain TryAcquire)
	mu        sync.Mutex
	granted   time.Duration
	preempted bool
	live      int // participants the latest extension reported
}

// LiveParticipants implements ParticipantCounted.
func (s *lease) LiveParticipants() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live
}

// Preempted implements Preemptible: the latest successful Extend found a
// higher-priority participant registered for at least a lease (B2).
func (s *lease) Preempted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.preempted
}

func (s *lease) Key() string   { return s.key }
func (s *lease) Owner() string { return s.owner }

func (s *lease) Granted() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.granted
}

func (s *lease) Extend(ctx context.Context, d time.Duration) error {
	ttl, err := s.l.capLease(d)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("locking: extend %q: %w", s.key, err)
	}
	var pttl time.Duration
	if s.register {
		pttl = participantTTL(ttl)
	}
	r, err := s.l.p.Extend(ctx, ExtendRequest{
		Key: s.pkey, Value: s.value, TTL: ttl,
		Owner: s.owner, ParticipantTTL: pttl, Priority: s.priority,
	})
	ok, preempt, live := r.Extended, r.Preempt, max(r.Participants, 0)
	if err != nil {
		return fmt.Errorf("locking: extend %q: %w", s.key, err)
	}
	if !ok {
		return fmt.Errorf("locking: extend %q: %w", s.key, ErrLeaseLost)
	}
	s.mu.Lock()
	s.granted = ttl
	s.preempted = preempt
	s.live = live
	s.mu.Unlock()
	return nil
}

func (s *lease) Release(ctx context.Context) error {
	return s.ReleaseTo(ctx, "")
}

// ReleaseTo implements HandoverLease: Release whose notification names
// target (B1), when the provider publishes events.
func (s *lease) ReleaseTo(ctx context.Context, target string) error {
	_, err := s.ReleaseWith(ctx, ReleaseOptions{Target: target})
	return err
}

// ReleaseWithdraw implements WithdrawingLease.
func (s *lease) ReleaseWithdraw(ctx context.Context, target string) (withdrawn bool, err error) {
	return s.ReleaseWith(ctx, ReleaseOptions{Target: target, Withdraw: true})
}

// ReleaseWith implements ReleasingLease. A lease that does not register
// its owner (a plain TryAcquire) has nothing to withdraw: it is a plain
// release, withdrawn false, as over a provider that cannot withdraw in
// the same step.
func (s *lease) ReleaseWith(ctx context.Context, o ReleaseOptions) (withdrawn bool, err error) {
	r := ReleaseRequest{Key: s.pkey, Value: s.value, Target: o.Target, Notify: s.register}
	if o.Target != "" && o.Hold > 0 {
		r.Hold = o.Hold
	}
	if !o.Withdraw || !s.l.withdraws || !s.register {
		return false, s.release(ctx, r)
	}
	r.Withdraw, r.Notify = s.owner, true
	err = s.release(ctx, r)
	// A refusal (the lease was lost) withdrew the owner all the same; on
	// an error the call may not have reached the backend.
	return err == nil || errors.Is(err, ErrLeaseLost), err
}

// release sends r to the provider.
func (s *lease) release(ctx context.Context, r ReleaseRequest) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("locking: release %q: %w", s.key, err)
	}
	ok, err := s.l.p.Release(ctx, r)
	if err != nil {
		return fmt.Errorf("locking: release %q: %w", s.key, err)
	}
	if !ok {
		return fmt.Errorf("locking: release %q: %w", s.key, ErrLeaseLost)
	}
	return nil
}

// fencedLease is a lease whose acquisition issued a fence (G1). Leases of
// providers without fences are plain *lease values, which do not implement
// Fenced.
type fencedLease struct {
	lease
	fence uint64
}

var (
	_ Fenced           = (*fencedLease)(nil)
	_ WithdrawingLease = (*lease)(nil)
)

// Fence is the fencing token issued with the acquisition; extensions keep
// it.
func (s *fencedLease) Fence() uint64 { return s.fence }

// placeholder is the lease a disabled lock grants everyone (L4). It does
// not implement Fenced: it excludes nobody, so it has no fence.
type placeholder struct {
	key     string
	owner   string
	granted time.Duration
}

func (p *placeholder) Key() string                                 { return p.key }
func (p *placeholder) Owner() string                               { return p.owner }
func (p *placeholder) Granted() time.Duration                      { return p.granted }
func (p *placeholder) Extend(context.Context, time.Duration) error { return nil }
func (p *placeholder) Release(context.Context) error               { return nil }
