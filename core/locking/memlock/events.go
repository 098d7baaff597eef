package memlock

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

// eventWatcher is one Subscribe callback.
type eventWatcher struct {
	fn func(locking.Event)
}

// send calls the callback. The caller holds p.mu, which serialises
// deliveries to one watcher.
func (w *eventWatcher) send(e locking.Event) { w.fn(e) }

// publish sends e to key's event watchers. p.mu must be held.
func (p *Provider) publish(key string, e locking.Event) {
	for w := range p.events[key] {
		w.send(e)
	}
}

// Subscribe implements locking.Subscriber. In process the subscription is
// live at once and never drops: the first event is EventSubscribed. fn is
// called with the provider's mutex held, so it must return at once and
// must not call the provider.
func (p *Provider) Subscribe(key string, fn func(locking.Event)) (func(), error) {
	if fn == nil {
		return nil, errors.New("memlock: subscribe: nil callback")
	}
	return p.watchEvents(key, &eventWatcher{fn: fn}), nil
}

// watchEvents registers w for key's events and returns its stop function.
func (p *Provider) watchEvents(key string, w *eventWatcher) func() {
	p.mu.Lock()
	set := p.events[key]
	if set == nil {
		set = make(map[*eventWatcher]struct{})
		p.events[key] = set
	}
	set[w] = struct{}{}
	w.send(locking.Event{Kind: locking.EventSubscribed})
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			delete(p.events[key], w)
			if len(p.events[key]) == 0 {
				delete(p.events, key)
			}
		})
	}
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
	for _, pt := range m.participants {
		if now.Before(pt.expires) {
			ps = append(ps, locking.Participant{Owner: pt.owner, Since: pt.since, Priority: pt.priority})
		}
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
	if m := p.meta[key]; m != nil {
		m.participants = slices.DeleteFunc(m.participants, func(pt participant) bool { return pt.owner == owner })
	}
	return nil
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
