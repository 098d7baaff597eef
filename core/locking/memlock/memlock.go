package memlock

import (
	"context"
	"iter"
	"sync"
	"time"

	"github.com/hostloom/hostloom/core/jobrecord"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/kit/eventhub"
	"github.com/hostloom/hostloom/core/locking/kit/participants"
)

// sweepEvery is how many writes pass between sweeps of expired entries, so
// keys nobody touches again do not accumulate.
const sweepEvery = 1024

// Provider is an in-process locking.Provider. Expiry is lazy: an entry is
// dropped when an operation finds it past its deadline, measured with
// package time, so the provider starts no goroutine and runs on fake time
// inside testing/synctest bubbles. Create it inside the bubble that uses it.
//
// It implements every optional capability of locking.Provider: events
// (locking.Subscriber), resign requests (locking.ResignRequester),
// participants (locking.ParticipantRegistry), inspection
// (locking.Inspector) and the scheduler's job records
// (locking.RecordStore, with jobrecord.State).
type Provider struct {
	mu      sync.Mutex
	entries map[string]entry
	meta    map[string]*meta // fences and participants, by provider key
	state   map[string]int64
	events  *eventhub.Hub // always live: in process, a subscription never drops
	yields  participants.Yields
	// reserved holds the keys released to a named successor with a hold
	// (locking.ReleaseRequest.Hold), until it takes them or the hold ends.
	reserved map[string]reservation
	writes   int
	// versions numbers the job records' writes (RecordStore).
	versions int64
	// jobSlots gives the provider the earlier job-slot methods of
	// jobrecord.Jobs (ClaimSlot, CompleteSlot, SetJobPaused, JobStatus,
	// JobHistory), kept for code that calls a provider directly: they
	// are jobrecord.Store's over this provider, which decides every job
	// rule (V1). Its Advance and State are the provider's own.
	*jobSlots
}

// jobSlots is jobrecord.Store, embedded in Provider for its job-slot methods.
type jobSlots = jobrecord.Store

// reservation keeps a released key for the owner it was handed to.
type reservation struct {
	owner string
	until time.Time
}

// meta is what the provider keeps about a key beyond its lease: the last
// fence issued (kept for the provider's lifetime, so fences never repeat)
// and the participants.
type meta struct {
	fence        uint64
	participants []participant // a few per key: a slice costs less than a map
}

// live yields m's participants registered at now (m may be nil).
func (m *meta) live(now time.Time) iter.Seq[locking.Participant] {
	return func(yield func(locking.Participant) bool) {
		if m == nil {
			return
		}
		for _, pt := range m.participants {
			if now.Before(pt.expires) && !yield(locking.Participant{Owner: pt.owner, Since: pt.since, Priority: pt.priority}) {
				return
			}
		}
	}
}

// participant is one registration.
type participant struct {
	owner          string
	since, expires time.Time
	priority       int
}

type entry struct {
	value   string
	expires time.Time
}

// WithdrawsOnRelease implements locking.ReleaseWithdrawer.
func (*Provider) WithdrawsOnRelease() bool { return true }

// ReservesOnRelease implements locking.ReleaseReserver.
func (*Provider) ReservesOnRelease() bool { return true }

var (
	_ locking.Provider            = (*Provider)(nil)
	_ locking.Subscriber          = (*Provider)(nil)
	_ locking.ResignRequester     = (*Provider)(nil)
	_ locking.ParticipantRegistry = (*Provider)(nil)
	_ locking.ReleaseWithdrawer   = (*Provider)(nil)
	_ locking.ReleaseReserver     = (*Provider)(nil)
	_ locking.Inspector           = (*Provider)(nil)
	_ locking.RecordStore         = (*Provider)(nil)
	_ jobrecord.State             = (*Provider)(nil)
	_ jobrecord.Jobs              = (*Provider)(nil)
)

// New returns an empty provider.
func New() *Provider {
	p := &Provider{
		entries:  make(map[string]entry),
		meta:     make(map[string]*meta),
		state:    make(map[string]int64),
		reserved: make(map[string]reservation),
		events:   eventhub.New(eventhub.Options{}),
	}
	p.events.Up()
	p.jobSlots = jobrecord.NewStore(p, p)
	return p
}

// NewLock is a shorthand for locking.New(New(), o): a lock that owns a
// fresh provider (the same shape as redislock.NewLock).
func NewLock(o locking.Options) (*locking.DistributedLock, error) {
	return locking.New(New(), o)
}

// live returns key's entry when it exists and has not expired; it drops an
// expired one. p.mu must be held.
func (p *Provider) live(key string, now time.Time) (entry, bool) {
	e, ok := p.entries[key]
	if !ok {
		return entry{}, false
	}
	if !now.Before(e.expires) {
		delete(p.entries, key)
		return entry{}, false
	}
	return e, true
}

// wrote counts a write and sweeps expired entries now and then. p.mu must
// be held.
func (p *Provider) wrote(now time.Time) {
	p.writes++
	if p.writes%sweepEvery != 0 {
		return
	}
	for k, e := range p.entries {
		if !now.Before(e.expires) {
			delete(p.entries, k)
		}
	}
}

// Acquire implements locking.Provider: the fence is
// max(last fence + 1, now in microseconds since the Unix epoch), so fences
// increase per key across holders; the last one is kept for the
// provider's lifetime.
func (p *Provider) Acquire(ctx context.Context, r locking.AcquireRequest) (locking.AcquireResult, error) {
	if err := ctx.Err(); err != nil {
		return locking.AcquireResult{}, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.register(r.Key, r.Owner, r.ParticipantTTL, r.Priority, now)
	// refused answers as while held, for remaining, with the top priority
	// among the live participants (B2).
	refused := func(remaining time.Duration, holder string) (locking.AcquireResult, error) {
		top := participants.Top(p.meta[r.Key].live(now), r.Owner, r.Priority, r.ParticipantTTL > 0)
		return locking.AcquireResult{Remaining: remaining, HolderValue: holder, TopPriority: top}, nil
	}
	if e, ok := p.live(r.Key, now); ok {
		return refused(e.expires.Sub(now), e.value)
	}
	if res, ok := p.reserved[r.Key]; ok {
		switch {
		case !now.Before(res.until):
			delete(p.reserved, r.Key)
		case res.owner != r.Owner:
			// B1: handed to another participant, whose key it stays
			// until it takes it or the hold ends.
			return refused(res.until.Sub(now), "")
		}
	}
	m := p.metaOf(r.Key)
	if r.Yield > 0 && r.ParticipantTTL > 0 {
		// B2: a higher-priority live participant gets the first chance.
		if top, ok := participants.Higher(m.live(now), r.Owner, r.Priority); ok {
			if wait := p.yields.Wait(r.Key, r.Yield, now); wait > 0 {
				return locking.AcquireResult{Remaining: wait, TopPriority: top}, nil
			}
		}
	}
	p.yields.Reset(r.Key)
	delete(p.reserved, r.Key)
	m.fence = max(m.fence+1, uint64(max(now.UnixMicro(), 0)))
	p.entries[r.Key] = entry{value: r.Value, expires: now.Add(r.TTL)}
	p.wrote(now)
	p.publish(r.Key, locking.Event{Kind: locking.EventAcquired, Owner: r.Owner, Fence: m.fence})
	return locking.AcquireResult{Acquired: true, Fence: m.fence}, nil
}

// metaOf returns key's meta, creating it. p.mu must be held.
func (p *Provider) metaOf(key string) *meta {
	m := p.meta[key]
	if m == nil {
		m = &meta{}
		p.meta[key] = m
	}
	return m
}

// register makes owner a participant of key until now+ttl, keeping its
// first registration time; ttl ≤ 0 registers nothing. p.mu must be held.
func (p *Provider) register(key, owner string, ttl time.Duration, priority int, now time.Time) {
	if ttl <= 0 {
		return
	}
	m := p.metaOf(key)
	live := m.participants[:0]
	found := false
	for _, pt := range m.participants {
		switch {
		case pt.owner == owner:
			if !now.Before(pt.expires) {
				pt.since = now
			}
			pt.expires = now.Add(ttl)
			pt.priority = priority
			found = true
		case !now.Before(pt.expires):
			continue // expired: dropped
		}
		live = append(live, pt)
	}
	if n := len(live); n < len(m.participants) {
		clear(m.participants[n:]) // drop the owners' strings
	}
	if !found {
		live = append(live, participant{owner: owner, since: now, expires: now.Add(ttl), priority: priority})
	}
	m.participants = live
}

// Extend implements locking.Provider. Preempt is set when a
// participant with a higher priority than r.Priority has been registered
// for at least r.TTL (B2). Only an extension refreshes the registration:
// a renewal that finds the lease released registers nobody (H2).
func (p *Provider) Extend(ctx context.Context, r locking.ExtendRequest) (locking.ExtendResult, error) {
	if err := ctx.Err(); err != nil {
		return locking.ExtendResult{}, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.live(r.Key, now)
	if !ok || e.value != r.Value {
		return locking.ExtendResult{}, nil // registers nobody (H2)
	}
	p.register(r.Key, r.Owner, r.ParticipantTTL, r.Priority, now)
	p.entries[r.Key] = entry{value: r.Value, expires: now.Add(r.TTL)}
	res := locking.ExtendResult{Extended: true}
	if r.ParticipantTTL > 0 {
		res.Participants, res.Preempt = participants.Extension(p.meta[r.Key].live(now), r.Owner, r.Priority, r.TTL, now)
	}
	return res, nil
}

// Release implements locking.Provider: the EventReleased it publishes
// names r.Target as the participant meant to take the key (B1), and with
// r.Hold the key stays r.Target's for that long (locking.ReleaseReserver). It
// withdraws r.Withdraw from the key's participants first, under the same
// hold of the provider's mutex (locking.ReleaseWithdrawer).
func (p *Provider) Release(ctx context.Context, r locking.ReleaseRequest) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.Withdraw != "" {
		p.deregister(r.Key, r.Withdraw)
	}
	e, ok := p.live(r.Key, now)
	if !ok || e.value != r.Value {
		return false, nil
	}
	delete(p.entries, r.Key)
	if r.Target != "" && r.Hold > 0 {
		p.reserved[r.Key] = reservation{owner: r.Target, until: now.Add(r.Hold)}
	}
	p.publish(r.Key, locking.Event{Kind: locking.EventReleased, Owner: r.Target})
	return true, nil
}

// Get returns the value stored under key and its remaining time to live;
// ok is false when key is absent (for tests).
func (p *Provider) Get(ctx context.Context, key string) (string, time.Duration, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", 0, false, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.live(key, now)
	if !ok {
		return "", 0, false, nil
	}
	return e.value, e.expires.Sub(now), true, nil
}

// Advance implements jobrecord.State.
func (p *Provider) Advance(ctx context.Context, key string, value int64) (bool, int64, error) {
	if err := ctx.Err(); err != nil {
		return false, 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.state[key]; ok && cur >= value {
		return false, cur, nil
	}
	p.state[key] = value
	return true, value, nil
}

// State implements jobrecord.State.
func (p *Provider) State(ctx context.Context, key string) (int64, bool, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.state[key]
	return v, ok, nil
}

// Len reports how many unexpired leases the provider holds (for tests).
func (p *Provider) Len() int {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.entries {
		if now.Before(e.expires) {
			n++
		}
	}
	return n
}
