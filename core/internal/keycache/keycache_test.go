package keycache

import (
	"fmt"
	"testing"
	"time"
)

func TestCache_RemembersUpToMax(t *testing.T) {
	var c Cache
	calls := 0
	derive := func(k string) string { calls++; return "{x}:" + k }
	for range 3 {
		if got := c.Get("a", derive); got != "{x}:a" {
			t.Fatalf("Get(a) = %q", got)
		}
	}
	if calls != 1 {
		t.Fatalf("derive ran %d times for one key; want 1", calls)
	}
	for i := range Max + 10 {
		k := fmt.Sprint("k", i)
		if got := c.Get(k, derive); got != "{x}:"+k {
			t.Fatalf("Get(%s) = %q", k, got)
		}
	}
	if c.Len() != Max {
		t.Fatalf("Len = %d after %d keys; want the bound %d", c.Len(), Max+11, Max)
	}
}

func TestCache_HitAllocatesNothing(t *testing.T) {
	var c Cache
	derive := func(k string) string { return "{x}:" + k }
	key := fmt.Sprint("job-", 7)
	c.Get(key, derive)
	if n := testing.AllocsPerRun(100, func() { c.Get(key, derive) }); n != 0 {
		t.Fatalf("a remembered key cost %.1f allocations; want 0", n)
	}
}

// Once full, a miss derives the name without taking the cache's lock: a
// process with more keys than Max misses on most calls, and 100,000
// electors' tries queued on that lock one behind another.
func TestCache_AFullCachesMissTakesNoLock(t *testing.T) {
	var c Cache
	derive := func(k string) string { return "{x}:" + k }
	for i := range Max {
		c.Get(fmt.Sprint("k", i), derive)
	}
	c.mu.RLock() // a writer would wait for this reader
	defer c.mu.RUnlock()
	got := make(chan string, 1)
	go func() { got <- c.Get("beyond", derive) }()
	select {
	case v := <-got:
		if v != "{x}:beyond" {
			t.Fatalf("Get(beyond) = %q", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a miss on a full cache waited for its lock")
	}
}
