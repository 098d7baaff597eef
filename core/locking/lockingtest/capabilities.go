package lockingtest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/hostloom/hostloom/core/jobrecord"
	"github.com/hostloom/hostloom/core/locking"
)

// ProviderBackend is a Backend that also hands out its providers. Run then
// checks, besides the full provider, the provider restricted to the
// required methods (locking.Provider alone) and to each optional
// capability alone (L9): the checks that need nothing optional, what the
// lock reports as unsupported, and what an elector does over it
// (subscribes when there are events, polls otherwise, Stop and Run return
// nil after a clean release, resign answers "not supported" without the
// capability). The memlock and redislock test backends implement it; so
// should yours.
type ProviderBackend interface {
	Backend
	// NewProvider returns a provider over the backend's store, as
	// NewLock's locks use: locks built over providers from two calls
	// exclude each other. The suite builds its locks with locking.New and
	// closes them when the check ends, which closes the provider when it
	// implements io.Closer.
	NewProvider(t *testing.T) locking.Provider
}

// variant is the backend's provider restricted to some capabilities.
type variant struct {
	name string
	caps locking.Capabilities
}

// variants are the restrictions Run checks: the required methods alone,
// then each optional capability alone (resign requests need events to be
// heard, so they come with them).
var variants = []variant{
	{"Minimal", locking.Capabilities{}},
	{"EventsOnly", locking.Capabilities{Events: true}},
	{"EventsAndResign", locking.Capabilities{Events: true, Resign: true}},
	{"ParticipantsOnly", locking.Capabilities{Participants: true}},
	{"InspectOnly", locking.Capabilities{Inspect: true}},
	{"JobSlotsOnly", locking.Capabilities{JobSlots: true}},
}

// faults are switches a restricted provider honours, for the checks that
// need a failing backend.
type faults struct {
	down       atomic.Bool // every call fails: an outage
	deregister atomic.Bool // Deregister fails
}

// errDown is the transport error of a restricted provider that is down.
var errDown = errors.New("lockingtest: backend down (injected)")

// required forwards the required methods of locking.Provider and nothing
// else.
type required struct {
	p locking.Provider
	f *faults
}

func (r required) Acquire(ctx context.Context, req locking.AcquireRequest) (locking.AcquireResult, error) {
	if r.f.down.Load() {
		return locking.AcquireResult{}, errDown
	}
	return r.p.Acquire(ctx, req)
}

func (r required) Extend(ctx context.Context, req locking.ExtendRequest) (locking.ExtendResult, error) {
	if r.f.down.Load() {
		return locking.ExtendResult{}, errDown
	}
	return r.p.Extend(ctx, req)
}

func (r required) Release(ctx context.Context, req locking.ReleaseRequest) (bool, error) {
	if r.f.down.Load() {
		return false, errDown
	}
	return r.p.Release(ctx, req)
}

type withEvents struct {
	required
	locking.Subscriber
}

type withResign struct {
	required
	locking.Subscriber
	locking.ResignRequester
}

type withParticipants struct {
	required
	reg locking.ParticipantRegistry
}

func (w withParticipants) Participants(ctx context.Context, key string) ([]locking.Participant, error) {
	if w.f.down.Load() {
		return nil, errDown
	}
	return w.reg.Participants(ctx, key)
}

func (w withParticipants) Deregister(ctx context.Context, key, owner string) error {
	if w.f.down.Load() || w.f.deregister.Load() {
		return errDown
	}
	return w.reg.Deregister(ctx, key, owner)
}

type withInspector struct {
	required
	locking.Inspector
}

type withJobs struct {
	required
	jobrecord.Jobs
}

type withRecords struct {
	required
	locking.RecordStore
	slotState
}

// slotState is jobrecord.State under a name that does not hide its State
// method when embedded.
type slotState interface{ jobrecord.State }

// restrict returns p exposing only the capabilities of v, with faults f;
// ok is false when p lacks one of them.
func restrict(p locking.Provider, v variant, f *faults) (locking.Provider, bool) {
	r := required{p: p, f: f}
	c := v.caps
	switch {
	case c == locking.Capabilities{}:
		return r, true
	case c == locking.Capabilities{Events: true}:
		s, ok := p.(locking.Subscriber)
		return withEvents{r, s}, ok
	case c == locking.Capabilities{Events: true, Resign: true}:
		s, ok1 := p.(locking.Subscriber)
		q, ok2 := p.(locking.ResignRequester)
		return withResign{r, s, q}, ok1 && ok2
	case c == locking.Capabilities{Participants: true}:
		reg, ok := p.(locking.ParticipantRegistry)
		return withParticipants{r, reg}, ok
	case c == locking.Capabilities{Inspect: true}:
		in, ok := p.(locking.Inspector)
		return withInspector{r, in}, ok
	case c == locking.Capabilities{JobSlots: true}:
		rs, ok1 := p.(locking.RecordStore)
		st, ok2 := p.(jobrecord.State)
		if ok1 && ok2 {
			return withRecords{r, rs, st}, true
		}
		j, ok := p.(jobrecord.Jobs)
		return withJobs{r, j}, ok
	}
	panic(fmt.Sprintf("lockingtest: no restriction for %+v", c))
}

// restricted is a Backend whose locks are built over restricted providers.
type restricted struct {
	ProviderBackend
	v variant
	f *faults
}

func (r restricted) NewLock(t *testing.T, o locking.Options) *locking.DistributedLock {
	t.Helper()
	p, ok := restrict(r.NewProvider(t), r.v, r.f)
	if !ok {
		t.Fatalf("the backend's provider lacks a capability of %s", r.v.name)
	}
	l, err := locking.New(p, o)
	if err != nil {
		t.Fatalf("locking.New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// provides reports whether have has every capability of need.
func provides(have, need locking.Capabilities) bool {
	return (!need.Events || have.Events) && (!need.Participants || have.Participants) &&
		(!need.Inspect || have.Inspect) && (!need.Resign || have.Resign) && (!need.JobSlots || have.JobSlots)
}

// testCapabilitiesReported: the lock reports exactly what its provider
// can do, and every method of a capability it lacks says so (L9).
func testCapabilitiesReported(t *testing.T, _ Config, b Backend) {
	ctx := context.Background()
	l := b.NewLock(t, opts("caps"))
	want := l.Capabilities()
	if r, ok := b.(restricted); ok && want != r.v.caps {
		t.Fatalf("Capabilities = %+v over a provider restricted to %+v", want, r.v.caps)
	}
	unsupported := func(name string, has bool, err error) {
		t.Helper()
		if !has && !errors.Is(err, locking.ErrNotSupported) {
			t.Errorf("%s without the capability = %v, want ErrNotSupported", name, err)
		}
		if has && errors.Is(err, locking.ErrNotSupported) {
			t.Errorf("%s with the capability = %v", name, err)
		}
	}
	stop, err := l.Subscribe("job", func(locking.Event) {})
	if err == nil {
		stop()
	}
	unsupported("Subscribe", want.Events, err)
	unsupported("RequestResign", want.Resign, l.RequestResign(ctx, "job", ""))
	_, err = l.Participants(ctx, "job")
	unsupported("Participants", want.Participants, err)
	unsupported("Deregister", want.Participants, l.Deregister(ctx, "job", "nobody"))
	_, _, err = l.Holder(ctx, "job")
	unsupported("Holder", want.Inspect, err)
	_, err = l.Inspect(ctx, "job")
	unsupported("Inspect", want.Inspect, err)
	_, err = l.Keys(ctx, "")
	unsupported("Keys", want.Inspect, err)
	_, _, err = l.Advance(ctx, "slot", 1)
	unsupported("Advance", want.JobSlots, err)
	_, err = l.JobStatus(ctx, "sched:r:j")
	unsupported("JobStatus", want.JobSlots, err)
}
