package eventhub_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/kit/eventhub"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// transport is a fake backend transport: it records Listen and unlisten
// calls and keeps the current link of each key.
type transport struct {
	mu       sync.Mutex
	links    map[string]*eventhub.Link
	listens  map[string]int
	unlisten map[string]int
}

func newTransport() *transport {
	return &transport{links: map[string]*eventhub.Link{}, listens: map[string]int{}, unlisten: map[string]int{}}
}

func (f *transport) listen(key string, l *eventhub.Link) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listens[key]++
	f.links[key] = l
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.unlisten[key]++
	}
}

func (f *transport) link(key string) *eventhub.Link {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.links[key]
}

func (f *transport) counts(key string) (listens, unlistens int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listens[key], f.unlisten[key]
}

// recorder collects the events one subscriber receives.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) fn(e locking.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := e.Kind.String()
	if e.Owner != "" {
		s += ":" + e.Owner
	}
	r.events = append(r.events, s)
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) want(t *testing.T, want ...string) {
	t.Helper()
	if got := r.got(); !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func subscribe(t *testing.T, h *eventhub.Hub, key string) (*recorder, func()) {
	t.Helper()
	r := &recorder{}
	stop, err := h.Subscribe(key, r.fn)
	if err != nil {
		t.Fatalf("Subscribe(%q): %v", key, err)
	}
	return r, stop
}

// shape is the two ways a backend reports its link: one for every key
// (Hub.Up, Hub.Down, Hub.Publish), or one per key (the Link Listen gets).
type shape struct {
	name                 string
	up, down             func(h *eventhub.Hub, f *transport, key string)
	publish              func(h *eventhub.Hub, f *transport, key string, e locking.Event)
	liveBeforeSubscriber bool // the link can be live before the key has a subscriber
}

var shapes = []shape{
	{
		name:                 "shared link",
		up:                   func(h *eventhub.Hub, _ *transport, _ string) { h.Up() },
		down:                 func(h *eventhub.Hub, _ *transport, _ string) { h.Down() },
		publish:              func(h *eventhub.Hub, _ *transport, key string, e locking.Event) { h.Publish(key, e) },
		liveBeforeSubscriber: true,
	},
	{
		name:    "link per key",
		up:      func(_ *eventhub.Hub, f *transport, key string) { f.link(key).Up() },
		down:    func(_ *eventhub.Hub, f *transport, key string) { f.link(key).Down() },
		publish: func(_ *eventhub.Hub, f *transport, key string, e locking.Event) { f.link(key).Publish(e) },
	},
}

func newHub(t *testing.T) (*eventhub.Hub, *transport) {
	f := newTransport()
	h := eventhub.New(eventhub.Options{Listen: f.listen})
	t.Cleanup(h.Close)
	return h, f
}

func TestHub_X2_SubscribeWhenLiveGetsSubscribed(t *testing.T) {
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			h, f := newHub(t)
			if sh.liveBeforeSubscriber {
				sh.up(h, f, "k")
				early, _ := subscribe(t, h, "k")
				early.want(t, "subscribed") // before Subscribe returned
			}
			first, _ := subscribe(t, h, "k")
			if !sh.liveBeforeSubscriber {
				first.want(t) // not live until the backend says so
				sh.up(h, f, "k")
			}
			first.want(t, "subscribed")
			later, _ := subscribe(t, h, "k")
			later.want(t, "subscribed")
			first.want(t, "subscribed") // nothing more for the others
		})
	}
}

func TestHub_X2_NotLiveGetsSubscribedWhenLinkComesUp(t *testing.T) {
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			h, f := newHub(t)
			a, _ := subscribe(t, h, "k")
			b, _ := subscribe(t, h, "k")
			a.want(t)
			b.want(t)
			sh.up(h, f, "k")
			a.want(t, "subscribed")
			b.want(t, "subscribed")
		})
	}
}

func TestHub_X2_ListenAndUnlistenOncePerKey(t *testing.T) {
	h, f := newHub(t)
	var stops []func()
	for _, key := range []string{"a", "b", "a", "a", "b"} {
		_, stop := subscribe(t, h, key)
		stops = append(stops, stop)
	}
	for _, key := range []string{"a", "b"} {
		if l, u := f.counts(key); l != 1 || u != 0 {
			t.Fatalf("key %s: %d listens, %d unlistens after subscribing; want 1, 0", key, l, u)
		}
	}
	for i, stop := range stops {
		stop()
		want := map[string]int{"a": 0, "b": 0}
		if i >= 3 {
			want["a"] = 1 // stops 0, 2, 3 are a's
		}
		if i >= 4 {
			want["b"] = 1
		}
		for key, w := range want {
			if _, u := f.counts(key); u != w {
				t.Fatalf("after stop %d: key %s unlistened %d times, want %d", i, key, u, w)
			}
		}
	}
	// A new first subscriber listens again.
	subscribe(t, h, "a")
	if l, u := f.counts("a"); l != 2 || u != 1 {
		t.Fatalf("key a: %d listens, %d unlistens; want 2, 1", l, u)
	}
}

func TestHub_X2_StopIsIdempotentAndRemoves(t *testing.T) {
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			h, f := newHub(t)
			gone, stopGone := subscribe(t, h, "k")
			kept, _ := subscribe(t, h, "k")
			sh.up(h, f, "k")
			stopGone()
			stopGone()
			sh.publish(h, f, "k", locking.Event{Kind: locking.EventReleased})
			gone.want(t, "subscribed")
			kept.want(t, "subscribed", "released")
			if _, u := f.counts("k"); u != 0 {
				t.Fatalf("unlistened %d times with a subscriber left, want 0", u)
			}
		})
	}
}

func TestHub_L7_DropAndResubscribeReachEverySubscriber(t *testing.T) {
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			h, f := newHub(t)
			a, _ := subscribe(t, h, "k")
			b, _ := subscribe(t, h, "k")
			sh.up(h, f, "k")
			sh.down(h, f, "k")
			sh.down(h, f, "k") // not live: nothing to tell
			c, _ := subscribe(t, h, "k")
			c.want(t) // joined while dropped
			sh.publish(h, f, "k", locking.Event{Kind: locking.EventAcquired, Owner: "x"})
			sh.up(h, f, "k")
			a.want(t, "subscribed", "unsubscribed", "acquired:x", "subscribed")
			b.want(t, "subscribed", "unsubscribed", "acquired:x", "subscribed")
			c.want(t, "acquired:x", "subscribed")
		})
	}
}

func TestHub_L7_EventsReachOnlyTheKeysSubscribers(t *testing.T) {
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			h, f := newHub(t)
			a, _ := subscribe(t, h, "a")
			b, _ := subscribe(t, h, "b")
			sh.publish(h, f, "a", locking.Event{Kind: locking.EventReleased, Owner: "next"})
			sh.publish(h, f, "b", locking.Event{Kind: locking.EventResign})
			h.Publish("nobody", locking.Event{Kind: locking.EventReleased})
			a.want(t, "released:next")
			b.want(t, "resign")
		})
	}
}

func TestHub_X2_LinkOfAnEndedListenIsIgnored(t *testing.T) {
	h, f := newHub(t)
	_, stop := subscribe(t, h, "k")
	old := f.link("k")
	stop()
	r, _ := subscribe(t, h, "k")
	if f.link("k") == old {
		t.Fatal("the second Listen got the first one's link")
	}
	old.Up()
	old.Publish(locking.Event{Kind: locking.EventReleased})
	f.link("k").Up()
	old.Down()
	r.want(t, "subscribed")
	var none *eventhub.Link
	none.Up()
	none.Publish(locking.Event{Kind: locking.EventReleased})
	none.Down()
}

func TestHub_X2_CloseStopsAll(t *testing.T) {
	errCustom := errors.New("provider closed")
	for _, tc := range []struct {
		name    string
		errOpt  error
		wantErr error
	}{
		{"default error", nil, eventhub.ErrClosed},
		{"provider's error", errCustom, errCustom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTransport()
			h := eventhub.New(eventhub.Options{Listen: f.listen, ErrClosed: tc.errOpt})
			live, stopLive := subscribe(t, h, "live")
			idle, _ := subscribe(t, h, "idle")
			f.link("live").Up()
			h.Close()
			h.Close()
			live.want(t, "subscribed", "unsubscribed")
			idle.want(t)

			f.link("live").Up()
			f.link("idle").Publish(locking.Event{Kind: locking.EventReleased})
			h.Up()
			h.Publish("live", locking.Event{Kind: locking.EventReleased})
			live.want(t, "subscribed", "unsubscribed")
			idle.want(t)

			stopLive()
			if _, u := f.counts("live"); u != 0 {
				t.Fatalf("a stop after Close unlistened %d times, want 0 (the backend stops its transport)", u)
			}
			if stop, err := h.Subscribe("live", live.fn); !errors.Is(err, tc.wantErr) || stop != nil {
				t.Fatalf("Subscribe after Close: stop %v, err %v; want nil, %v", stop != nil, err, tc.wantErr)
			}
		})
	}
}

func TestHub_X2_NilCallbackIsAnError(t *testing.T) {
	h, _ := newHub(t)
	if stop, err := h.Subscribe("k", nil); err == nil || stop != nil {
		t.Fatalf("Subscribe(nil): stop %v, err %v; want an error", stop != nil, err)
	}
}

func TestHub_X2_ZeroOptionsAlwaysLive(t *testing.T) {
	h := eventhub.New(eventhub.Options{})
	defer h.Close()
	h.Up() // an in-process provider: live from the start
	r, stop := subscribe(t, h, "k")
	h.Publish("k", locking.Event{Kind: locking.EventAcquired, Owner: "me"})
	stop()
	h.Publish("k", locking.Event{Kind: locking.EventReleased})
	r.want(t, "subscribed", "acquired:me")
}

// A key's unlisten returns before Listen is called again for it, so a
// backend never sends a SUBSCRIBE before the UNSUBSCRIBE it follows.
func TestHub_X2_UnlistenReturnsBeforeTheNextListen(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var mu sync.Mutex
	var calls []string
	h := eventhub.New(eventhub.Options{Listen: func(key string, _ *eventhub.Link) func() {
		mu.Lock()
		calls = append(calls, "listen")
		n := len(calls)
		mu.Unlock()
		return func() {
			if n == 1 {
				close(entered)
				<-release // the first unlisten is slow
			}
			mu.Lock()
			calls = append(calls, "unlisten")
			mu.Unlock()
		}
	}})
	defer h.Close()
	_, stop := subscribe(t, h, "k")
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	<-entered
	subscribed := make(chan func())
	go func() {
		s, err := h.Subscribe("k", func(locking.Event) {})
		if err != nil {
			t.Error(err)
		}
		subscribed <- s
	}()
	close(release)
	<-stopped
	(<-subscribed)()
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"listen", "unlisten", "listen", "unlisten"}; !slices.Equal(calls, want) {
		t.Fatalf("calls %q, want %q", calls, want)
	}
}

// Close waits for a Listen under way, so the backend may stop its
// transport right after Close.
func TestHub_X2_CloseWaitsForListenUnderWay(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var listened bool
	h := eventhub.New(eventhub.Options{Listen: func(string, *eventhub.Link) func() {
		close(entered)
		<-release
		listened = true
		return nil
	}})
	done := make(chan error)
	go func() {
		_, err := h.Subscribe("k", func(locking.Event) {})
		done <- err
	}()
	<-entered
	closed := make(chan struct{})
	go func() { h.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while Listen was under way")
	case <-done:
		t.Fatal("Subscribe returned while Listen was under way")
	default:
	}
	close(release)
	<-closed
	if !listened {
		t.Fatal("Close returned before Listen did")
	}
	if err := <-done; err != nil {
		t.Fatalf("Subscribe that began before Close: %v", err)
	}
}

// Subscribers and stops racing on one key keep Listen and unlisten
// alternating: never two listens without an unlisten between them.
func TestHub_X2_ConcurrentSubscribersAlternateListen(t *testing.T) {
	var mu sync.Mutex
	listening, bad := false, 0
	h := eventhub.New(eventhub.Options{Listen: func(string, *eventhub.Link) func() {
		mu.Lock()
		if listening {
			bad++
		}
		listening = true
		mu.Unlock()
		return func() {
			mu.Lock()
			if !listening {
				bad++
			}
			listening = false
			mu.Unlock()
		}
	}})
	h.Up()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 200 {
				stop, err := h.Subscribe("k", func(locking.Event) {})
				if err != nil {
					t.Error(err)
					return
				}
				h.Publish("k", locking.Event{Kind: locking.EventReleased, Owner: fmt.Sprint(i)})
				stop()
			}
		})
	}
	wg.Wait()
	h.Close()
	mu.Lock()
	defer mu.Unlock()
	if bad != 0 || listening {
		t.Fatalf("%d listens or unlistens out of turn; listening at the end: %v", bad, listening)
	}
}

func TestHub_X2_PublishDoesNotAllocate(t *testing.T) {
	h, f := newHub(t)
	h.Up()
	n := 0
	for range 3 {
		if _, err := h.Subscribe("k", func(locking.Event) { n++ }); err != nil {
			t.Fatal(err)
		}
	}
	l := f.link("k")
	e := locking.Event{Kind: locking.EventAcquired, Owner: "x", Fence: 7}
	if a := testing.AllocsPerRun(100, func() { h.Publish("k", e) }); a != 0 {
		t.Errorf("Hub.Publish: %v allocations, want 0", a)
	}
	if a := testing.AllocsPerRun(100, func() { l.Publish(e) }); a != 0 {
		t.Errorf("Link.Publish: %v allocations, want 0", a)
	}
	if n == 0 {
		t.Fatal("nothing delivered")
	}
}
