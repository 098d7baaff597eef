package pglock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hostloom/hostloom/core/locking"
)

// Notification payloads: a JSON object {"t": table, "e": event, "k": key,
// "o": owner} on the channel named like the lease table. The table
// (schema-qualified when set) tells apart providers of two schemas that
// share a table name, hence a channel.
type payload struct {
	Table string `json:"t"`
	Event string `json:"e"`
	Key   string `json:"k"`
	Owner string `json:"o"`
}

// decodeEvent parses a notification for table; ok is false for a payload
// that is not ours (another table, a later version's event).
func decodeEvent(table, s string) (key string, e locking.Event, ok bool) {
	var m payload
	if json.Unmarshal([]byte(s), &m) != nil || m.Table != table {
		return "", e, false
	}
	switch m.Event {
	case "released":
		e.Kind = locking.EventReleased
	case "acquired":
		e.Kind = locking.EventAcquired
	case "resign":
		e.Kind = locking.EventResign
	default:
		return "", e, false
	}
	e.Owner = m.Owner
	return m.Key, e, true
}

// minBackoff is the first wait before reconnecting the LISTEN connection.
const minBackoff = 10 * time.Millisecond

// idleCheck is how long the LISTEN connection waits for a notification
// before it checks that the server still answers (a link that died
// silently is found within idleCheck + pingTimeout).
const (
	idleCheck   = 15 * time.Second
	pingTimeout = 5 * time.Second
)

// watcher is one local watch: a Watch (wake), a WatchEvents (events) or a
// WatchEventsFunc (fn).
type watcher struct {
	wake   chan struct{}
	events chan locking.Event
	fn     func(locking.Event)
}

func (w *watcher) wantsEvents() bool { return w.events != nil || w.fn != nil }

// send delivers e to an event watcher; listener.mu is held, which
// serialises the deliveries to one watcher.
func (w *watcher) send(e locking.Event) {
	if w.fn != nil {
		w.fn(e)
		return
	}
	locking.SendEvent(w.events, e)
}

// listener owns the provider's LISTEN connection: one goroutine, started
// by the first watch, stopped by close.
type listener struct {
	p *Provider

	mu       sync.Mutex
	watchers map[string][]*watcher // by provider key
	live     bool                  // LISTEN confirmed on the current connection
	started  bool
	closed   bool
	cancel   context.CancelFunc
	done     chan struct{}
}

func newListener(p *Provider) *listener {
	return &listener{p: p, watchers: make(map[string][]*watcher), done: make(chan struct{})}
}

// Watch implements locking.ProviderWatcher: the channel receives
// (coalesced) after key is released through any provider on the same
// table, and once after every reconnection of the LISTEN connection (a
// release may have been missed meanwhile). With DisableNotifications, or
// after Close, it never receives.
func (p *Provider) Watch(key string) (<-chan struct{}, func()) {
	w := &watcher{wake: make(chan struct{}, 1)}
	return w.wake, p.l.add(key, w)
}

// WatchEvents implements locking.ProviderEvents: releases, acquisitions
// (with the new holder's owner), resign requests, and the state of the
// LISTEN connection: EventSubscribed once LISTEN is confirmed (at first
// and after every reconnection), EventUnsubscribed when the connection is
// lost or the provider closed. The channel holds locking.EventBuffer
// events (see locking.SendEvent). With DisableNotifications, or after
// Close, it never receives, so an elector keeps polling.
func (p *Provider) WatchEvents(key string) (<-chan locking.Event, func()) {
	w := &watcher{events: make(chan locking.Event, locking.EventBuffer)}
	return w.events, p.l.add(key, w)
}

// WatchEventsFunc implements locking.ProviderEventFuncs: WatchEvents
// delivering by calling fn on the provider's LISTEN goroutine with the
// provider's watch mutex held, so fn must return at once and must not call
// the provider.
func (p *Provider) WatchEventsFunc(key string, fn func(locking.Event)) func() {
	return p.l.add(key, &watcher{fn: fn})
}

// PublishResign implements locking.ProviderEvents: a resign request for
// owner ("" for whoever holds key) through NOTIFY. With
// DisableNotifications it returns an error matching
// locking.ErrNotSupported: nobody listens.
func (p *Provider) PublishResign(ctx context.Context, key, owner string) error {
	if p.o.DisableNotifications {
		return fmt.Errorf("pglock: resign %q: notifications are disabled: %w", key, locking.ErrNotSupported)
	}
	if err := p.begin(ctx, "resign"); err != nil {
		return err
	}
	if _, err := p.pool.Exec(ctx, p.sql.resign, execMode, p.t.name, key, owner, p.t.qualified); err != nil {
		return opError("resign", ctx, err)
	}
	return nil
}

// add registers w for key and returns its stop function.
func (l *listener) add(key string, w *watcher) func() {
	if l.p.o.DisableNotifications {
		return func() {}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return func() {}
	}
	l.watchers[key] = append(l.watchers[key], w)
	if w.wantsEvents() && l.live {
		w.send(locking.Event{Kind: locking.EventSubscribed})
	}
	if !l.started {
		l.started = true
		ctx, cancel := context.WithCancel(context.Background())
		l.cancel = cancel
		go l.run(ctx)
	}
	var once sync.Once
	return func() { once.Do(func() { l.remove(key, w) }) }
}

// remove drops one watcher. The connection stays open until Close: its
// cost is one idle session, and the next watch needs no LISTEN round trip.
func (l *listener) remove(key string, w *watcher) {
	l.mu.Lock()
	defer l.mu.Unlock()
	set := l.watchers[key]
	for i, c := range set {
		if c == w {
			set = append(set[:i:i], set[i+1:]...)
			break
		}
	}
	if len(set) == 0 {
		delete(l.watchers, key)
	} else {
		l.watchers[key] = set
	}
}

// close stops the goroutine and waits for it.
func (l *listener) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	started := l.started
	if started {
		l.cancel()
	}
	l.mu.Unlock()
	if started {
		<-l.done
	}
	l.mu.Lock()
	clear(l.watchers)
	l.mu.Unlock()
}

// run keeps a LISTEN connection open until ctx ends, reconnecting with
// backoff (minBackoff doubling up to Options.ReconnectMax).
func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	backoff := minBackoff
	lost := false
	for {
		err := l.session(ctx, func() {
			backoff = minBackoff
			l.subscribed(lost)
		})
		l.unsubscribed()
		if ctx.Err() != nil {
			return
		}
		_ = err // the subscription's state is what watchers learn; the cause is retried
		lost = true
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, l.p.o.ReconnectMax)
	}
}

// session connects, listens and dispatches notifications until the
// connection fails or ctx ends; live is called once LISTEN succeeded.
func (l *listener) session(ctx context.Context, live func()) error {
	cfg := l.p.pool.Config().ConnConfig.Copy()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(cctx)
		cancel()
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.p.t.name}.Sanitize(), pgx.QueryExecModeSimpleProtocol); err != nil {
		return err
	}
	live()
	for {
		wctx, cancel := context.WithTimeout(ctx, idleCheck)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !errors.Is(err, context.DeadlineExceeded) || conn.IsClosed() {
				return err
			}
			// Quiet for idleCheck: make sure the server still answers.
			pctx, cancel := context.WithTimeout(ctx, pingTimeout)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
			continue
		}
		l.dispatch(n)
	}
}

// dispatch delivers one notification to the watchers of its key.
func (l *listener) dispatch(n *pgconn.Notification) {
	key, e, ok := decodeEvent(l.p.t.qualified, n.Payload)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.watchers[key] {
		switch {
		case w.wantsEvents():
			w.send(e)
		case e.Kind == locking.EventReleased:
			wake(w.wake)
		}
	}
}

// subscribed marks the subscription live and tells every watcher; after a
// reconnection it also wakes every Watch.
func (l *listener) subscribed(again bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.live = true
	for _, set := range l.watchers {
		for _, w := range set {
			switch {
			case w.wantsEvents():
				w.send(locking.Event{Kind: locking.EventSubscribed})
			case again:
				wake(w.wake)
			}
		}
	}
}

// unsubscribed marks the subscription lost and tells the event watchers,
// when it was live.
func (l *listener) unsubscribed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.live {
		return
	}
	l.live = false
	for _, set := range l.watchers {
		for _, w := range set {
			if w.wantsEvents() {
				w.send(locking.Event{Kind: locking.EventUnsubscribed})
			}
		}
	}
}

// wake sends on ch unless a wake-up is already pending (coalesced).
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
