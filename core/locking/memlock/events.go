package memlock

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

// publish sends e to key's subscribers. p.mu must be held, which orders
// the events with the changes they report.
func (p *Provider) publish(key string, e locking.Event) { p.events.Publish(key, e) }

// Subscribe implements locking.Subscriber. In process the subscription is
// live at once and never drops: the first event is EventSubscribed. fn is
// called with the provider's event mutex held (and, for the events of an
// operation, the provider's mutex), so it must return at once and must
// not call the provider.
func (p *Provider) Subscribe(key string, fn func(locking.Event)) (func(), error) {
	if fn == nil {
		return nil, errors.New("memlock: subscribe: nil callback")
	}
	return p.events.Subscribe(key, fn)
}

// RequestResign implements locking.ResignRequester.
func (p *Provider) RequestResign(ctx context.Context, key, owner string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.publish(key, locking.Event{Kind: locking.EventResign, Owner: owner})
	return nil
}

// Participants implements locking.ParticipantRegistry.
func (p *Provider) Participants(ctx context.Context, key string) ([]locking.Participant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.participants(key, now), nil
}

// participants lists key's live participants. p.mu must be held.
func (p *Provider) participants(key string, now time.Time) []locking.Participant {
	m := p.meta[key]
	if m == nil {
		return nil
	}
	var ps []locking.Participant
	for pt := range m.live(now) {
		ps = append(ps, pt)
	}
	return ps
}

// Deregister implements locking.ParticipantRegistry.
func (p *Provider) Deregister(ctx context.Context, key, owner string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deregister(key, owner)
	return nil
}

// deregister removes owner from key's participants. p.mu must be held.
func (p *Provider) deregister(key, owner string) {
	if m := p.meta[key]; m != nil {
		m.participants = slices.DeleteFunc(m.participants, func(pt participant) bool { return pt.owner == owner })
	}
}

// Inspect implements locking.Inspector.
func (p *Provider) Inspect(ctx context.Context, key string) (locking.ProviderKeyState, error) {
	if err := ctx.Err(); err != nil {
		return locking.ProviderKeyState{}, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	var st locking.ProviderKeyState
	if e, ok := p.live(key, now); ok {
		st.Held, st.Value, st.TTL = true, e.value, e.expires.Sub(now)
	}
	if m := p.meta[key]; m != nil {
		st.Fence = m.fence
	}
	st.Participants = p.participants(key, now)
	return st, nil
}

// Keys implements locking.Inspector: keys with a live lease, a
// fence or participants.
func (p *Provider) Keys(ctx context.Context, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	var keys []string
	for k := range p.meta {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	for k, e := range p.entries {
		if _, dup := p.meta[k]; !dup && strings.HasPrefix(k, prefix) && now.Before(e.expires) {
			keys = append(keys, k)
		}
	}
	return keys, nil
}
