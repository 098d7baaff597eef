package fencing_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/core/fencing"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newGate starts a private redis-server and returns a gate over it and a
// raw client to inspect or tamper with the keys.
func newGate(t *testing.T, opts ...fencing.Option) (*fencing.Gate, *redis.Client) {
	t.Helper()
	c := redistest.Start(t).Client(t)
	g, err := fencing.New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return g, c
}

func keys(t *testing.T, g *fencing.Gate, resource string) fencing.Keys {
	t.Helper()
	k, err := g.Keys(resource)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func wantStale(t *testing.T, err error, resource string, fence, highest uint64) {
	t.Helper()
	if !errors.Is(err, fencing.ErrStale) {
		t.Fatalf("err = %v, want ErrStale", err)
	}
	var se *fencing.StaleError
	if !errors.As(err, &se) {
		t.Fatalf("err = %T %v, want *StaleError", err, err)
	}
	want := fencing.StaleError{Resource: resource, Fence: fence, Highest: highest}
	if *se != want {
		t.Fatalf("StaleError = %+v, want %+v", *se, want)
	}
}

func get(t *testing.T, g *fencing.Gate, resource string) string {
	t.Helper()
	v, ok, err := g.Get(context.Background(), resource)
	if err != nil || !ok {
		t.Fatalf("Get(%q) = %q, %v, %v", resource, v, ok, err)
	}
	return v
}

func highest(t *testing.T, g *fencing.Gate, resource string) uint64 {
	t.Helper()
	h, err := g.Highest(context.Background(), resource)
	if err != nil {
		t.Fatalf("Highest(%q): %v", resource, err)
	}
	return h
}

// The failure fencing prevents: a leader with fence 5 is paused past its
// lease; its successor (fence 6) writes; the old leader resumes and writes
// what it was about to write. A plain SET lets the late write overwrite the
// successor's; the gate refuses it and keeps the successor's value.
func TestGate_G5_PausedLeaderLateWriteRefused(t *testing.T) {
	g, c := newGate(t)
	ctx := context.Background()
	const res = "daily-report"

	// Without a fence check, the late write wins.
	if err := c.Set(ctx, "plain:report", "by successor (6)", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "plain:report", "by paused leader (5)", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v := c.Get(ctx, "plain:report").Val(); v != "by paused leader (5)" {
		t.Fatalf("plain SET: %q", v)
	}

	// Through the gate.
	if err := g.Set(ctx, res, 5, "by leader (5)"); err != nil {
		t.Fatalf("leader's write before the pause: %v", err)
	}
	if err := g.Set(ctx, res, 6, "by successor (6)"); err != nil {
		t.Fatalf("successor's write: %v", err)
	}
	err := g.Set(ctx, res, 5, "by paused leader (5)")
	wantStale(t, err, res, 5, 6)
	if v := get(t, g, res); v != "by successor (6)" {
		t.Fatalf("value = %q, want the successor's", v)
	}
	if h := highest(t, g, res); h != 6 {
		t.Fatalf("Highest = %d, want 6", h)
	}
	// The successor keeps writing in its term.
	if err := g.Set(ctx, res, 6, "by successor (6), again"); err != nil {
		t.Fatalf("successor's second write: %v", err)
	}
	if v := get(t, g, res); v != "by successor (6), again" {
		t.Fatalf("value = %q", v)
	}
}

func TestGate_G5_AdmitOrdersFences(t *testing.T) {
	g, _ := newGate(t)
	ctx := context.Background()
	steps := []struct {
		fence uint64
		stale bool
		high  uint64
	}{
		{3, false, 3},
		{3, false, 3}, // equal: the same term writes again
		{2, true, 3},
		{10, false, 10},
		{9, true, 10},
		{1, true, 10},
		{11, false, 11},
	}
	for i, s := range steps {
		err := g.Admit(ctx, "r", s.fence)
		if s.stale {
			wantStale(t, err, "r", s.fence, s.high)
		} else if err != nil {
			t.Fatalf("step %d: Admit(%d): %v", i, s.fence, err)
		}
		if h := highest(t, g, "r"); h != s.high {
			t.Fatalf("step %d: Highest = %d, want %d", i, h, s.high)
		}
	}
	// Resources are independent.
	if err := g.Admit(ctx, "other", 1); err != nil {
		t.Fatalf("another resource: %v", err)
	}
	if h := highest(t, g, "never"); h != 0 {
		t.Fatalf("Highest of an unused resource = %d, want 0", h)
	}
}

// Admit and Set share one gate: an admission by a successor refuses the
// older term's write, and a refused Set writes nothing.
func TestGate_G5_AdmitThenStaleSetWritesNothing(t *testing.T) {
	g, c := newGate(t)
	ctx := context.Background()
	if err := g.Admit(ctx, "doc", 8); err != nil {
		t.Fatal(err)
	}
	wantStale(t, g.Set(ctx, "doc", 7, "late"), "doc", 7, 8)
	if _, ok, err := g.Get(ctx, "doc"); ok || err != nil {
		t.Fatalf("Get after a refused Set: ok=%v err=%v, want nothing stored", ok, err)
	}
	if n := c.Exists(ctx, keys(t, g, "doc").Value).Val(); n != 0 {
		t.Fatalf("value key exists after a refused Set")
	}
}

// In the log's order fences never go back down: the stale entries are
// refused, the admitted ones kept in admission order.
func TestGate_G5_AppendKeepsStoreOrder(t *testing.T) {
	g, _ := newGate(t)
	ctx := context.Background()
	for _, f := range []uint64{1, 1, 4, 2, 4, 7, 5, 7} {
		err := g.Append(ctx, "log", f, strconv.FormatUint(f, 10))
		if err != nil && !errors.Is(err, fencing.ErrStale) {
			t.Fatal(err)
		}
	}
	got, err := g.Entries(ctx, "log")
	if err != nil {
		t.Fatal(err)
	}
	if want := "1 1 4 4 7 7"; strings.Join(got, " ") != want {
		t.Fatalf("entries %q, want %q", got, want)
	}
}

// Many writers with random fences race on one resource: every admitted
// entry is in nondecreasing fence order, every refusal was for a fence
// below one admitted earlier, and the gate ends at the highest fence.
func TestGate_G5_ConcurrentWritersNeverInterleave(t *testing.T) {
	g, _ := newGate(t)
	ctx := context.Background()
	const writers, writes = 8, 50
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		maxFence uint64
		refused  int
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range writes {
				f := 1 + r.Uint64N(100)
				err := g.Append(ctx, "race", f, strconv.FormatUint(f, 10))
				var se *fencing.StaleError
				switch {
				case errors.As(err, &se):
					if se.Highest <= f {
						t.Errorf("fence %d refused with highest %d", f, se.Highest)
					}
					mu.Lock()
					refused++
					mu.Unlock()
				case err != nil:
					t.Error(err)
				}
				mu.Lock()
				maxFence = max(maxFence, f)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	got, err := g.Entries(ctx, "race")
	if err != nil {
		t.Fatal(err)
	}
	if len(got)+refused != writers*writes {
		t.Fatalf("%d entries + %d refusals, want %d writes", len(got), refused, writers*writes)
	}
	var prev uint64
	for i, e := range got {
		f, err := strconv.ParseUint(e, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if f < prev {
			t.Fatalf("entry %d: fence %d after %d", i, f, prev)
		}
		prev = f
	}
	if prev != maxFence || highest(t, g, "race") != maxFence {
		t.Fatalf("last entry %d, highest %d, want %d", prev, highest(t, g, "race"), maxFence)
	}
}

// Fences are compared exactly across the whole uint64 range, also where Lua
// doubles could not tell them apart (2^53 and 2^53+1).
func TestGate_G5_FullUint64Precision(t *testing.T) {
	g, _ := newGate(t)
	ctx := context.Background()
	const p53 = uint64(1) << 53
	if err := g.Admit(ctx, "p", p53+1); err != nil {
		t.Fatal(err)
	}
	wantStale(t, g.Admit(ctx, "p", p53), "p", p53, p53+1)
	if err := g.Admit(ctx, "p", 10*p53); err != nil { // more digits
		t.Fatal(err)
	}
	wantStale(t, g.Admit(ctx, "p", 9*p53), "p", 9*p53, 10*p53)
	if err := g.Admit(ctx, "p", math.MaxUint64); err != nil {
		t.Fatal(err)
	}
	wantStale(t, g.Set(ctx, "p", math.MaxUint64-1, "x"), "p", math.MaxUint64-1, math.MaxUint64)
	if err := g.Set(ctx, "p", math.MaxUint64, "max"); err != nil {
		t.Fatal(err)
	}
	if h := highest(t, g, "p"); h != math.MaxUint64 {
		t.Fatalf("Highest = %d", h)
	}
}

// Fence 0 means "no fence": refused with an error naming it and the
// resource, and nothing is written.
func TestGate_G5_ZeroFenceRefused(t *testing.T) {
	g, c := newGate(t)
	ctx := context.Background()
	for name, op := range map[string]func() error{
		"admit":  func() error { return g.Admit(ctx, "z", 0) },
		"set":    func() error { return g.Set(ctx, "z", 0, "v") },
		"append": func() error { return g.Append(ctx, "z", 0, "v") },
	} {
		err := op()
		if !errors.Is(err, fencing.ErrZeroFence) || errors.Is(err, fencing.ErrStale) {
			t.Fatalf("%s: err = %v, want ErrZeroFence", name, err)
		}
		if !strings.Contains(err.Error(), "fence 0") || !strings.Contains(err.Error(), `"z"`) {
			t.Fatalf("%s: error %q does not name the fence and the resource", name, err)
		}
	}
	if n := c.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("%d keys written by refused zero fences", n)
	}
}

// A gate key written by something else than a gate is an error naming the
// key and the value, never a panic and never an admission.
func TestGate_G5_GateValueNotANumber(t *testing.T) {
	g, c := newGate(t)
	ctx := context.Background()
	k := keys(t, g, "bad")
	long := strings.Repeat("9", 30)
	for _, stored := range []string{"abc", "-1", "1.5", "", " 7", long} {
		if err := c.Set(ctx, k.Gate, stored, 0).Err(); err != nil {
			t.Fatal(err)
		}
		for name, op := range map[string]func() error{
			"admit":   func() error { return g.Admit(ctx, "bad", 5) },
			"set":     func() error { return g.Set(ctx, "bad", 5, "v") },
			"append":  func() error { return g.Append(ctx, "bad", 5, "v") },
			"highest": func() error { _, err := g.Highest(ctx, "bad"); return err },
		} {
			err := op()
			if err == nil {
				t.Fatalf("stored %q: %s succeeded", stored, name)
			}
			if errors.Is(err, fencing.ErrStale) || !strings.Contains(err.Error(), strconv.Quote(k.Gate)) {
				t.Fatalf("stored %q: %s: error %q does not name the key %q", stored, name, err, k.Gate)
			}
		}
		if v := c.Get(ctx, k.Gate).Val(); v != stored {
			t.Fatalf("gate key overwritten: %q, want %q", v, stored)
		}
	}
	if n := c.Exists(ctx, k.Value, k.Log).Val(); n != 0 {
		t.Fatalf("data written past an unreadable gate")
	}
}

// A gate value with leading zeros (written by hand) is still read as a
// number.
func TestGate_G5_GateValueLeadingZeros(t *testing.T) {
	g, c := newGate(t)
	ctx := context.Background()
	if err := c.Set(ctx, keys(t, g, "z").Gate, "0006", 0).Err(); err != nil {
		t.Fatal(err)
	}
	wantStale(t, g.Admit(ctx, "z", 5), "z", 5, 6)
	if err := g.Admit(ctx, "z", 6); err != nil {
		t.Fatal(err)
	}
	if h := highest(t, g, "z"); h != 6 {
		t.Fatalf("Highest = %d", h)
	}
}

// When the effect fails inside the script (the log key holds a string), the
// gate is not raised: nothing was admitted.
func TestGate_G5_FailedEffectDoesNotRaiseGate(t *testing.T) {
	g, c := newGate(t)
	ctx := context.Background()
	k := keys(t, g, "w")
	if err := c.Set(ctx, k.Log, "a string", 0).Err(); err != nil {
		t.Fatal(err)
	}
	err := g.Append(ctx, "w", 9, "v")
	if err == nil || errors.Is(err, fencing.ErrStale) || !strings.Contains(err.Error(), k.Log) {
		t.Fatalf("err = %v, want a WRONGTYPE error naming %q", err, k.Log)
	}
	if h := highest(t, g, "w"); h != 0 {
		t.Fatalf("Highest = %d after a failed write, want 0", h)
	}
}

// The script is loaded again after the server forgot it (SCRIPT FLUSH, or a
// restart).
func TestGate_G5_ScriptFlushed(t *testing.T) {
	g, c := newGate(t)
	ctx := context.Background()
	if err := g.Set(ctx, "s", 1, "a"); err != nil {
		t.Fatal(err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := g.Set(ctx, "s", 2, "b"); err != nil {
		t.Fatal(err)
	}
	if v := get(t, g, "s"); v != "b" {
		t.Fatalf("value %q", v)
	}
}

func TestGate_G5_CancelledContextSendsNothing(t *testing.T) {
	g, c := newGate(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := g.Set(ctx, "c", 1, "v")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := c.DBSize(context.Background()).Val(); n != 0 {
		t.Fatalf("%d keys written with a cancelled context", n)
	}
}

func TestGate_G5_NilClient(t *testing.T) {
	ctx := context.Background()
	for name, c := range map[string]redis.UniversalClient{
		"nil":            nil,
		"*redis.Client":  (*redis.Client)(nil),
		"*ClusterClient": (*redis.ClusterClient)(nil),
		"*redis.Ring":    (*redis.Ring)(nil),
	} {
		g, err := fencing.New(c)
		if err != nil {
			t.Fatalf("%s: New: %v", name, err)
		}
		errs := []error{
			g.Admit(ctx, "r", 1),
			g.Set(ctx, "r", 1, "v"),
			g.Append(ctx, "r", 1, "v"),
		}
		_, err = g.Highest(ctx, "r")
		errs = append(errs, err)
		_, _, err = g.Get(ctx, "r")
		errs = append(errs, err)
		_, err = g.Entries(ctx, "r")
		errs = append(errs, err)
		for i, err := range errs {
			if !errors.Is(err, fencing.ErrNilClient) {
				t.Fatalf("%s: op %d: err = %v, want ErrNilClient", name, i, err)
			}
		}
	}
}

func TestGate_G5_InvalidPrefixAndResource(t *testing.T) {
	for _, p := range []string{"a{b", "x}", "{t}:"} {
		_, err := fencing.New(nil, fencing.WithPrefix(p))
		if err == nil || !strings.Contains(err.Error(), strconv.Quote(p)) {
			t.Fatalf("prefix %q: err = %v, want an error naming it", p, err)
		}
	}
	g, c := newGate(t)
	ctx := context.Background()
	for _, r := range []string{"", "}x"} {
		if _, err := g.Keys(r); err == nil {
			t.Fatalf("Keys(%q) accepted", r)
		}
		err := g.Set(ctx, r, 1, "v")
		if err == nil || !strings.Contains(err.Error(), "resource") {
			t.Fatalf("Set(%q): err = %v, want an error naming the resource", r, err)
		}
	}
	if n := c.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("%d keys written for invalid resources", n)
	}
}

// Keys carry the prefix and the resource as hash tag; braces inside the
// resource keep every key of the resource in one slot.
func TestGate_G5_Keys(t *testing.T) {
	g, err := fencing.New(nil, fencing.WithPrefix("app:"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := g.Keys("orders/42")
	if err != nil {
		t.Fatal(err)
	}
	want := fencing.Keys{Gate: "app:{orders/42}:gate", Value: "app:{orders/42}:value", Log: "app:{orders/42}:log"}
	if k != want {
		t.Fatalf("Keys = %+v, want %+v", k, want)
	}
	d, _ := fencing.New(nil)
	if k, _ := d.Keys("r"); k.Gate != fencing.DefaultPrefix+"{r}:gate" {
		t.Fatalf("default gate key %q", k.Gate)
	}
}

// Over Redis Cluster the gate and the data of a resource share a slot, so
// the script runs; resources spread over the nodes.
func TestGate_G5_Cluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c := cl.Client(t)
	g, err := fencing.New(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 20 {
		r := fmt.Sprintf("res-%d", i)
		if i == 0 {
			r = "odd}{name"
		}
		k := keys(t, g, r)
		slots := map[int64]bool{}
		for _, key := range []string{k.Gate, k.Value, k.Log} {
			slots[c.ClusterKeySlot(ctx, key).Val()] = true
		}
		if len(slots) != 1 {
			t.Fatalf("%q: keys in slots %v", r, slots)
		}
		if err := g.Set(ctx, r, 2, "new"); err != nil {
			t.Fatalf("%q: %v", r, err)
		}
		wantStale(t, g.Set(ctx, r, 1, "old"), r, 1, 2)
		if err := g.Append(ctx, r, 2, "e"); err != nil {
			t.Fatalf("%q: %v", r, err)
		}
		wantStale(t, g.Append(ctx, r, 1, "old"), r, 1, 2)
		if v := get(t, g, r); v != "new" {
			t.Fatalf("%q: value %q", r, v)
		}
		if e, err := g.Entries(ctx, r); err != nil || len(e) != 1 {
			t.Fatalf("%q: entries %q, %v", r, e, err)
		}
	}
}
