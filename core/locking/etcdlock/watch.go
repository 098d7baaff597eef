package etcdlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/locking"
)

// minBackoff is the first wait before a lost watch is restored.
const minBackoff = 10 * time.Millisecond

// hub owns the provider's watches: one etcd watch per watched key, shared
// by the key's subscribers, each run by a goroutine of its own that the
// hub stops and waits for.
type hub struct {
	p *Provider

	mu     sync.Mutex
	keys   map[string]*keyWatch
	closed bool
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the watch goroutines and background refreshes
}

// keyWatch is the watch of one key and its subscribers.
type keyWatch struct {
	key    string
	subs   []*sub
	live   bool // the watch is established
	cancel context.CancelFunc
}

// sub is one subscription; its callback is called with hub.mu held, which
// serialises the deliveries to it.
type sub struct{ fn func(locking.Event) }

func newHub(p *Provider) *hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &hub{p: p, keys: make(map[string]*keyWatch), ctx: ctx, cancel: cancel}
}

// Subscribe implements locking.Subscriber with an etcd watch of key's
// records: its acquisitions (EventAcquired with the owner), releases and
// expiries (EventReleased, naming the successor of a handover), resign
// requests (EventResign), and the watch's state: EventSubscribed once
// etcd confirms the watch (at once for a later subscriber of a watched
// key) and EventUnsubscribed when it is lost (the member lost its raft
// leader, the connection broke) or the provider closed; the watch is
// then restored with backoff. Events published while it is down are not
// replayed. fn is called on the key's watch goroutine with the
// provider's subscription mutex held, so it must return at once and must
// not call the provider.
//
// Subscribe does no I/O. It fails with ErrClosed after Close.
func (p *Provider) Subscribe(key string, fn func(locking.Event)) (func(), error) {
	if fn == nil {
		return nil, errors.New("etcdlock: subscribe: nil callback")
	}
	if err := checkKey("subscribe", key); err != nil {
		return nil, err
	}
	return p.hub.add(key, &sub{fn: fn})
}

// add registers s for key and returns its stop function.
func (h *hub) add(key string, s *sub) (func(), error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	kw := h.keys[key]
	if kw == nil {
		ctx, cancel := context.WithCancel(h.ctx)
		kw = &keyWatch{key: key, cancel: cancel}
		h.keys[key] = kw
		h.wg.Go(func() { h.run(ctx, kw) })
	}
	kw.subs = append(kw.subs, s)
	if kw.live {
		s.fn(locking.Event{Kind: locking.EventSubscribed})
	}
	var once sync.Once
	return func() { once.Do(func() { h.remove(kw, s) }) }, nil
}

// remove drops one subscriber; the last one ends the key's watch.
func (h *hub) remove(kw *keyWatch, s *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, c := range kw.subs {
		if c == s {
			kw.subs = append(kw.subs[:i:i], kw.subs[i+1:]...)
			break
		}
	}
	if len(kw.subs) == 0 && h.keys[kw.key] == kw {
		delete(h.keys, kw.key)
		kw.cancel()
	}
}

// isClosed reports whether close was called.
func (h *hub) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// close ends every watch and waits for the goroutines; false when it was
// closed already.
func (h *hub) close() bool {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return false
	}
	h.closed = true
	h.cancel()
	h.mu.Unlock()
	h.wg.Wait()
	h.mu.Lock()
	clear(h.keys)
	h.mu.Unlock()
	return true
}

// run keeps kw's watch until ctx ends, restoring it with backoff.
func (h *hub) run(ctx context.Context, kw *keyWatch) {
	backoff := minBackoff
	start, end := h.p.recRange(kw.key)
	for {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		ch := h.p.cli.Watch(wctx, start, clientv3.WithRange(end), clientv3.WithCreatedNotify())
		for resp := range ch {
			if resp.Err() != nil || resp.Canceled {
				break
			}
			if resp.Created {
				backoff = minBackoff
				h.deliverState(kw, true)
				continue
			}
			h.deliver(kw, resp.Events)
		}
		cancel()
		h.deliverState(kw, false)
		if ctx.Err() != nil {
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, h.p.o.ReconnectMax)
	}
}

// deliverState marks kw's watch live or lost and tells its subscribers on
// a change.
func (h *hub) deliverState(kw *keyWatch, live bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if kw.live == live {
		return
	}
	kw.live = live
	e := locking.Event{Kind: locking.EventUnsubscribed}
	if live {
		e.Kind = locking.EventSubscribed
	}
	for _, s := range kw.subs {
		s.fn(e)
	}
}

// deliver translates one watch response's events: a put of the fence
// record is an acquisition; a deletion of the lease record a release (or
// an expiry), naming the successor a note of the same revision names; a
// resign note a resign request.
func (h *hub) deliver(kw *keyWatch, evs []*clientv3.Event) {
	var out []locking.Event
	for i, ev := range evs {
		k := ev.Kv.Key
		if len(k) == 0 {
			continue
		}
		switch rec := k[len(k)-1]; {
		case rec == recFence && ev.Type == mvccpb.PUT:
			out = append(out, locking.Event{Kind: locking.EventAcquired, Owner: string(ev.Kv.Value)})
		case rec == recLease && ev.Type == mvccpb.DELETE:
			e := locking.Event{Kind: locking.EventReleased}
			for _, n := range evs[i+1:] {
				if v := n.Kv.Value; n.Kv.ModRevision == ev.Kv.ModRevision && n.Type == mvccpb.PUT &&
					n.Kv.Key[len(n.Kv.Key)-1] == recNote && len(v) > 0 && v[0] == 'r' {
					e.Owner = string(v[1:])
				}
			}
			out = append(out, e)
		case rec == recNote && ev.Type == mvccpb.PUT && len(ev.Kv.Value) > 0 && ev.Kv.Value[0] == 's':
			out = append(out, locking.Event{Kind: locking.EventResign, Owner: string(ev.Kv.Value[1:])})
		}
	}
	if len(out) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range out {
		for _, s := range kw.subs {
			s.fn(e)
		}
	}
}
