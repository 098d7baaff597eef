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
	"github.com/hostloom/hostloom/core/locking/kit/eventhub"
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
	// Remaining is the extended lease's time to live in µs ("extended").
	Remaining int64 `json:"r,omitempty"`
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
	case "extended":
		if m.Remaining <= 0 {
			return "", e, false
		}
		e.Kind, e.Remaining = locking.EventExtended, fromMicros(m.Remaining)
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

// connectTimeout bounds one attempt to open the LISTEN connection (a
// server that does not answer at all), so reconnection keeps its cadence.
const connectTimeout = 10 * time.Second

// listener owns the provider's LISTEN connection: one goroutine, started
// by the first subscription, stopped by close. The subscribers are the
// event hub's; the connection serves every key, so it reports its state
// to the whole hub.
type listener struct {
	p   *Provider
	hub *eventhub.Hub

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func newListener(p *Provider) *listener {
	l := &listener{p: p, done: make(chan struct{})}
	l.hub = eventhub.New(eventhub.Options{Listen: l.listen, ErrClosed: ErrClosed})
	return l
}

// Subscribe implements locking.Subscriber: fn receives key's releases
// (naming the handover target, if any), acquisitions (with the new
// holder's owner), resign requests, and the state of the LISTEN
// connection: EventSubscribed once LISTEN is confirmed (at first, for a
// subscriber that comes later at once, and after every reconnection),
// EventUnsubscribed when the connection is lost or the provider closed.
// Events published while the connection is down are lost. fn is called on
// the provider's LISTEN goroutine with the provider's subscription mutex
// held, so it must return at once and must not call the provider.
//
// Subscribe does no I/O: the first subscription starts the LISTEN
// goroutine, which reports EventSubscribed from the background. It fails
// with ErrClosed after Close, and with an error matching
// locking.ErrNotSupported when Options.DisableNotifications is set (use
// Lock, or NewLock, so that locking.New does not count on events then).
func (p *Provider) Subscribe(key string, fn func(locking.Event)) (func(), error) {
	if fn == nil {
		return nil, errors.New("pglock: subscribe: nil callback")
	}
	if p.o.DisableNotifications {
		return nil, fmt.Errorf("pglock: subscribe %q: notifications are disabled: %w", key, locking.ErrNotSupported)
	}
	return p.l.hub.Subscribe(key, fn)
}

// RequestResign implements locking.ResignRequester: a resign request for
// owner ("" for whoever holds key) through NOTIFY. With
// DisableNotifications it returns an error matching
// locking.ErrNotSupported: nobody listens.
func (p *Provider) RequestResign(ctx context.Context, key, owner string) error {
	if p.o.DisableNotifications {
		return fmt.Errorf("pglock: resign %q: notifications are disabled: %w", key, locking.ErrNotSupported)
	}
	if err := p.begin(ctx, "resign"); err != nil {
		return err
	}
	if _, err := p.pool.Exec(ctx, p.sql.resign, p.mode, p.t.name, key, owner, p.t.qualified); err != nil {
		return p.opError("resign", ctx, err)
	}
	return nil
}

// listen starts the LISTEN goroutine for the first key subscribed. The
// connection stays open until Close, whatever the subscribers do: its cost
// is one idle session, and the next subscription needs no LISTEN round
// trip.
func (l *listener) listen(string, *eventhub.Link) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started {
		l.started = true
		ctx, cancel := context.WithCancel(context.Background())
		l.cancel = cancel
		go l.run(ctx)
	}
	return nil
}

// close ends the subscriptions, then stops the goroutine and waits for it.
func (l *listener) close() {
	l.hub.Close() // no listen call is under way or to come
	l.mu.Lock()
	started := l.started
	l.mu.Unlock()
	if started {
		l.cancel()
		<-l.done
	}
}

// run keeps a LISTEN connection open until ctx ends, reconnecting with
// backoff (minBackoff doubling up to Options.ReconnectMax).
func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	backoff := minBackoff
	for {
		// The cause of a lost session is not reported: subscribers learn
		// the subscription's state, and the next attempt retries.
		_ = l.session(ctx, func() {
			backoff = minBackoff
			l.hub.Up()
		})
		l.hub.Down()
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
		backoff = min(2*backoff, l.p.o.ReconnectMax)
	}
}

// session connects, listens and dispatches notifications until the
// connection fails or ctx ends; live is called once LISTEN succeeded.
func (l *listener) session(ctx context.Context, live func()) error {
	cfg := l.p.pool.Config().ConnConfig.Copy()
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	conn, err := pgx.ConnectConfig(cctx, cfg)
	cancel()
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

// dispatch delivers one notification to the subscribers of its key.
func (l *listener) dispatch(n *pgconn.Notification) {
	key, e, ok := decodeEvent(l.p.t.qualified, n.Payload)
	if !ok {
		return
	}
	l.hub.Publish(key, e)
}
