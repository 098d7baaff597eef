package memlock

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/hostloom/hostloom/core/jobrecord"
)

// Job records (locking.RecordStore). A job's record is kept, as JSON of
// its fields and version, in the provider's expiring entries under the
// job key, so records expire like the Redis ones and need no map of their
// own; its history ring is one entry per ring index. Package jobrecord
// decides what to write.

// storedRecord is a job's record as kept in an entry.
type storedRecord struct {
	Version int64             `json:"v"`
	Fields  map[string]string `json:"f"`
}

// historyKey is the entry of ring index i of key. The NUL cannot occur in
// a provider key (locking.CheckKey refuses control characters).
func historyKey(key string, i int) string {
	return key + "\x00h" + strconv.Itoa(i)
}

// loadRecord reads key's record; p.mu must be held.
func (p *Provider) loadRecord(key string, now time.Time) (jobrecord.Stored, error) {
	e, ok := p.live(key, now)
	if !ok {
		return jobrecord.Stored{Now: now}, nil
	}
	var r storedRecord
	if err := json.Unmarshal([]byte(e.value), &r); err != nil {
		return jobrecord.Stored{}, fmt.Errorf("memlock: job records %q do not parse: %w", key, err)
	}
	return jobrecord.Stored{Found: true, Fields: r.Fields, Version: r.Version, Now: now, TTL: e.expires.Sub(now)}, nil
}

// LoadRecord implements locking.RecordStore on package time.
func (p *Provider) LoadRecord(ctx context.Context, key string) (jobrecord.Stored, error) {
	if err := ctx.Err(); err != nil {
		return jobrecord.Stored{}, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loadRecord(key, now)
}

// SwapRecord implements locking.RecordStore. Versions come from one
// counter of the provider, so a record that expired and was written
// again never has the version of one read before. Unlike the fields of
// a Redis hash, each history entry expires w.TTL after its own latest
// write (refreshing a hundred entries on every write would cost more than
// the write); a record that expired restarts its runs at 1, so an entry
// of an earlier life is never read.
func (p *Provider) SwapRecord(ctx context.Context, key string, from jobrecord.Stored, w jobrecord.Write) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if w.TTL < time.Millisecond {
		return false, fmt.Errorf("memlock: swap record %q: ttl %v must be at least 1ms", key, w.TTL)
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	cur, err := p.loadRecord(key, now)
	if err != nil {
		return false, err
	}
	if cur.Found != from.Found || cur.Version != from.Version {
		return false, nil
	}
	p.versions++
	b, err := json.Marshal(storedRecord{Version: p.versions, Fields: w.Fields})
	if err != nil {
		return false, err
	}
	p.entries[key] = entry{value: string(b), expires: now.Add(w.TTL)}
	if w.HasEntry {
		p.entries[historyKey(key, w.Index)] = entry{value: w.Entry, expires: now.Add(w.TTL)}
	}
	p.wrote(now)
	return true, nil
}

// LoadHistory implements locking.RecordStore.
func (p *Provider) LoadHistory(ctx context.Context, key string) (jobrecord.Stored, map[int]string, error) {
	if err := ctx.Err(); err != nil {
		return jobrecord.Stored{}, nil, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	st, err := p.loadRecord(key, now)
	if err != nil || !st.Found {
		return st, nil, err
	}
	entries := make(map[int]string)
	for i := range jobrecord.JobHistoryLen {
		if e, ok := p.live(historyKey(key, i), now); ok {
			entries[i] = e.value
		}
	}
	return st, entries, nil
}
