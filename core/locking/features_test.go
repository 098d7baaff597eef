package locking_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/jobrecord"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// TestFeatures_X3_ValuesOnConsumerKeys: over a provider with every
// capability, each feature is set and works on consumer keys (the
// namespace is added once, by the lock); the booleans Capabilities
// reports are the same facts.
func TestFeatures_X3_ValuesOnConsumerKeys(t *testing.T) {
	ctx := context.Background()
	l, err := locking.New(memlock.New(), locking.Options{Namespace: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	f := l.Features()
	if f.Events == nil || f.Resign == nil || f.Participants == nil || f.Holders == nil || f.Inspect == nil || f.Jobs == nil {
		t.Fatalf("Features over memlock = %+v, want every capability", f)
	}
	if got, want := f.Capabilities(), l.Capabilities(); got != want {
		t.Fatalf("Features().Capabilities() = %+v, Capabilities() = %+v", got, want)
	}
	events := make(chan locking.Event, 4)
	stop, err := f.Events.Subscribe("leader:job", func(e locking.Event) { events <- e })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ls, err := l.TryAcquirePriority(ctx, "leader:job", time.Minute, "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	h, ok, err := f.Holders.Holder(ctx, "leader:job")
	if err != nil || !ok || h.Owner != "alice" {
		t.Fatalf("Features().Holders.Holder = %+v, %v, %v; want alice", h, ok, err)
	}
	ps, err := f.Participants.Participants(ctx, "leader:job")
	if err != nil || len(ps) != 1 || ps[0].Owner != "alice" {
		t.Fatalf("Features().Participants.Participants = %+v, %v; want alice", ps, err)
	}
	keys, err := f.Inspect.Keys(ctx, "")
	if err != nil || len(keys) != 1 || keys[0] != "leader:job" {
		t.Fatalf("Features().Inspect.Keys = %v, %v; want the consumer key leader:job", keys, err)
	}
	if err := f.Resign.RequestResign(ctx, "leader:job", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if adv, _, err := f.Jobs.Advance(ctx, "sched:job", 7); err != nil || !adv {
		t.Fatalf("Features().Jobs.Advance = %v, %v", adv, err)
	}
	if v, found, err := l.State(ctx, "sched:job"); err != nil || !found || v != 7 {
		t.Fatalf("State after Features().Jobs.Advance = %d, %v, %v; want 7", v, found, err)
	}
}

// TestFeatures_X3_NilWhenAbsent: over a provider with only the required
// methods, and for a disabled lock, every feature is nil, so a consumer
// tests once and never calls a method that answers ErrNotSupported. The
// lock's own methods still answer it, for code written against its
// method set (L9).
func TestFeatures_X3_NilWhenAbsent(t *testing.T) {
	basic, err := locking.New(required{memlock.New()}, locking.Options{})
	if err != nil {
		t.Fatal(err)
	}
	disabled, err := locking.New(memlock.New(), locking.Options{Disabled: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]*locking.DistributedLock{"required methods only": basic, "disabled": disabled} {
		if f := l.Features(); f != (locking.Features{}) {
			t.Errorf("%s: Features = %+v, want none", name, f)
		}
		if f := locking.FeaturesOf(l); f != (locking.Features{}) {
			t.Errorf("%s: FeaturesOf = %+v, want none (the lock's report, not its method set)", name, f)
		}
	}
	if _, err := basic.Subscribe("job", func(locking.Event) {}); !errors.Is(err, locking.ErrNotSupported) {
		t.Errorf("Subscribe without events = %v, want ErrNotSupported", err)
	}
}

// TestFeaturesOf_X3_MethodSetOfOtherLocks: a lock that does not report
// its features has the capabilities its method set implements; resign
// requests only together with events.
func TestFeaturesOf_X3_MethodSetOfOtherLocks(t *testing.T) {
	inner, err := locking.New(memlock.New(), locking.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plain := plainLock{inner}
	if f := locking.FeaturesOf(plain); f != (locking.Features{}) {
		t.Errorf("FeaturesOf(a Lock with only the required methods) = %+v, want none", f)
	}
	h := holdersAndResign{plainLock{inner}}
	f := locking.FeaturesOf(h)
	if f.Holders == nil {
		t.Error("FeaturesOf(a lock with Holder) has no Holders")
	}
	if f.Resign != nil {
		t.Error("FeaturesOf(a lock with RequestResign but no Subscribe) has Resign: its holder could never hear the request")
	}
	if f.Events != nil || f.Participants != nil || f.Inspect != nil || f.Jobs != nil {
		t.Errorf("FeaturesOf(a lock with Holder and RequestResign) = %+v, want only Holders", f)
	}
	if c := f.Capabilities(); !c.Inspect || c.Resign {
		t.Errorf("Capabilities of a lock with Holder = %+v, want Inspect and no Resign", c)
	}
	var _ jobrecord.Jobs = inner
}

// TestTermsOf_X3_OneCallForTheLocksLeases: the leases of a
// DistributedLock report their terms in one call, the same values the
// optional lease interfaces give one by one; a lease of another lock
// gets them from those interfaces.
func TestTermsOf_X3_OneCallForTheLocksLeases(t *testing.T) {
	ctx := context.Background()
	l, err := locking.New(memlock.New(), locking.Options{MaxLease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := l.TryAcquirePriority(ctx, "job", time.Hour, "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ls.(locking.TermsReporter); !ok {
		t.Fatal("a DistributedLock lease does not implement TermsReporter")
	}
	if err := ls.Extend(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	got := locking.TermsOf(ls)
	want := locking.Terms{
		Granted:      ls.(locking.GrantedLease).Granted(),
		Fence:        ls.(locking.Fenced).Fence(),
		Preempted:    ls.(locking.Preemptible).Preempted(),
		Participants: ls.(locking.ParticipantCounted).LiveParticipants(),
	}
	if got != want || got.Granted != time.Minute || got.Fence == 0 || got.Participants != 1 {
		t.Fatalf("TermsOf = %+v; the lease's interfaces say %+v; want a minute granted, a fence and one participant", got, want)
	}
	if got := locking.TermsOf(grantedOnly{ls}); got != (locking.Terms{Granted: time.Minute}) {
		t.Fatalf("TermsOf(a lease with only Granted) = %+v, want only the minute granted", got)
	}
}

// plainLock is a Lock with only the required methods.
type plainLock struct{ l *locking.DistributedLock }

func (p plainLock) Coordinated() bool { return true }

func (p plainLock) TryAcquire(ctx context.Context, key string, d time.Duration) (locking.Lease, error) {
	return p.l.TryAcquire(ctx, key, d)
}

// holdersAndResign adds Holder and RequestResign to a plain lock.
type holdersAndResign struct{ plainLock }

func (h holdersAndResign) Holder(ctx context.Context, key string) (locking.Holder, bool, error) {
	return h.l.Holder(ctx, key)
}

func (h holdersAndResign) RequestResign(ctx context.Context, key, owner string) error {
	return h.l.RequestResign(ctx, key, owner)
}

// grantedOnly is a lease of another lock that reports only what it was
// granted.
type grantedOnly struct{ inner locking.Lease }

func (g grantedOnly) Key() string { return g.inner.Key() }
func (g grantedOnly) Extend(ctx context.Context, d time.Duration) error {
	return g.inner.Extend(ctx, d)
}
func (g grantedOnly) Release(ctx context.Context) error { return g.inner.Release(ctx) }
func (g grantedOnly) Owner() string                     { return "" }
func (g grantedOnly) Granted() time.Duration            { return g.inner.(locking.GrantedLease).Granted() }

// TestFeaturesOf_X3_WrapperOverridesAreCalled: a wrapper that embeds a
// *DistributedLock and overrides Subscribe gets its override as the
// Events value; the lock's report still decides presence, so over a
// provider without events the override is not used.
func TestFeaturesOf_X3_WrapperOverridesAreCalled(t *testing.T) {
	full, err := locking.New(memlock.New(), locking.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := &countingSubscribes{DistributedLock: full}
	f := locking.FeaturesOf(w)
	if f.Events == nil {
		t.Fatal("FeaturesOf(wrapper over memlock) has no Events")
	}
	stop, err := f.Events.Subscribe("job", func(locking.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if w.n != 1 {
		t.Fatalf("the wrapper's Subscribe ran %d times through Features().Events, want 1", w.n)
	}
	if _, held, err := f.Holders.Holder(context.Background(), "job"); err != nil || held {
		t.Errorf("Holders.Holder of a free key = %v, %v (promoted from the embedded lock)", held, err)
	}
	basic, err := locking.New(required{memlock.New()}, locking.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := locking.FeaturesOf(&countingSubscribes{DistributedLock: basic}); f.Events != nil {
		t.Errorf("FeaturesOf(wrapper over a provider without events) has Events %v, want nil", f.Events)
	}
}

// countingSubscribes counts its Subscribe calls.
type countingSubscribes struct {
	*locking.DistributedLock
	n int
}

func (c *countingSubscribes) Subscribe(key string, fn func(locking.Event)) (func(), error) {
	c.n++
	return c.DistributedLock.Subscribe(key, fn)
}

// probing is memlock with a participant probe on provider keys that
// answers from the full participant list and records the keys it is asked.
type probing struct {
	*memlock.Provider
	asked []string
}

func (p *probing) IsParticipant(ctx context.Context, key, owner string) (bool, error) {
	p.asked = append(p.asked, key)
	ps, err := p.Participants(ctx, key)
	for _, pt := range ps {
		if pt.Owner == owner {
			return true, err
		}
	}
	return false, err
}

// probeOnly has a participant probe but no participant registry.
type probeOnly struct{ required }

func (probeOnly) IsParticipant(context.Context, string, string) (bool, error) { return true, nil }

// TestFeatures_X3_H4_ProbeOnConsumerKeys: a provider's participant probe
// is Features().Probe, on consumer keys (the lock adds its namespace);
// without a participant registry there is no probe, and none over a
// provider without one.
func TestFeatures_X3_H4_ProbeOnConsumerKeys(t *testing.T) {
	ctx := context.Background()
	p := &probing{Provider: memlock.New()}
	l, err := locking.New(p, locking.Options{Namespace: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	pr := l.Features().Probe
	if pr == nil {
		t.Fatal("Features().Probe is nil over a provider with IsParticipant")
	}
	if _, err := l.TryAcquirePriority(ctx, "leader:job", time.Minute, "alice", 0, 0); err != nil {
		t.Fatal(err)
	}
	if ok, err := pr.IsParticipant(ctx, "leader:job", "alice"); err != nil || !ok {
		t.Fatalf("IsParticipant(alice) = %v, %v; want true", ok, err)
	}
	if ok, err := pr.IsParticipant(ctx, "leader:job", "bob"); err != nil || ok {
		t.Fatalf("IsParticipant(bob) = %v, %v; want false", ok, err)
	}
	want, _ := l.ProviderKey("leader:job")
	if len(p.asked) != 2 || p.asked[0] != want {
		t.Fatalf("the provider was asked %q, want %q twice", p.asked, want)
	}
	if locking.FeaturesOf(l).Probe == nil {
		t.Fatal("FeaturesOf(lock).Probe is nil")
	}
	only, err := locking.New(probeOnly{required{memlock.New()}}, locking.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if only.Features().Probe != nil {
		t.Fatal("Features().Probe set over a provider without participants")
	}
	if plain, _ := locking.New(memlock.New(), locking.Options{}); plain.Features().Probe != nil {
		t.Fatal("Features().Probe set over memlock, which has none")
	}
}
