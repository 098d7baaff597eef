package keycache

import (
	"fmt"
	"testing"
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
