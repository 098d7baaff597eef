// Package keycache remembers the names derived from lock keys (a
// namespace's provider key, a meta key), so a lock's hot path does not
// build the same strings again on every call.
package keycache

import (
	"sync"
	"sync/atomic"
)

// Max is how many keys a Cache remembers; keys beyond it are derived on
// every call, so a workload with unbounded distinct keys costs no more
// memory than that.
const Max = 4096

// Cache maps a key to the name derived from it. The zero value is ready;
// it is safe for concurrent use.
type Cache struct {
	mu   sync.RWMutex
	m    map[string]string
	full atomic.Bool // len(m) reached Max: a miss takes no lock
}

// Get returns derive(key), remembered from an earlier call when there was
// one. derive must be a pure function of key.
func (c *Cache) Get(key string, derive func(string) string) string {
	c.mu.RLock()
	v, ok := c.m[key]
	c.mu.RUnlock()
	if ok {
		return v
	}
	v = derive(key)
	if c.full.Load() {
		// A process with more keys than Max misses on most calls: taking
		// the write lock for each of them only to find the cache full
		// queued 100,000 electors' tries behind one another.
		return v
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]string)
	}
	if len(c.m) < Max {
		c.m[key] = v
	}
	if len(c.m) >= Max {
		c.full.Store(true)
	}
	c.mu.Unlock()
	return v
}

// Len reports how many keys the cache remembers.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
