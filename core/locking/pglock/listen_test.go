package pglock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/lockingtest"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

// waitFor bounds every wait for something that must happen (a liveness
// bound, not a performance assertion).
const waitFor = 10 * time.Second

func nextEvent(t *testing.T, ch <-chan locking.Event) locking.Event {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(waitFor):
		t.Fatalf("no event within %v", waitFor)
		return locking.Event{}
	}
}

func wantEvent(t *testing.T, ch <-chan locking.Event, k locking.EventKind, owner string) {
	t.Helper()
	if e := nextEvent(t, ch); e.Kind != k || e.Owner != owner {
		t.Fatalf("event %v %q, want %v %q", e.Kind, e.Owner, k, owner)
	}
}

// listeners counts the server sessions whose last statement was a LISTEN
// on channel.
func listeners(t *testing.T, pool *pgxpool.Pool, channel string) int {
	t.Helper()
	var n int
	err := pool.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN "' || $1 || '"'`, channel).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// D2: one LISTEN connection per provider, whatever the number of watched
// keys; a handover target and the acquirer's identity travel in the
// payload; another table's events are not delivered.
func TestListen_D2_OneConnectionPerProviderCarriesEveryEvent(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	watcher, _ := newLock(t, pool, pglock.Options{}, "ns")
	holder, _ := newLock(t, pool, pglock.Options{}, "ns")
	elsewhere, _ := newLock(t, pool, pglock.Options{Table: "other_locks"}, "ns")
	a, _ := lockingtest.Subscribe(t, watcher, "a")
	b, _ := lockingtest.Subscribe(t, watcher, "b")
	wantEvent(t, a, locking.EventSubscribed, "")
	wantEvent(t, b, locking.EventSubscribed, "")
	if n := listeners(t, pool, "hostloom_locks"); n != 1 {
		t.Fatalf("%d LISTEN sessions for two watched keys, want 1", n)
	}
	// A lease on another table (hence another channel) is not an event here.
	ls, err := elsewhere.TryAcquireAs(ctx, "a", time.Minute, "stranger")
	if err != nil {
		t.Fatal(err)
	}
	_ = ls.Release(ctx)
	ls, err = holder.TryAcquireAs(ctx, "a", time.Minute, "alice")
	if err != nil {
		t.Fatal(err)
	}
	wantEvent(t, a, locking.EventAcquired, "alice")
	if err := ls.(locking.HandoverLease).ReleaseTo(ctx, "bob"); err != nil {
		t.Fatalf("ReleaseTo: %v", err)
	}
	wantEvent(t, a, locking.EventReleased, "bob")
	if err := holder.RequestResign(ctx, "b", "carol"); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, b, locking.EventResign, "carol")
	select {
	case e := <-a:
		t.Fatalf("watcher of a received %v %q, meant for b", e.Kind, e.Owner)
	default:
	}
	// Close: the live subscription ends with EventUnsubscribed, and the
	// session is gone.
	_ = watcher.Close()
	wantEvent(t, a, locking.EventUnsubscribed, "")
	deadline := time.Now().Add(waitFor)
	for listeners(t, pool, "hostloom_locks") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the LISTEN session outlived Close")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// D2: a LISTEN session the server ended is reported lost, reconnected
// with backoff, reported live again, and delivers again.
func TestListen_D2_ReconnectsAfterTheSessionIsTerminated(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	watcher, _ := newLock(t, pool, pglock.Options{}, "")
	holder, _ := newLock(t, pool, pglock.Options{}, "")
	events, _ := lockingtest.Subscribe(t, watcher, "job")
	wantEvent(t, events, locking.EventSubscribed, "")
	var n int
	err := pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN %'`).Scan(&n)
	if err != nil || n != 1 {
		t.Fatalf("terminated %d LISTEN sessions, %v; want 1", n, err)
	}
	wantEvent(t, events, locking.EventUnsubscribed, "")
	wantEvent(t, events, locking.EventSubscribed, "")
	if _, err := holder.TryAcquireAs(ctx, "job", time.Minute, "alice"); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, events, locking.EventAcquired, "alice")
}

// D2, L9: with DisableNotifications nothing listens and nothing is
// published: the lock reports no events and no resign capability (the
// elector polls), and the provider's own Subscribe says why.
func TestListen_D2_DisabledOpensNoSession(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	l, p := newLock(t, pool, pglock.Options{DisableNotifications: true}, "")
	if c := l.Capabilities(); c.Events || c.Resign || !c.Participants || !c.Inspect || !c.JobSlots {
		t.Fatalf("Capabilities = %+v, want everything but events and resign", c)
	}
	if _, err := l.Subscribe("job", func(locking.Event) {}); !errors.Is(err, locking.ErrNotSupported) {
		t.Fatalf("lock Subscribe = %v, want ErrNotSupported", err)
	}
	if _, err := p.Subscribe("lock:job", func(locking.Event) {}); !errors.Is(err, locking.ErrNotSupported) {
		t.Fatalf("provider Subscribe = %v, want ErrNotSupported", err)
	}
	if err := p.RequestResign(ctx, "lock:job", ""); !errors.Is(err, locking.ErrNotSupported) {
		t.Fatalf("provider RequestResign = %v, want ErrNotSupported", err)
	}
	ls, err := l.TryAcquireAs(ctx, "job", time.Minute, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.RequestResign(ctx, "job", ""); !errors.Is(err, locking.ErrNotSupported) {
		t.Fatalf("RequestResign = %v, want ErrNotSupported", err)
	}
	if n := listeners(t, pool, "hostloom_locks"); n != 0 {
		t.Fatalf("%d LISTEN sessions with notifications disabled", n)
	}
	// With notifications on, every capability shows.
	on, _ := newLock(t, pool, pglock.Options{}, "")
	if c := on.Capabilities(); !c.Events || !c.Resign || !c.Participants || !c.Inspect || !c.JobSlots {
		t.Fatalf("Capabilities = %+v, want all", c)
	}
}

// L9: Subscribe after Close fails; a subscription made before ends with
// EventUnsubscribed when it was live.
func TestListen_L9_SubscribeAfterCloseFails(t *testing.T) {
	pool := newDB(t)
	_, p := newLock(t, pool, pglock.Options{}, "")
	_ = p.Close()
	if _, err := p.Subscribe("lock:job", func(locking.Event) {}); !errors.Is(err, pglock.ErrClosed) {
		t.Fatalf("Subscribe after Close = %v, want ErrClosed", err)
	}
	if _, err := p.Subscribe("lock:job", nil); err == nil {
		t.Fatal("Subscribe with a nil callback succeeded")
	}
}

// P3: a renewal announces the extended lease (its holder and its new time
// to live) in the statement that extends it, so a listening candidate
// sleeps on instead of trying when the previous lease would have ended.
func TestListen_P3_RenewalAnnouncesTheExtendedLease(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	watcher, _ := newLock(t, pool, pglock.Options{}, "ns")
	holder, _ := newLock(t, pool, pglock.Options{}, "ns")
	ch, _ := lockingtest.Subscribe(t, watcher, "k")
	wantEvent(t, ch, locking.EventSubscribed, "")
	ls, err := holder.TryAcquireAs(ctx, "k", time.Minute, "alice")
	if err != nil {
		t.Fatal(err)
	}
	wantEvent(t, ch, locking.EventAcquired, "alice")
	if err := ls.Extend(ctx, 42*time.Second); err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(t, ch); e.Kind != locking.EventExtended || e.Owner != "alice" || e.Remaining != 42*time.Second {
		t.Fatalf("event %v %q %v, want extended alice 42s", e.Kind, e.Owner, e.Remaining)
	}
	_ = ls.Release(ctx)
	wantEvent(t, ch, locking.EventReleased, "")
}
