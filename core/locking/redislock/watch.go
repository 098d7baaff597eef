package redislock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/kit/eventhub"
	"github.com/hostloom/hostloom/core/locking/kit/roundtrip"
)

// Event channel payloads. Releases published by earlier versions carry an
// empty payload and count as releases.
const (
	releasedPayload = "released"
	acquiredPrefix  = "acquired:" // + owner (earlier versions: no fence)
	fencedPrefix    = "acquired@" // + fence + ":" + owner
	resignPrefix    = "resign:"   // + owner, "" for whoever holds the key
)

// watchTimeout bounds the SUBSCRIBE (or UNSUBSCRIBE) a Watch or its stop
// sends. A failure is not reported: go-redis remembers the channel and
// subscribes it again when it reconnects.
const watchTimeout = 2 * time.Second

// Receive loop backoff while the subscription cannot reconnect: the wait
// before the next attempt is 1/backoffShare of the time since the
// connection was lost, within [minBackoff, maxBackoff]. A short outage (a
// server restart) is noticed within minBackoff of its end, so a leader
// verifies its lease at once (Q1); a long one is noticed within 2% of its
// length, with about 50·ln(outage/250ms)+50 attempts in all (about 330
// for a minute).
const (
	minBackoff   = 5 * time.Millisecond
	maxBackoff   = time.Second
	backoffShare = 50
)

// reconnectWait is the wait before the next reconnection attempt when the
// connection was lost down ago.
func reconnectWait(down time.Duration) time.Duration {
	return min(max(down/backoffShare, minBackoff), maxBackoff)
}

// subscription is one pub/sub connection and the channels it listens to
// for the event hub.
// On standalone and Sentinel the provider has one, for all keys; on Redis
// Cluster one per hash slot in use (with UseHashTags: one per namespace),
// because a shard channel can only be subscribed on its slot's node.
type subscription struct {
	slot int
	ps   *redis.PubSub
	quit chan struct{} // closed when the subscription is retired
	// ctx is the receive loop's, cancelled when the subscription is
	// retired: a reconnection dialling a server that is down (see Dialer)
	// gives up then, so retiring does not wait for the dial.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the receive loop has returned
	// refreshed is closed when refreshMarks has returned.
	refreshed chan struct{}

	// op serialises the SUBSCRIBE/UNSUBSCRIBE commands (flushPubsub) and
	// retirement. It is never held by the receive loop.
	op      sync.Mutex
	started bool // receive loop running; guarded by op
	gone    bool // retired; guarded by op
	// wants holds the channels to subscribe (true) or unsubscribe that no
	// command was written for yet; guarded by Provider.mu.
	wants map[string]bool
	// flushing: a goroutine of unlisten's will flush wants (it has not
	// taken them yet); guarded by Provider.mu.
	flushing bool

	// links holds the hub's link of each channel subscribed, by channel;
	// guarded by Provider.mu (read by the loop).
	links map[string]*eventhub.Link
}

// Subscribe implements locking.Subscriber: fn receives key's releases,
// acquisitions (with the new holder's owner), resign requests, and the
// subscription's state: EventSubscribed once the server confirms the key's
// channel subscribed (at first and after every reconnection),
// EventUnsubscribed when the connection is lost or the provider is closed.
// fn is called with the event hub's mutex held (on the provider's
// receive goroutine, or on Subscribe's for the EventSubscribed of a key
// already live), so it must return at once and must not call the
// provider.
//
// All subscriptions of a provider share one pub/sub connection (one per
// hash slot in use on Redis Cluster), created with the first; channels are
// subscribed as subscribers come (waiting up to two seconds for the
// server; a failure is retried by go-redis when it reconnects) and
// unsubscribed when the last one of a key stops. Delivery is best effort:
// events published while the subscription reconnects are lost. Subscribe
// fails with ErrNilClient on a provider without client, ErrClosed after
// Close, and an error matching locking.ErrNotSupported for a key without
// an event channel on Redis Cluster (see channelMode).
func (p *Provider) Subscribe(key string, fn func(locking.Event)) (func(), error) {
	if fn == nil {
		return nil, errors.New("redislock: subscribe: nil callback")
	}
	if err := p.ready(); err != nil {
		return nil, err
	}
	if p.channel(key) == "" {
		return nil, fmt.Errorf("redislock: subscribe %q: the key has no event channel on Redis Cluster: %w", key, locking.ErrNotSupported)
	}
	stop, err := p.events.Subscribe(key, fn)
	if err != nil {
		return nil, err
	}
	// Mark the key listened to once the SUBSCRIBE is sent (the receive
	// loop marks every key again after a lost connection).
	p.markListened(key)
	return stop, nil
}

// RequestResign implements locking.ResignRequester: it publishes
// "resign:OWNER" on key's channel (PUBLISH, or SPUBLISH on Cluster).
func (p *Provider) RequestResign(ctx context.Context, key, owner string) error {
	if err := p.ready(); err != nil {
		return err
	}
	name := p.channel(key)
	if name == "" {
		return fmt.Errorf("redislock: resign %q: the key has no event channel on Redis Cluster: %w", key, locking.ErrNotSupported)
	}
	if err := roundtrip.ContextErr(ctx); err != nil {
		return opError("resign", ctx, err)
	}
	if err := p.c.Do(ctx, p.publish, name, resignPrefix+owner).Err(); err != nil {
		return opError("resign", ctx, err)
	}
	return nil
}

// listen subscribes key's channel for the event hub, on the connection of
// its slot, and returns the function that unsubscribes it. It returns once
// the SUBSCRIBE is written (see flushPubsub).
func (p *Provider) listen(key string, l *eventhub.Link) func() {
	name := p.channel(key) // Subscribe checked there is one
	slot := -1
	if p.cluster {
		slot = keySlot(name)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	s := p.subs[slot]
	if s == nil {
		s = p.newSubscription(slot)
		p.subs[slot] = s
	}
	// A subscription in p.subs is not retired: unlisten takes it out
	// under p.mu before it retires it, and only once it has no link.
	s.links[name] = l
	s.ask(name, true)
	p.mu.Unlock()
	p.flushPubsub(s)
	return func() { p.unlisten(s, name) }
}

// ask records that channel name should be subscribed (on) or not, for
// the next flushPubsub; the latest wish for a channel wins. p.mu must be
// held.
func (s *subscription) ask(name string, on bool) {
	if s.wants == nil {
		s.wants = make(map[string]bool)
	}
	s.wants[name] = on
}

// pubsubBatch is the most channels one SUBSCRIBE or UNSUBSCRIBE names.
const pubsubBatch = 1000

// flushPubsub writes the SUBSCRIBE and UNSUBSCRIBE commands the channels
// of s wait for, under s.op. A caller asks for its channel (ask) before
// it waits for s.op, so whoever holds s.op next writes it: while one
// caller writes, those that ask meanwhile queue, and the next holder
// writes them all in one command (a process starting or leaving 50,000
// roles writes about 50 commands, not 50,000, on the one connection
// they share). A listen returns once its channel's command is written,
// as when it wrote it itself; an unlisten does not wait (see unlisten).
//
// Within a flush a channel is in one command only (the latest wish), so
// the SUBSCRIBE and UNSUBSCRIBE of one flush can go in any order;
// successive flushes keep the order their wishes were asked in.
func (p *Provider) flushPubsub(s *subscription) {
	s.op.Lock()
	defer s.op.Unlock()
	if s.gone {
		return
	}
	p.mu.Lock()
	wants := s.wants
	s.wants, s.flushing = nil, false
	p.mu.Unlock()
	if len(wants) == 0 {
		return // written by the holder before
	}
	var on, off []string
	for name, w := range wants {
		if w {
			on = append(on, name)
		} else {
			off = append(off, name)
		}
	}
	unsubscribe, subscribe := s.ps.Unsubscribe, s.ps.Subscribe
	if p.cluster {
		unsubscribe, subscribe = s.ps.SUnsubscribe, s.ps.SSubscribe
	}
	inBatches(off, unsubscribe, nil)
	inBatches(on, subscribe, func() {
		if !s.started {
			// Started after the first SUBSCRIBE so that on Cluster the
			// connection is made to the slot's node, not a random one.
			s.started = true
			go p.receive(s)
			go p.refreshMarks(s)
		}
	})
}

// inBatches calls send with at most pubsubBatch of names at a time, each
// call bounded by watchTimeout, and then after, when set. Errors are
// ignored, as for every pub/sub command (best effort: the receive loop
// subscribes again after a lost connection).
func inBatches(names []string, send func(context.Context, ...string) error, after func()) {
	for len(names) > 0 {
		n := min(len(names), pubsubBatch)
		ctx, cancel := context.WithTimeout(context.Background(), watchTimeout)
		_ = send(ctx, names[:n]...)
		cancel()
		names = names[n:]
		if after != nil {
			after()
		}
	}
}

// newSubscription creates an idle subscription; p.mu must be held.
func (p *Provider) newSubscription(slot int) *subscription {
	var ps *redis.PubSub
	if p.cluster {
		ps = p.c.SSubscribe(context.Background())
	} else {
		ps = p.c.Subscribe(context.Background())
	}
	ctx, cancel := context.WithCancel(dialOnce(context.Background()))
	return &subscription{
		slot:      slot,
		ps:        ps,
		ctx:       ctx,
		cancel:    cancel,
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
		refreshed: make(chan struct{}),
		links:     make(map[string]*eventhub.Link),
	}
}

// unlisten unsubscribes channel name once its key has no subscriber left;
// on Cluster the last channel of a slot retires its connection.
//
// It does not wait for the UNSUBSCRIBE: the channel's link is gone at
// once, so nothing more reaches the key's subscribers, and a goroutine
// writes the command with every other channel let go meanwhile. A process
// leaving 50,000 roles lets go of their channels a few at a time, between
// the releases; writing each before returning sent about 33,000
// UNSUBSCRIBE commands, one or two channels each. A Subscribe of the
// channel that follows still comes after it: the latest wish for a
// channel is the one written (see flushPubsub).
func (p *Provider) unlisten(s *subscription, name string) {
	p.mu.Lock()
	delete(s.links, name)
	if !p.cluster || len(s.links) > 0 {
		s.ask(name, false)
		if !s.flushing {
			s.flushing = true
			p.flushers.Add(1)
			go func() {
				defer p.flushers.Done()
				p.flushPubsub(s)
			}()
		}
		p.mu.Unlock()
		return
	}
	if p.subs[s.slot] == s {
		delete(p.subs, s.slot)
	}
	p.mu.Unlock()
	s.op.Lock()
	defer s.op.Unlock()
	if !s.gone {
		s.retire()
	}
}

// retire closes the connection and waits for the receive loop; s.op must
// be held.
func (s *subscription) retire() {
	s.gone = true
	close(s.quit)
	s.cancel()
	_ = s.ps.Close()
	if s.started {
		<-s.done
		<-s.refreshed
	}
}

// refreshMarks sets the waiter marks of s's keys again every half
// WaitMarkTTL, so a subscription that outlives the mark keeps it, until
// s is retired.
func (p *Provider) refreshMarks(s *subscription) {
	defer close(s.refreshed)
	t := time.NewTicker(WaitMarkTTL / 2)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
			p.remarkAll(s)
		}
	}
}

// receive dispatches messages until the subscription is retired. After a
// receive error (go-redis reconnects on the next call) it reports the
// subscription lost and backs off; once the channels are subscribed again
// it reports them live and wakes every Watch, since a release may have been
// published meanwhile.
func (p *Provider) receive(s *subscription) {
	defer close(s.done)
	ctx := s.ctx
	var downSince time.Time // zero while the connection works
	remark := false         // the connection was lost: set the marks again
	for {
		msg, err := s.ps.Receive(ctx)
		if err != nil {
			select {
			case <-s.quit:
				return
			default:
			}
			if downSince.IsZero() {
				downSince = time.Now()
			}
			remark = true
			p.dropped(s)
			t := time.NewTimer(reconnectWait(time.Since(downSince)))
			select {
			case <-s.quit:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		downSince = time.Time{}
		switch m := msg.(type) {
		case *redis.Message:
			p.dispatch(s, m.Channel, m.Payload)
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				if remark {
					// The server may have lost the marks with its state:
					// set them again, all at once, before the watchers
					// hear their channels are live.
					remark = false
					p.remarkAll(s)
				}
				p.subscribed(s, m.Channel)
			}
		}
	}
}

// markListened sets key's waiter mark for WaitMarkTTL, so its releases
// are published (see release.lua): best effort, like the subscription
// (the server may lose the mark with its state; the receive loop sets
// every mark again when it has reconnected). It returns once the mark is
// set (or its round trip failed). A lone call sets its mark at once; marks
// asked while another is on the wire wait for it and go together in the
// next pipelined round trip, so a process subscribing 100,000 electors at
// start costs about 100 round trips, not 100,000 on the client's pool.
func (p *Provider) markListened(key string) {
	q := &p.marks
	q.mu.Lock()
	if !q.busy {
		q.busy = true
		q.mu.Unlock()
		p.setMarks([]string{key})
		q.mu.Lock()
		if q.next != nil {
			go p.drainMarks() // keeps busy until no round is left
		} else {
			q.busy = false
		}
		q.mu.Unlock()
		return
	}
	r := q.next
	if r == nil {
		r = &markRound{done: make(chan struct{})}
		q.next = r
	}
	r.keys = append(r.keys, key)
	q.mu.Unlock()
	<-r.done
}

// markQueue coalesces the waiter marks Subscribe sets (markListened).
type markQueue struct {
	mu   sync.Mutex
	busy bool       // a round is on the wire
	next *markRound // the marks asked meanwhile
}

// markRound is the marks of one coalesced round; done closes once they
// are set.
type markRound struct {
	keys []string
	done chan struct{}
}

// drainMarks sets the queued rounds of marks until none is left.
func (p *Provider) drainMarks() {
	q := &p.marks
	for {
		q.mu.Lock()
		r := q.next
		q.next = nil
		if r == nil {
			q.busy = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		p.setMarks(r.keys)
		close(r.done)
	}
}

// remarkBatch is how many waiter marks one pipeline sets (setMarks).
const remarkBatch = 1000

// remarkAll sets the waiter marks of every key s watches.
func (p *Provider) remarkAll(s *subscription) {
	p.mu.Lock()
	keys := make([]string, 0, len(s.links))
	for _, l := range s.links {
		keys = append(keys, l.Key())
	}
	p.mu.Unlock()
	p.setMarks(keys)
}

// setMarks sets the waiter marks of keys for WaitMarkTTL, remarkBatch per
// pipelined round trip (a single mark: one SET), each round trip bounded
// by watchTimeout; errors are ignored (best effort, see markListened).
func (p *Provider) setMarks(keys []string) {
	for len(keys) > 0 {
		n := min(len(keys), remarkBatch)
		ctx, cancel := context.WithTimeout(context.Background(), watchTimeout)
		if n == 1 {
			_ = p.c.Set(ctx, waitKey(keys[0]), "1", WaitMarkTTL).Err()
		} else {
			pipe := p.c.Pipeline()
			for _, k := range keys[:n] {
				pipe.Set(ctx, waitKey(k), "1", WaitMarkTTL)
			}
			_, _ = pipe.Exec(ctx)
		}
		cancel()
		keys = keys[n:]
	}
}

// dispatch delivers a message on channel name to its key's subscribers.
func (p *Provider) dispatch(s *subscription, name, payload string) {
	var e locking.Event
	switch {
	case payload == "" || payload == releasedPayload:
		e.Kind = locking.EventReleased
	case strings.HasPrefix(payload, releasedPayload+":"):
		e = locking.Event{Kind: locking.EventReleased, Owner: payload[len(releasedPayload)+1:]}
	case strings.HasPrefix(payload, acquiredPrefix):
		e = locking.Event{Kind: locking.EventAcquired, Owner: payload[len(acquiredPrefix):]}
	case strings.HasPrefix(payload, fencedPrefix):
		fence, owner, ok := strings.Cut(payload[len(fencedPrefix):], ":")
		n, err := strconv.ParseUint(fence, 10, 64)
		if !ok || err != nil {
			return // not a message this version wrote
		}
		e = locking.Event{Kind: locking.EventAcquired, Owner: owner, Fence: n}
	case strings.HasPrefix(payload, resignPrefix):
		e = locking.Event{Kind: locking.EventResign, Owner: payload[len(resignPrefix):]}
	default:
		return // a message of a later version: not ours to interpret
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s.links[name].Publish(e) // nil, thus ignored, when unsubscribed meanwhile
}

// subscribed tells the subscribers of channel name's key that it is live.
func (p *Provider) subscribed(s *subscription, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.links[name].Up() // nil, thus ignored, when unsubscribed meanwhile; its UNSUBSCRIBE follows
}

// dropped tells the subscribers of every key of s that were live that
// their subscription was lost.
func (p *Provider) dropped(s *subscription) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range s.links {
		l.Down()
	}
}

// Close ends the provider's subscriptions and waits for their goroutines.
// Subscribers still open stop receiving (those whose channel was live
// receive EventUnsubscribed); later Subscribe calls fail with ErrClosed.
// Lock operations keep working. Close does
// not close the client. It is safe to call more than once and returns nil.
func (p *Provider) Close() error {
	p.events.Close() // no listen call is under way or to come
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	subs := make([]*subscription, 0, len(p.subs))
	for slot, s := range p.subs {
		subs = append(subs, s)
		delete(p.subs, slot)
	}
	p.mu.Unlock()
	for _, s := range subs {
		s.op.Lock()
		if !s.gone {
			s.retire()
		}
		s.op.Unlock()
	}
	p.flushers.Wait() // each finds its subscription retired, if not done
	return nil
}
