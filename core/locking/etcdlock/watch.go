package etcdlock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/kit/eventhub"
)

// minBackoff is the first wait before a lost watch is restored.
const minBackoff = 10 * time.Millisecond

// watches runs the provider's etcd watches, one per key with subscribers
// (the event hub starts and stops them), each on a goroutine of its own,
// and the provider's background refreshes; close stops them all and waits.
type watches struct {
	p      *Provider
	hub    *eventhub.Hub
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the watch goroutines and background refreshes
	closed atomic.Bool

	// goMu orders starting a goroutine (goUnlessClosed) before close's
	// Wait: none starts once close has set closed.
	goMu sync.Mutex
}

// goUnlessClosed runs f on a goroutine that close waits for, unless the
// provider is closed; it reports whether f was started.
func (w *watches) goUnlessClosed(f func()) bool {
	w.goMu.Lock()
	defer w.goMu.Unlock()
	if w.closed.Load() {
		return false
	}
	w.wg.Go(f)
	return true
}

func newWatches(p *Provider) *watches {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watches{p: p, ctx: ctx, cancel: cancel}
	w.hub = eventhub.New(eventhub.Options{Listen: w.listen, ErrClosed: ErrClosed})
	return w
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
	return p.w.hub.Subscribe(key, fn)
}

// listen starts key's watch, which the function it returns ends.
func (w *watches) listen(_ string, l *eventhub.Link) func() {
	ctx, cancel := context.WithCancel(w.ctx)
	if !w.goUnlessClosed(func() { w.run(ctx, l) }) {
		cancel() // closed: the hub's Close tells the subscribers
	}
	return cancel
}

// isClosed reports whether close was called.
func (w *watches) isClosed() bool { return w.closed.Load() }

// close ends every watch and waits for the goroutines; false when it was
// closed already.
func (w *watches) close() bool {
	w.goMu.Lock()
	first := w.closed.CompareAndSwap(false, true)
	w.goMu.Unlock()
	if !first {
		return false
	}
	w.hub.Close() // no listen call is under way or to come
	w.cancel()
	w.wg.Wait()
	return true
}

// run keeps l's watch until ctx ends, restoring it with backoff.
func (w *watches) run(ctx context.Context, l *eventhub.Link) {
	backoff := minBackoff
	start, end := w.p.recRange(l.Key())
	for {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		ch := w.p.cli.Watch(wctx, start, clientv3.WithRange(end), clientv3.WithCreatedNotify())
		for resp := range ch {
			if resp.Err() != nil || resp.Canceled {
				break
			}
			if resp.Created {
				backoff = minBackoff
				l.Up()
				continue
			}
			w.deliver(l, resp.Events)
		}
		cancel()
		l.Down()
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
		backoff = min(2*backoff, w.p.o.ReconnectMax)
	}
}

// deliver translates one watch response's events: a put of the fence
// record is an acquisition; a deletion of the lease record a release (or
// an expiry), naming the successor a note of the same revision names; a
// handover (see handoff.go) a release naming the successor, before its
// acquisition, and an offer the successor's acquisition adopts; a resign
// note a resign request.
func (w *watches) deliver(l *eventhub.Link, evs []*clientv3.Event) {
	for i, ev := range evs {
		k := ev.Kv.Key
		if len(k) == 0 {
			continue
		}
		switch rec := k[len(k)-1]; {
		case rec == recFence && ev.Type == mvccpb.PUT:
			for _, n := range evs {
				if nk := n.Kv.Key; len(nk) > 0 && nk[len(nk)-1] == recLease && n.Kv.ModRevision == ev.Kv.ModRevision {
					if s, ok := isHandover(n, evs); ok {
						// The offer is in place before the successor hears of it.
						w.p.offers.set(l.Key(), offer{target: s, value: string(n.Kv.Value), lease: clientv3.LeaseID(n.Kv.Lease), rev: n.Kv.ModRevision,
							session: handoverSession(evs, n.Kv.ModRevision)})
						l.Publish(locking.Event{Kind: locking.EventReleased, Owner: s})
					}
				}
			}
			l.Publish(locking.Event{Kind: locking.EventAcquired, Owner: string(ev.Kv.Value)})
		case rec == recLease && ev.Type == mvccpb.PUT && ev.Kv.CreateRevision == ev.Kv.ModRevision:
			w.p.offers.drop(l.Key()) // an acquisition
		case rec == recLease && ev.Type == mvccpb.DELETE:
			w.p.offers.drop(l.Key())
			// A release writes its note in the same revision; a deletion
			// without one is the lease ended by the server: run out, or
			// revoked (an operator's release, a member that revoked
			// live leases), while its holder may still believe it holds
			// the key.
			e := locking.Event{Kind: locking.EventReleased, Expired: true}
			for _, n := range evs[i+1:] {
				if v := n.Kv.Value; n.Kv.ModRevision == ev.Kv.ModRevision && n.Type == mvccpb.PUT &&
					n.Kv.Key[len(n.Kv.Key)-1] == recNote && len(v) > 0 && v[0] == 'r' {
					e.Owner, e.Expired = string(v[1:]), false
				}
			}
			l.Publish(e)
		case rec == recNote && ev.Type == mvccpb.PUT && len(ev.Kv.Value) > 0 && ev.Kv.Value[0] == 's':
			l.Publish(locking.Event{Kind: locking.EventResign, Owner: string(ev.Kv.Value[1:])})
		}
	}
}
