package locking_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newLock(t *testing.T, mutate func(*locking.Options)) (*locking.DistributedLock, *memlock.Provider) {
	t.Helper()
	o := locking.DefaultOptions()
	if mutate != nil {
		mutate(&o)
	}
	p := memlock.New()
	l, err := locking.New(p, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l, p
}

func TestOptions_L2_Validate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*locking.Options)
		want   []string // substrings of the error; none = valid
	}{
		{"defaults", func(*locking.Options) {}, nil},
		{"namespace with hash tags", func(o *locking.Options) { o.Namespace, o.UseHashTags = "billing", true }, nil},
		{"hash tags need namespace", func(o *locking.Options) { o.UseHashTags = true }, []string{"Options.UseHashTags", `Options.Namespace is ""`}},
		{"hash tags forbid braces", func(o *locking.Options) { o.Namespace, o.UseHashTags = "{x}", true }, []string{`Options.Namespace "{x}"`, "braces"}},
		{"namespace whitespace", func(o *locking.Options) { o.Namespace = "a b" }, []string{`Options.Namespace "a b"`, "whitespace"}},
		{"namespace control", func(o *locking.Options) { o.Namespace = "a\x01" }, []string{`Options.Namespace "a\x01"`, "control"}},
		{"zero key length is the default", func(o *locking.Options) { o.MaxKeyLength = 0 }, nil},
		{"negative key length", func(o *locking.Options) { o.MaxKeyLength = -1 }, []string{"Options.MaxKeyLength -1"}},
		{"negative max lease", func(o *locking.Options) { o.MaxLease = -time.Second }, []string{"Options.MaxLease -1s"}},
		{"zero max hold is the default", func(o *locking.Options) { o.MaxHold = 0 }, nil},
		{"all at once", func(o *locking.Options) { o.MaxKeyLength, o.MaxLease, o.MaxHold = -1, -1, -2 },
			[]string{"Options.MaxKeyLength -1", "Options.MaxLease -1ns", "Options.MaxHold -2ns"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := locking.DefaultOptions()
			tt.mutate(&o)
			err := o.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
			if !errors.Is(err, locking.ErrInvalidOptions) {
				t.Errorf("Validate() = %v, want it to match ErrInvalidOptions", err)
			}
			if _, nerr := locking.New(memlock.New(), o); !errors.Is(nerr, locking.ErrInvalidOptions) {
				t.Errorf("New = %v, want the options refused with ErrInvalidOptions", nerr)
			}
		})
	}
}

func TestNew_L0_NilProvider(t *testing.T) {
	if _, err := locking.New(nil, locking.DefaultOptions()); err == nil || !strings.Contains(err.Error(), "nil provider") {
		t.Fatalf("New(nil, enabled) = %v, want nil provider error", err)
	}
	o := locking.DefaultOptions()
	o.Disabled = true
	l, err := locking.New(nil, o)
	if err != nil {
		t.Fatalf("New(nil, disabled) = %v", err)
	}
	if _, err := l.TryAcquire(context.Background(), "k", time.Second); err != nil {
		t.Fatalf("disabled TryAcquire over nil provider: %v", err)
	}
}

func TestProviderKey_L2(t *testing.T) {
	tests := []struct {
		ns        string
		hashTags  bool
		key, want string
	}{
		{"", false, "leader:x", "lock:leader:x"},
		{"billing", false, "election:eu:scheduler", "billing:lock:election:eu:scheduler"},
		{"billing", true, "{elections}:scheduler", "{billing}:lock:{elections}:scheduler"},
	}
	for _, tt := range tests {
		l, _ := newLock(t, func(o *locking.Options) { o.Namespace, o.UseHashTags = tt.ns, tt.hashTags })
		got, err := l.ProviderKey(tt.key)
		if err != nil || got != tt.want {
			t.Errorf("ProviderKey(%q) with namespace %q, hash tags %v = %q, %v; want %q", tt.key, tt.ns, tt.hashTags, got, err, tt.want)
		}
	}
}

func TestTryAcquire_L3_InvalidKeys(t *testing.T) {
	l, p := newLock(t, func(o *locking.Options) { o.MaxKeyLength = 16 })
	for _, key := range []string{"", " ", "a b", "a\tb", "a\nb", "a\x00b", "a\x7fb", "\xff\xfe", strings.Repeat("k", 17)} {
		_, err := l.TryAcquire(context.Background(), key, time.Second)
		var ke *locking.KeyError
		if !errors.Is(err, locking.ErrInvalidKey) || !errors.As(err, &ke) || ke.Key != key {
			t.Errorf("TryAcquire(%q) = %v, want *KeyError for that key", key, err)
			continue
		}
		if !strings.Contains(err.Error(), strconv.Quote(key)) {
			t.Errorf("error %q does not name the key %q", err, key)
		}
	}
	if n := p.Len(); n != 0 {
		t.Errorf("invalid keys left %d leases behind", n)
	}
	// Exactly MaxKeyLength bytes is accepted.
	if _, err := l.TryAcquire(context.Background(), strings.Repeat("k", 16), time.Second); err != nil {
		t.Errorf("16-byte key refused: %v", err)
	}
}

func TestTryAcquire_InvalidLease(t *testing.T) {
	l, p := newLock(t, nil)
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := l.TryAcquire(context.Background(), "k", d)
		if !errors.Is(err, locking.ErrInvalidLease) || !strings.Contains(err.Error(), d.String()) {
			t.Errorf("TryAcquire(lease %v) = %v, want ErrInvalidLease naming the value", d, err)
		}
	}
	if p.Len() != 0 {
		t.Errorf("invalid leases left a lease behind")
	}
}

func TestTryAcquire_CancelledContext(t *testing.T) {
	l, p := newLock(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.TryAcquire(ctx, "k", time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("TryAcquire(cancelled) = %v, want context.Canceled", err)
	}
	if p.Len() != 0 {
		t.Errorf("cancelled acquire left a lease behind")
	}
}

func TestTryAcquire_L3_ExclusiveWithRemainingTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := newLock(t, nil)
		ctx := context.Background()
		a, err := l.TryAcquire(ctx, "job", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		_, err = l.TryAcquire(ctx, "job", 10*time.Second)
		var held *locking.HeldError
		if !errors.Is(err, locking.ErrNotAcquired) || !errors.As(err, &held) {
			t.Fatalf("second TryAcquire = %v, want *HeldError", err)
		}
		if held.Remaining != 7*time.Second || held.Key != "job" {
			t.Errorf("HeldError = %+v, want key job, remaining 7s", held)
		}
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := l.TryAcquire(ctx, "job", time.Second); err != nil {
			t.Errorf("TryAcquire after release = %v", err)
		}
	})
}

func TestLease_L3_StaleTokenRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := newLock(t, nil)
		ctx := context.Background()
		old, err := l.TryAcquire(ctx, "k", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // expires exactly at the deadline
		if err := old.Extend(ctx, time.Second); !errors.Is(err, locking.ErrLeaseLost) {
			t.Fatalf("Extend after expiry = %v, want ErrLeaseLost", err)
		}
		cur, err := l.TryAcquire(ctx, "k", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := old.Release(ctx); !errors.Is(err, locking.ErrLeaseLost) {
			t.Fatalf("stale Release = %v, want ErrLeaseLost", err)
		}
		if err := old.Extend(ctx, time.Second); !errors.Is(err, locking.ErrLeaseLost) {
			t.Fatalf("stale Extend = %v, want ErrLeaseLost", err)
		}
		// The current holder is untouched by the stale calls.
		if err := cur.Extend(ctx, time.Second); err != nil {
			t.Fatalf("current holder's Extend = %v", err)
		}
	})
}

func TestLease_L5_CappedAtMaxLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := newLock(t, func(o *locking.Options) { o.MaxLease = 2 * time.Second })
		ctx := context.Background()
		ls, err := l.TryAcquire(ctx, "k", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if g := ls.(locking.GrantedLease).Granted(); g != 2*time.Second {
			t.Errorf("Granted() = %v, want the 2s cap", g)
		}
		time.Sleep(2 * time.Second)
		if _, err := l.TryAcquire(ctx, "k", time.Second); err != nil {
			t.Errorf("lease outlived its cap: %v", err)
		}
	})
}

func TestDisabled_L4_EveryoneGetsPlaceholder(t *testing.T) {
	l, p := newLock(t, func(o *locking.Options) { o.Disabled = true })
	if l.Coordinated() {
		t.Fatal("disabled lock reports Coordinated")
	}
	ctx := context.Background()
	a, err1 := l.TryAcquire(ctx, "k", time.Second)
	b, err2 := l.TryAcquire(ctx, "k", time.Second)
	if err1 != nil || err2 != nil {
		t.Fatalf("disabled acquires: %v, %v", err1, err2)
	}
	if err := a.Extend(ctx, time.Second); err != nil {
		t.Errorf("placeholder Extend: %v", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Errorf("placeholder Release: %v", err)
	}
	if p.Len() != 0 {
		t.Errorf("disabled lock wrote %d leases to the provider", p.Len())
	}
	if _, _, err := l.Advance(ctx, "s", 1); !errors.Is(err, locking.ErrNotSupported) {
		t.Errorf("disabled Advance = %v, want ErrNotSupported", err)
	}
}

// TestOptions_L4_L10_EnabledAndTheZeroValue: Enabled false disables a
// lock whose Options came from DefaultOptions (L4); in a literal, its zero
// value is "not set" and the lock coordinates (L10), unless Disabled is
// set. The lock's own Options report one answer in both fields.
func TestOptions_L4_L10_EnabledAndTheZeroValue(t *testing.T) {
	off := locking.DefaultOptions()
	off.Enabled = false
	tests := []struct {
		name        string
		o           locking.Options
		coordinated bool
	}{
		{"zero Options", locking.Options{}, true},
		{"literal with a namespace only", locking.Options{Namespace: "ns"}, true},
		{"literal Enabled true", locking.Options{Enabled: true}, true},
		{"literal Disabled", locking.Options{Disabled: true}, false},
		{"DefaultOptions", locking.DefaultOptions(), true},
		{"DefaultOptions with Enabled false", off, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := locking.New(memlock.New(), tt.o)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if got := l.Coordinated(); got != tt.coordinated {
				t.Fatalf("Coordinated() = %v, want %v", got, tt.coordinated)
			}
			if o := l.Options(); o.Enabled != tt.coordinated || o.Disabled == tt.coordinated {
				t.Fatalf("Options() Enabled %v Disabled %v, want Enabled %v", o.Enabled, o.Disabled, tt.coordinated)
			}
		})
	}
}

func TestHolder_L7(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := newLock(t, nil)
		ctx := context.Background()
		if _, ok, err := l.Holder(ctx, "k"); ok || err != nil {
			t.Fatalf("Holder of free key = %v, %v", ok, err)
		}
		if _, err := l.TryAcquireAs(ctx, "k", 5*time.Second, "replica-1"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		h, ok, err := l.Holder(ctx, "k")
		if err != nil || !ok || h.Owner != "replica-1" || h.TTL != 4*time.Second {
			t.Fatalf("Holder = %+v, %v, %v; want replica-1 with 4s left", h, ok, err)
		}
	})
}

func TestSubscribe_L7_ReleaseReachesSubscriber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := newLock(t, nil)
		ctx := context.Background()
		ls, err := l.TryAcquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var got []locking.EventKind
		stop, err := l.Subscribe("k", func(e locking.Event) { got = append(got, e.Kind) })
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		if err := ls.Release(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if want := []locking.EventKind{locking.EventSubscribed, locking.EventReleased}; !slices.Equal(got, want) {
			t.Fatalf("events = %v, want %v", got, want)
		}
	})
}

func TestAdvance_L8_Monotonic(t *testing.T) {
	l, _ := newLock(t, func(o *locking.Options) { o.Namespace = "ns" })
	ctx := context.Background()
	steps := []struct {
		v       int64
		adv     bool
		current int64
	}{{5, true, 5}, {5, false, 5}, {3, false, 5}, {9, true, 9}}
	for _, s := range steps {
		adv, cur, err := l.Advance(ctx, "job", s.v)
		if err != nil || adv != s.adv || cur != s.current {
			t.Fatalf("Advance(%d) = %v, %d, %v; want %v, %d", s.v, adv, cur, err, s.adv, s.current)
		}
	}
	if v, ok, err := l.State(ctx, "job"); err != nil || !ok || v != 9 {
		t.Fatalf("State = %d, %v, %v; want 9", v, ok, err)
	}
	if _, _, err := l.Advance(ctx, "bad key", 1); !errors.Is(err, locking.ErrInvalidKey) {
		t.Fatalf("Advance(bad key) = %v, want ErrInvalidKey", err)
	}
}

func TestAcquire_L6_WaitsForRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := newLock(t, nil)
		ctx := context.Background()
		first, err := l.TryAcquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan time.Duration, 1)
		start := time.Now()
		go func() {
			h, err := l.Acquire(ctx, "k", time.Minute)
			if err != nil {
				t.Error(err)
				got <- -1
				return
			}
			got <- time.Since(start)
			_ = h.Release(ctx)
		}()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("Acquire returned while the key was held")
		default:
		}
		if err := first.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if d := <-got; d != 10*time.Second {
			t.Errorf("Acquire returned after %v, want at the release (10s)", d)
		}
	})
}

func TestAcquire_L6_ContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := newLock(t, nil)
		if _, err := l.TryAcquire(context.Background(), "k", time.Minute); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if _, err := l.Acquire(ctx, "k", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire = %v, want DeadlineExceeded", err)
		}
	})
}

func TestAcquire_L6_ExtendsUntilMaxHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := newLock(t, func(o *locking.Options) { o.MaxHold = time.Minute })
		ctx := context.Background()
		h, err := l.Acquire(ctx, "k", 9*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		// Well past one lease, the lock is still held thanks to extension.
		time.Sleep(45 * time.Second)
		if _, err := l.TryAcquire(ctx, "k", time.Second); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("after 45s of a 9s lease: TryAcquire = %v, want held", err)
		}
		select {
		case <-h.Done():
			t.Fatal("Done closed while extending")
		default:
		}
		// Extension stops at MaxHold; the lease then runs out.
		<-h.Done()
		if !errors.Is(h.Err(), locking.ErrLeaseLost) || !strings.Contains(h.Err().Error(), "Options.MaxHold 1m0s") {
			t.Errorf("Err() = %v, want lease lost at Options.MaxHold", h.Err())
		}
		if _, err := l.TryAcquire(ctx, "k", time.Second); err != nil {
			t.Errorf("after MaxHold the key stays held: %v", err)
		}
		if err := h.Release(ctx); !errors.Is(err, locking.ErrLeaseLost) {
			t.Errorf("Release after loss = %v, want the loss", err)
		}
	})
}

func TestAcquire_L6_ReleaseIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, p := newLock(t, nil)
		ctx := context.Background()
		h, err := l.Acquire(ctx, "k", 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		for i := range 2 {
			if err := h.Release(ctx); err != nil {
				t.Fatalf("Release #%d = %v", i+1, err)
			}
		}
		if p.Len() != 0 {
			t.Error("lease left behind after Release")
		}
		<-h.Done()
	})
}

// durableProvider is a provider that says whether its backend keeps its
// leases across restarts.
type durableProvider struct {
	locking.Provider
	durable bool
}

func (p durableProvider) Durable() bool { return p.durable }

// A provider's locking.Durable answer is reported in Capabilities (Q1,
// L9): electors over a durable backend do not hold candidates back while
// their notification link is down.
func TestNew_Q1_L9_CapabilitiesReportDurable(t *testing.T) {
	for _, want := range []bool{true, false} {
		l, err := locking.New(durableProvider{memlock.New(), want}, locking.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Capabilities().Durable; got != want {
			t.Errorf("Durable() %v: Capabilities().Durable = %v", want, got)
		}
	}
	l, err := locking.New(memlock.New(), locking.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Capabilities().Durable {
		t.Error("memlock reported durable")
	}
}

// lateProvider answers acquisitions 400 ms after the backend granted them
// (a saturated server) and fails every extension (a link that is down).
type lateProvider struct{ locking.Provider }

func (p lateProvider) Acquire(ctx context.Context, r locking.AcquireRequest) (locking.AcquireResult, error) {
	res, err := p.Provider.Acquire(ctx, r)
	time.Sleep(400 * time.Millisecond)
	return res, err
}

func (lateProvider) Extend(context.Context, locking.ExtendRequest) (locking.ExtendResult, error) {
	return locking.ExtendResult{}, errors.New("link down")
}

// A held lock's lease runs from when its acquisition was sent, as an
// elector's term does (E5): a reply that came late does not lengthen it,
// so with no extension landing the lock is lost when the backend's lease
// ends, not 400 ms later (L6).
func TestAcquire_L6_E5_LeaseRunsFromTheAcquisitionsSending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := locking.New(lateProvider{memlock.New()}, locking.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		h, err := l.Acquire(context.Background(), "k", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		<-h.Done()
		if took := time.Since(t0); took < time.Second || took > time.Second+10*time.Millisecond {
			t.Fatalf("the lock was lost %v after the acquisition was sent; want when its 1s lease ran out, %v after", took, time.Second)
		}
		if !errors.Is(h.Err(), locking.ErrLeaseLost) {
			t.Fatalf("Err() = %v, want the lease lost", h.Err())
		}
	})
}
