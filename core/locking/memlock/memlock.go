package memlock

import (
	"context"
	"sync"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

// sweepEvery is how many writes pass between sweeps of expired entries, so
// keys nobody touches again do not accumulate.
const sweepEvery = 1024

// Provider is an in-process locking.Provider. Expiry is lazy: an entry is
// dropped when an operation finds it past its deadline, measured with
// package time, so the provider starts no goroutine and runs on fake time
// inside testing/synctest bubbles. Create it inside the bubble that uses it.
//
// It implements the optional release notification (locking.ProviderWatcher),
// holder lookup (locking.ProviderHolder) and state (locking.ProviderState).
type Provider struct {
	mu       sync.Mutex
	entries  map[string]entry
	state    map[string]int64
	watchers map[string]map[chan struct{}]struct{}
	writes   int
}

type entry struct {
	value   string
	expires time.Time
}

var (
	_ locking.Provider        = (*Provider)(nil)
	_ locking.ProviderWatcher = (*Provider)(nil)
	_ locking.ProviderHolder  = (*Provider)(nil)
	_ locking.ProviderState   = (*Provider)(nil)
)

// New returns an empty provider.
func New() *Provider {
	return &Provider{
		entries:  make(map[string]entry),
		state:    make(map[string]int64),
		watchers: make(map[string]map[chan struct{}]struct{}),
	}
}

// NewLock is a shorthand for locking.New(New(), o).
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

// Acquire implements locking.Provider.
func (p *Provider) Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return false, 0, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.live(key, now); ok {
		return false, e.expires.Sub(now), nil
	}
	p.entries[key] = entry{value: value, expires: now.Add(ttl)}
	p.wrote(now)
	return true, 0, nil
}

// Extend implements locking.Provider.
func (p *Provider) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.live(key, now)
	if !ok || e.value != value {
		return false, nil
	}
	p.entries[key] = entry{value: value, expires: now.Add(ttl)}
	return true, nil
}

// Release implements locking.Provider and notifies key's watchers.
func (p *Provider) Release(ctx context.Context, key, value string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.live(key, now)
	if !ok || e.value != value {
		return false, nil
	}
	delete(p.entries, key)
	for ch := range p.watchers[key] {
		select {
		case ch <- struct{}{}:
		default: // coalesced: a notification is already pending
		}
	}
	return true, nil
}

// Watch implements locking.ProviderWatcher.
func (p *Provider) Watch(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	p.mu.Lock()
	set := p.watchers[key]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		p.watchers[key] = set
	}
	set[ch] = struct{}{}
	p.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			delete(p.watchers[key], ch)
			if len(p.watchers[key]) == 0 {
				delete(p.watchers, key)
			}
		})
	}
}

// Get implements locking.ProviderHolder.
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

// Advance implements locking.ProviderState.
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

// State implements locking.ProviderState.
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
