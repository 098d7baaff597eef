package eventhub

import (
	"errors"
	"slices"
	"sync"

	"github.com/hostloom/hostloom/core/locking"
)

// ErrClosed is what Subscribe returns after Close when Options.ErrClosed
// is nil.
var ErrClosed = errors.New("eventhub: closed")

// Options configure a Hub. The zero value is valid: a hub with nothing to
// start per key.
type Options struct {
	// Listen, when set, is called when key gets its first subscriber, to
	// start listening to it (a LISTEN, a SUBSCRIBE, a watch). Its
	// transport reports through l: l.Up once the backend confirmed the
	// subscription, l.Publish for each event, l.Down when it was lost.
	// Listen returns the function that stops listening, called when the
	// key's last subscriber stops (nil when there is nothing to stop).
	//
	// Listen and the function it returns run outside the hub's mutex, so
	// they may do bounded I/O; for one key they run one at a time and in
	// order (the stop function of a key has returned before Listen is
	// called again for it), and the Subscribe or stop call that caused
	// them waits for them. Other subscribers of the key wait too, so a
	// Subscribe returns once the key is being listened to. Nil: nothing
	// to start (a backend whose one link serves every key reports through
	// Hub.Up, Hub.Down and Hub.Publish).
	Listen func(key string, l *Link) (unlisten func())

	// ErrClosed is the error Subscribe returns after Close; nil means
	// package ErrClosed.
	ErrClosed error
}

// Hub is the per-key registry of event subscribers that a lock provider
// serves locking.Subscriber from (see the package documentation). Every
// callback is called with the hub's mutex held, which serialises the
// deliveries to each subscriber. The zero Hub is not usable: use New.
type Hub struct {
	listen    func(key string, l *Link) func()
	errClosed error

	mu     sync.Mutex
	topics map[string]*topic
	up     bool // the link that serves every key is live (Up)
	closed bool
}

// topic is one key: its subscribers and its link.
type topic struct {
	key string

	// Guarded by Hub.mu.
	subs []*sub
	live bool  // EventSubscribed was delivered and no EventUnsubscribed since
	link *Link // the current Listen's link; nil while not listened to
	refs int   // subscribers, and Subscribe and stop calls under way

	// op serialises Listen and unlisten for the key; it also guards
	// unlisten. The hub's mutex is never held while waiting for it.
	op       sync.Mutex
	unlisten func()
}

// sub is one subscription.
type sub struct{ fn func(locking.Event) }

// send delivers e to t's subscribers, in the order they subscribed.
// Hub.mu must be held.
func (t *topic) send(e locking.Event) {
	for _, s := range t.subs {
		s.fn(e)
	}
}

// New returns an empty hub whose keys are not live until the backend
// says so (Hub.Up, or Link.Up per key).
func New(o Options) *Hub {
	errClosed := o.ErrClosed
	if errClosed == nil {
		errClosed = ErrClosed
	}
	return &Hub{listen: o.Listen, errClosed: errClosed, topics: make(map[string]*topic)}
}

// Subscribe registers fn for key's events and returns its stop function,
// which is idempotent. fn gets EventSubscribed at once, before Subscribe
// returns, when key is live (Hub.Up was called, or key's link reported
// Link.Up), else when it becomes live. The first subscriber of a key
// calls Options.Listen before Subscribe returns; the last one to stop
// calls the function Listen returned before stop returns.
//
// Subscribe fails with Options.ErrClosed after Close; stop is then nil.
func (h *Hub) Subscribe(key string, fn func(locking.Event)) (stop func(), err error) {
	if fn == nil {
		return nil, errors.New("eventhub: subscribe: nil callback")
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, h.errClosed
	}
	t := h.topics[key]
	if t == nil {
		t = &topic{key: key}
		h.topics[key] = t
	}
	t.refs++
	h.mu.Unlock()

	t.op.Lock()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		t.op.Unlock()
		h.release(t)
		return nil, h.errClosed
	}
	var l *Link
	if t.link == nil {
		l = &Link{h: h, t: t}
		t.link, t.live = l, h.up
	}
	s := &sub{fn: fn}
	t.subs = append(t.subs, s)
	if t.live {
		fn(locking.Event{Kind: locking.EventSubscribed})
	}
	h.mu.Unlock()
	if l != nil && h.listen != nil {
		t.unlisten = h.listen(key, l)
	}
	t.op.Unlock()

	var once sync.Once
	return func() { once.Do(func() { h.stop(t, s) }) }, nil
}

// stop removes s from t; the last subscriber stops listening.
func (h *Hub) stop(t *topic, s *sub) {
	t.op.Lock()
	h.mu.Lock()
	var unlisten func()
	if i := slices.Index(t.subs, s); i >= 0 {
		t.subs = slices.Delete(t.subs, i, i+1)
		if len(t.subs) == 0 && t.link != nil {
			t.link, t.live = nil, false
			unlisten, t.unlisten = t.unlisten, nil
		}
	}
	h.mu.Unlock()
	if unlisten != nil {
		unlisten()
	}
	t.op.Unlock()
	h.release(t)
}

// release drops one reference to t, and t with the last.
func (h *Hub) release(t *topic) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t.refs--
	if t.refs == 0 && h.topics[t.key] == t {
		delete(h.topics, t.key)
	}
}

// Publish delivers e to key's subscribers, for a backend whose one link
// serves every key (memlock delivers in process; pglock decodes key from
// a notification). A backend that listens per key publishes through the
// key's Link instead. Publish does not allocate.
func (h *Hub) Publish(key string, e locking.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.topics[key]; t != nil {
		t.send(e)
	}
}

// Up reports that the link that serves every key is live (a backend with
// one connection for all its keys, or one that is always live): every
// subscriber gets EventSubscribed, and so do later ones when they
// subscribe, until Down.
func (h *Hub) Up() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.up = true
	for _, t := range h.topics {
		if t.link != nil {
			t.live = true
			t.send(locking.Event{Kind: locking.EventSubscribed})
		}
	}
}

// Down reports that the link that serves every key was lost: the
// subscribers of every live key get EventUnsubscribed, and later
// subscribers wait for the next Up.
func (h *Hub) Down() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.up = false
	for _, t := range h.topics {
		if t.live {
			t.live = false
			t.send(locking.Event{Kind: locking.EventUnsubscribed})
		}
	}
}

// Close ends the hub: the subscribers of every live key get
// EventUnsubscribed, every subscriber is forgotten (stop functions do
// nothing more), later calls of Subscribe fail, and reports from links
// are ignored. Close waits for Listen calls and stop functions under way;
// after it returns Listen is never called again. It does not call the
// functions Listen returned: the backend stops its transport itself, after
// Close. Close is idempotent.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed, h.up = true, false
	ts := make([]*topic, 0, len(h.topics))
	for _, t := range h.topics {
		if t.live {
			t.send(locking.Event{Kind: locking.EventUnsubscribed})
		}
		t.subs, t.link, t.live = nil, nil, false
		ts = append(ts, t)
	}
	clear(h.topics)
	h.mu.Unlock()
	for _, t := range ts {
		t.op.Lock()
		//lint:ignore SA2001 waiting for the hooks under way is the point
		t.op.Unlock()
	}
}

// Link is a backend's handle on one key while it listens to it (from
// Options.Listen until the function Listen returned is called, or Close).
// Reports through a link that ended are ignored, so a late report from a
// transport being stopped never reaches the subscribers of the key's next
// Listen. A nil *Link ignores every report.
type Link struct {
	h *Hub
	t *topic
}

// Key returns the key the link listens to.
func (l *Link) Key() string { return l.t.key }

// Up reports that the backend confirmed the key's subscription: its
// subscribers get EventSubscribed, each time Up is called (a backend
// confirms once per subscription made, so a second confirmation means a
// second subscription, behind which events may have been missed), and
// later subscribers get it at once.
func (l *Link) Up() {
	if l == nil {
		return
	}
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if l.t.link != l {
		return
	}
	l.t.live = true
	l.t.send(locking.Event{Kind: locking.EventSubscribed})
}

// Down reports that the key's subscription was lost: its subscribers get
// EventUnsubscribed when it was live, and later subscribers wait for the
// next Up.
func (l *Link) Down() {
	if l == nil {
		return
	}
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if l.t.link != l || !l.t.live {
		return
	}
	l.t.live = false
	l.t.send(locking.Event{Kind: locking.EventUnsubscribed})
}

// Publish delivers e to the key's subscribers. It does not allocate.
func (l *Link) Publish(e locking.Event) {
	if l == nil {
		return
	}
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if l.t.link != l {
		return
	}
	l.t.send(e)
}
