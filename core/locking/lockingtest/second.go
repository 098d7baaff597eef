package lockingtest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

// fenceOf returns ls's fence, failing t when ls has none.
func fenceOf(t *testing.T, ls locking.Lease) uint64 {
	t.Helper()
	f, ok := ls.(locking.Fenced)
	if !ok {
		t.Fatalf("lease %T does not implement locking.Fenced", ls)
	}
	if f.Fence() == 0 {
		t.Fatal("Fence() = 0 for an acquired lease")
	}
	return f.Fence()
}

func testFences(t *testing.T, c Config, b Backend) {
	ctx := context.Background()
	a, other := b.NewLock(t, opts("fence")), b.NewLock(t, opts("fence"))
	var last uint64
	next := func(what string, ls locking.Lease) uint64 {
		t.Helper()
		f := fenceOf(t, ls)
		if f <= last {
			t.Fatalf("%s: fence %d, want more than the previous %d", what, f, last)
		}
		last = f
		return f
	}
	la := acquire(t, a, "job", time.Minute)
	fa := next("first holder", la)
	if err := la.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if f := fenceOf(t, la); f != fa {
		t.Fatalf("fence after Extend = %d, want it kept (%d)", f, fa)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	// Alternating holders, back to back: each acquisition gets a larger
	// fence even within one clock tick.
	for i := range 10 {
		l := a
		if i%2 == 1 {
			l = other
		}
		ls := acquire(t, l, "job", time.Minute)
		next("alternating acquisition", ls)
		if err := ls.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	// Takeover after expiry.
	next("short lease", acquire(t, a, "job", c.Short))
	expire(c)
	ls := acquire(t, other, "job", time.Minute)
	next("takeover after expiry", ls)
	// Another key has fences of its own (any value but 0).
	fenceOf(t, acquire(t, other, "other-key", time.Minute))
	// Acquire (the plain-lock API) exposes the fence too.
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
	prev := fenceOf(t, ls)
	h, err := held(t, a, ctx, "job", time.Minute)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if h.Fence() <= prev {
		t.Fatalf("Held.Fence = %d, want more than %d", h.Fence(), prev)
	}
	// A disabled lock's placeholders carry no fence.
	off := opts("fence")
	off.Disabled = true
	if _, ok := acquire(t, b.NewLock(t, off), "job", time.Minute).(locking.Fenced); ok {
		t.Fatal("a disabled lock's placeholder implements Fenced")
	}
}

func testHeldOwner(t *testing.T, _ Config, b Backend) {
	ctx := context.Background()
	holder := b.NewLock(t, opts("who2"))
	if _, err := holder.TryAcquireAs(ctx, "job", time.Minute, "replica-a:42"); err != nil {
		t.Fatalf("TryAcquireAs: %v", err)
	}
	_, err := b.NewLock(t, opts("who2")).TryAcquireAs(ctx, "job", time.Minute, "replica-b:7")
	h := wantHeld(t, err, "job")
	if h.Owner != "replica-a:42" {
		t.Fatalf("HeldError.Owner = %q, want the holder replica-a:42", h.Owner)
	}
	if h.Remaining <= 0 || h.Remaining > time.Minute {
		t.Fatalf("HeldError.Remaining = %v, want within (0, 1m]", h.Remaining)
	}
}

// Subscribe subscribes l to key's events, delivered on a buffered channel
// (64 events; a full channel fails t: read them as they come), and ends
// the subscription when t ends; stop ends it earlier. Backends' own event
// tests use it as the suite does.
func Subscribe(t *testing.T, l *locking.DistributedLock, key string) (<-chan locking.Event, func()) {
	t.Helper()
	ch := make(chan locking.Event, 64)
	stop, err := l.Subscribe(key, func(e locking.Event) {
		select {
		case ch <- e:
		default:
			t.Errorf("Subscribe(%q): event %v not read in time", key, e.Kind)
		}
	})
	if err != nil {
		t.Fatalf("Subscribe(%q): %v", key, err)
	}
	if stop == nil {
		t.Fatalf("Subscribe(%q) returned no stop function", key)
	}
	t.Cleanup(stop)
	return ch, stop
}

// nextEvent returns the next event on ch, failing t after failTimeout.
func nextEvent(t *testing.T, ch <-chan locking.Event, want string) locking.Event {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(failTimeout):
		t.Fatalf("no event within %v, want %s", failTimeout, want)
		return locking.Event{}
	}
}

// skipTo reads events until one of kind k arrives, skipping acquisitions
// (which a backend need not announce for plain lock users).
func skipTo(t *testing.T, ch <-chan locking.Event, k locking.EventKind) {
	t.Helper()
	for {
		e := nextEvent(t, ch, k.String())
		switch {
		case e.Kind == k:
			return
		case e.Kind != locking.EventAcquired:
			t.Fatalf("event = %v %q, want %v", e.Kind, e.Owner, k)
		}
	}
}

// wantEvent reads events until one of kind k arrives and checks its owner.
// Events of other kinds may come first only when they are acquisitions or
// releases of the same key (a backend may deliver in any order those that
// the check itself did not cause).
func wantEvent(t *testing.T, ch <-chan locking.Event, k locking.EventKind, owner string) {
	t.Helper()
	e := nextEvent(t, ch, k.String())
	if e.Kind != k || e.Owner != owner {
		t.Fatalf("event = %v %q, want %v %q", e.Kind, e.Owner, k, owner)
	}
}

func testEvents(t *testing.T, _ Config, b Backend) {
	ctx := context.Background()
	watcher, holder := b.NewLock(t, opts("ev")), b.NewLock(t, opts("ev"))
	events, stop := Subscribe(t, watcher, "job")
	other, _ := Subscribe(t, watcher, "other")
	wantEvent(t, events, locking.EventSubscribed, "")
	wantEvent(t, other, locking.EventSubscribed, "")

	ls, err := holder.TryAcquireAs(ctx, "job", time.Minute, "alice")
	if err != nil {
		t.Fatalf("TryAcquireAs: %v", err)
	}
	wantEvent(t, events, locking.EventAcquired, "alice")
	// A refused acquisition announces nothing.
	if _, err := watcher.TryAcquireAs(ctx, "job", time.Minute, "bob"); !errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("second TryAcquireAs = %v, want ErrNotAcquired", err)
	}
	if err := watcher.RequestResign(ctx, "job", "alice"); err != nil {
		t.Fatalf("RequestResign: %v", err)
	}
	wantEvent(t, events, locking.EventResign, "alice")
	if err := watcher.RequestResign(ctx, "job", ""); err != nil {
		t.Fatalf("RequestResign(anyone): %v", err)
	}
	wantEvent(t, events, locking.EventResign, "")
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	wantEvent(t, events, locking.EventReleased, "")
	// A second subscriber of the same key gets the same events.
	second, _ := Subscribe(t, watcher, "job")
	wantEvent(t, second, locking.EventSubscribed, "")
	ls, err = holder.TryAcquireAs(ctx, "job", time.Minute, "carol")
	if err != nil {
		t.Fatalf("TryAcquireAs: %v", err)
	}
	wantEvent(t, events, locking.EventAcquired, "carol")
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	wantEvent(t, events, locking.EventReleased, "")
	wantEvent(t, second, locking.EventAcquired, "carol")
	wantEvent(t, second, locking.EventReleased, "")
	// Nothing about "job" reached the watcher of "other".
	select {
	case e := <-other:
		t.Fatalf("the watcher of another key received %v %q", e.Kind, e.Owner)
	default:
	}
	// After stop, no more events.
	stop()
	ls, err = holder.TryAcquire(ctx, "job", time.Minute)
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Invalid keys are refused.
	if err := watcher.RequestResign(ctx, "bad key", ""); !errors.Is(err, locking.ErrInvalidKey) {
		t.Fatalf("RequestResign(bad key) = %v, want ErrInvalidKey", err)
	}
	if stop, err := watcher.Subscribe("bad key", func(locking.Event) {}); !errors.Is(err, locking.ErrInvalidKey) || stop != nil {
		t.Fatalf("Subscribe(bad key) = %v, want ErrInvalidKey and no stop function", err)
	}
}

// owners returns the participants' owners, sorted.
func owners(ps []locking.Participant) []string {
	var o []string
	for _, p := range ps {
		o = append(o, p.Owner)
	}
	slices.Sort(o)
	return o
}

func participants(t *testing.T, l *locking.DistributedLock, key string) []locking.Participant {
	t.Helper()
	ps, err := l.Participants(context.Background(), key)
	if err != nil {
		t.Fatalf("Participants(%q): %v", key, err)
	}
	return ps
}

func testParticipants(t *testing.T, c Config, b Backend) {
	ctx := context.Background()
	a, other := b.NewLock(t, opts("part")), b.NewLock(t, opts("part"))
	if ps := participants(t, a, "job"); len(ps) != 0 {
		t.Fatalf("Participants of an unused key = %v, want none", ps)
	}
	ls, err := a.TryAcquireAs(ctx, "job", time.Minute, "alice")
	if err != nil {
		t.Fatalf("TryAcquireAs: %v", err)
	}
	// A refused candidate registers too.
	if _, err := other.TryAcquireAs(ctx, "job", time.Minute, "bob"); !errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("TryAcquireAs(bob) = %v, want ErrNotAcquired", err)
	}
	ps := participants(t, other, "job")
	if got := owners(ps); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Fatalf("participants = %v, want [alice bob]", got)
	}
	since := map[string]time.Time{}
	for _, p := range ps {
		if p.Since.IsZero() {
			t.Fatalf("participant %q has a zero Since", p.Owner)
		}
		since[p.Owner] = p.Since
	}
	// Refreshes keep the first registration time.
	time.Sleep(20 * time.Millisecond)
	if err := ls.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if _, err := other.TryAcquireAs(ctx, "job", time.Minute, "bob"); !errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("TryAcquireAs(bob) = %v", err)
	}
	for _, p := range participants(t, a, "job") {
		if !p.Since.Equal(since[p.Owner]) {
			t.Fatalf("Since of %q moved from %v to %v on refresh", p.Owner, since[p.Owner], p.Since)
		}
	}
	// Release keeps the holder registered; Deregister removes at once.
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got := owners(participants(t, a, "job")); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Fatalf("participants after release = %v, want [alice bob]", got)
	}
	if err := other.Deregister(ctx, "job", "bob"); err != nil {
		t.Fatalf("Deregister: %v", err)
	}
	if got := owners(participants(t, a, "job")); !slices.Equal(got, []string{"alice"}) {
		t.Fatalf("participants after Deregister(bob) = %v, want [alice]", got)
	}
	// Another key has its own participants.
	if ps := participants(t, a, "job2"); len(ps) != 0 {
		t.Fatalf("participants of job2 = %v, want none", ps)
	}
	// A registration lasts two leases after the latest request.
	if _, err := other.TryAcquireAs(ctx, "short", c.Short, "carol"); err != nil {
		t.Fatalf("TryAcquireAs(short): %v", err)
	}
	if got := owners(participants(t, a, "short")); !slices.Equal(got, []string{"carol"}) {
		t.Fatalf("participants of short = %v, want [carol]", got)
	}
	time.Sleep(3*c.Short + 50*time.Millisecond)
	if ps := participants(t, a, "short"); len(ps) != 0 {
		t.Fatalf("participants %v still live two leases after their last request", owners(ps))
	}
	// Bad input.
	if _, err := a.Participants(ctx, "bad key"); !errors.Is(err, locking.ErrInvalidKey) {
		t.Fatalf("Participants(bad key) = %v, want ErrInvalidKey", err)
	}
	if err := a.Deregister(ctx, "", "x"); !errors.Is(err, locking.ErrInvalidKey) {
		t.Fatalf("Deregister(\"\") = %v, want ErrInvalidKey", err)
	}
}

// testReleaseWithdraw: a lease's ReleaseWithdraw (H2) releases the key,
// so another participant takes it at once, and withdraws the owner from
// the key's participants when it reports so (withdrawn), leaving the
// others; a lease already lost still withdraws its owner. Without the
// provider's ReleaseWithdrawer it is a plain release (withdrawn false)
// and the owner stays registered.
func testReleaseWithdraw(t *testing.T, _ Config, b Backend) {
	ctx := context.Background()
	a, other := b.NewLock(t, opts("withdraw")), b.NewLock(t, opts("withdraw"))
	ls, err := a.TryAcquireAs(ctx, "job", time.Minute, "alice")
	if err != nil {
		t.Fatalf("TryAcquireAs(alice): %v", err)
	}
	if _, err := other.TryAcquireAs(ctx, "job", time.Minute, "bob"); !errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("TryAcquireAs(bob) = %v, want ErrNotAcquired", err)
	}
	w, ok := ls.(locking.WithdrawingLease)
	if !ok {
		t.Fatalf("lease %T does not implement locking.WithdrawingLease", ls)
	}
	registered := func(withdrawn bool) []string {
		if withdrawn {
			return []string{"bob"}
		}
		return []string{"alice", "bob"}
	}
	withdrawn, err := w.ReleaseWithdraw(ctx, "bob")
	if err != nil {
		t.Fatalf("ReleaseWithdraw: %v", err)
	}
	if got, want := owners(participants(t, other, "job")), registered(withdrawn); !slices.Equal(got, want) {
		t.Fatalf("participants after ReleaseWithdraw (withdrawn %t) = %v, want %v", withdrawn, got, want)
	}
	bob, err := other.TryAcquireAs(ctx, "job", time.Minute, "bob")
	if err != nil {
		t.Fatalf("TryAcquireAs(bob) after the release: %v", err)
	}
	// alice registers again (a refused attempt); her old lease is lost.
	if _, err := a.TryAcquireAs(ctx, "job", time.Minute, "alice"); !errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("TryAcquireAs(alice) = %v, want ErrNotAcquired", err)
	}
	withdrawn, err = w.ReleaseWithdraw(ctx, "")
	if !errors.Is(err, locking.ErrLeaseLost) {
		t.Fatalf("ReleaseWithdraw of a lost lease = %v, want ErrLeaseLost", err)
	}
	if got, want := owners(participants(t, other, "job")), registered(withdrawn); !slices.Equal(got, want) {
		t.Fatalf("participants after ReleaseWithdraw of a lost lease (withdrawn %t) = %v, want %v", withdrawn, got, want)
	}
	if h, held, err := other.Holder(ctx, "job"); err == nil && (!held || h.Owner != "bob") {
		t.Fatalf("holder after a lost lease's ReleaseWithdraw = %+v (held %t), want bob", h, held)
	}
	if err := bob.Release(ctx); err != nil {
		t.Fatalf("Release(bob): %v", err)
	}
}

// testLateRenewal: a renewal that reaches the provider after the lease
// was released (one on its way when its holder stopped) does not make the
// holder a participant again, nor does a renewal of a lease another
// holder took since (H2). Only a ProviderBackend can send one: a lock's
// released lease renews nothing.
func testLateRenewal(t *testing.T, _ Config, b Backend) {
	pb, ok := b.(ProviderBackend)
	if !ok {
		t.Skip("the backend does not implement ProviderBackend")
	}
	p := pb.NewProvider(t)
	l, err := locking.New(p, opts("late"))
	if err != nil {
		t.Fatalf("locking.New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	reg, ok := p.(locking.ParticipantRegistry)
	if !ok {
		t.Skip("the provider has no locking.ParticipantRegistry")
	}
	ctx := context.Background()
	const key = "lockingtest-late-renewal"
	registered := func(when string) []string {
		t.Helper()
		ps, err := reg.Participants(ctx, key)
		if err != nil {
			t.Fatalf("Participants %s: %v", when, err)
		}
		return owners(ps)
	}
	take := func(owner, value string) {
		t.Helper()
		r, err := p.Acquire(ctx, locking.AcquireRequest{Key: key, Value: value, TTL: time.Minute, Owner: owner, ParticipantTTL: time.Minute})
		if err != nil || !r.Acquired {
			t.Fatalf("Acquire(%s) = %+v, %v; want acquired", owner, r, err)
		}
	}
	renew := func(owner, value string) locking.ExtendResult {
		t.Helper()
		r, err := p.Extend(ctx, locking.ExtendRequest{Key: key, Value: value, TTL: time.Minute, Owner: owner, ParticipantTTL: time.Minute})
		if err != nil {
			t.Fatalf("Extend(%s): %v", owner, err)
		}
		return r
	}
	take("alice", "alice-1")
	if r := renew("alice", "alice-1"); !r.Extended {
		t.Fatalf("Extend of a held lease = %+v, want extended", r)
	}
	withdraws := false
	if w, ok := p.(locking.ReleaseWithdrawer); ok {
		withdraws = w.WithdrawsOnRelease()
	}
	// leave releases owner's lease and withdraws owner, in the release
	// where the provider can (H2), else right after it.
	leave := func(owner, value string) {
		t.Helper()
		released, err := p.Release(ctx, locking.ReleaseRequest{Key: key, Value: value, Withdraw: owner})
		if err != nil || !released {
			t.Fatalf("Release(%s) = %t, %v; want released", owner, released, err)
		}
		if !withdraws {
			if err := reg.Deregister(ctx, key, owner); err != nil {
				t.Fatalf("Deregister(%s): %v", owner, err)
			}
		}
	}
	leave("alice", "alice-1")
	if got := registered("after the release"); len(got) != 0 {
		t.Fatalf("participants after alice withdrew = %v, want none", got)
	}
	if r := renew("alice", "alice-1"); r.Extended {
		t.Fatalf("Extend after the release = %+v, want not extended", r)
	}
	if got := registered("after a renewal that came late"); len(got) != 0 {
		t.Fatalf("participants after a renewal that reached the provider after the release = %v, want none", got)
	}
	take("bob", "bob-1")
	if r := renew("alice", "alice-1"); r.Extended {
		t.Fatalf("Extend of a lease bob took since = %+v, want not extended", r)
	}
	if got := registered("after a renewal of a lease taken since"); !slices.Equal(got, []string{"bob"}) {
		t.Fatalf("participants after alice renewed a lease bob took since = %v, want [bob]", got)
	}
	leave("bob", "bob-1")
}

// testHandoverHold: a lease released to a named successor with a hold
// stays the successor's to take: another participant's attempt is
// refused, also one that never heard the release (B1, H4), and the
// successor takes it. Checked over a ProviderBackend whose provider
// declares locking.ReleaseReserver.
func testHandoverHold(t *testing.T, _ Config, b Backend) {
	pb, ok := b.(ProviderBackend)
	if !ok {
		t.Skip("the backend does not implement ProviderBackend")
	}
	if r, ok := pb.NewProvider(t).(locking.ReleaseReserver); !ok || !r.ReservesOnRelease() {
		t.Skip("the provider does not declare locking.ReleaseReserver")
	}
	ctx := context.Background()
	a, other := b.NewLock(t, opts("hold")), b.NewLock(t, opts("hold"))
	ls, err := a.TryAcquireAs(ctx, "job", time.Minute, "alice")
	if err != nil {
		t.Fatalf("TryAcquireAs(alice): %v", err)
	}
	for _, who := range []string{"bob", "carol"} {
		if _, err := other.TryAcquireAs(ctx, "job", time.Minute, who); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("TryAcquireAs(%s) = %v, want ErrNotAcquired", who, err)
		}
	}
	r, ok := ls.(locking.ReleasingLease)
	if !ok {
		t.Fatalf("lease %T does not implement locking.ReleasingLease", ls)
	}
	if _, err := r.ReleaseWith(ctx, locking.ReleaseOptions{Target: "bob", Hold: time.Minute}); err != nil {
		t.Fatalf("ReleaseWith(bob): %v", err)
	}
	if _, err := other.TryAcquireAs(ctx, "job", time.Minute, "carol"); !errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("TryAcquireAs(carol) while the key is held for bob = %v, want ErrNotAcquired", err)
	}
	bob, err := other.TryAcquireAs(ctx, "job", time.Minute, "bob")
	if err != nil {
		t.Fatalf("TryAcquireAs(bob), the named successor: %v", err)
	}
	if err := bob.Release(ctx); err != nil {
		t.Fatalf("Release(bob): %v", err)
	}
	carol, err := other.TryAcquireAs(ctx, "job", time.Minute, "carol")
	if err != nil {
		t.Fatalf("TryAcquireAs(carol) after bob took the key and released it: %v", err)
	}
	if err := carol.Release(ctx); err != nil {
		t.Fatalf("Release(carol): %v", err)
	}
}

func testInspect(t *testing.T, _ Config, b Backend) {
	ctx := context.Background()
	l := b.NewLock(t, opts("insp"))
	st, err := l.Inspect(ctx, "leader:billing")
	if err != nil || st.Held || st.Fence != 0 || len(st.Participants) != 0 {
		t.Fatalf("Inspect of an unused key = %+v, %v; want empty", st, err)
	}
	ls, err := l.TryAcquireAs(ctx, "leader:billing", time.Minute, "alice")
	if err != nil {
		t.Fatalf("TryAcquireAs: %v", err)
	}
	st, err = l.Inspect(ctx, "leader:billing")
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	if !st.Held || st.Holder.Owner != "alice" || st.Holder.TTL <= 0 || st.Holder.TTL > time.Minute {
		t.Fatalf("Inspect holder = %v %+v, want alice with a TTL within (0, 1m]", st.Held, st.Holder)
	}
	if st.Fence != fenceOf(t, ls) {
		t.Fatalf("Inspect fence = %d, want the holder's %d", st.Fence, fenceOf(t, ls))
	}
	// Participants are checked only for a provider that keeps them: one
	// without the capability may inspect holders and fences alone.
	if l.Capabilities().Participants {
		if got := owners(st.Participants); !slices.Equal(got, []string{"alice"}) {
			t.Fatalf("Inspect participants = %v, want [alice]", got)
		}
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
	st, err = l.Inspect(ctx, "leader:billing")
	if err != nil || st.Held || st.Fence != fenceOf(t, ls) {
		t.Fatalf("Inspect after release = %+v, %v; want not held, fence kept", st, err)
	}
	acquire(t, l, "leader:orders", time.Minute)
	acquire(t, l, "job", time.Minute)
	acquire(t, b.NewLock(t, opts("insp2")), "leader:other-namespace", time.Minute)
	keys, err := l.Keys(ctx, "")
	if err != nil {
		t.Fatalf("Keys: %v", err)
	}
	// leader:billing is listed after its release: its fence and
	// participants are kept.
	if want := []string{"job", "leader:billing", "leader:orders"}; !slices.Equal(keys, want) {
		t.Fatalf("Keys = %v, want %v", keys, want)
	}
	keys, err = l.Keys(ctx, "leader:*")
	if err != nil || !slices.Equal(keys, []string{"leader:billing", "leader:orders"}) {
		t.Fatalf("Keys(leader:*) = %v, %v", keys, err)
	}
	if _, err := l.Keys(ctx, "[bad"); err == nil {
		t.Fatal("Keys with a malformed pattern succeeded")
	}
}
