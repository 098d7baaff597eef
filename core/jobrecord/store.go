package jobrecord

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Stored is a job's record as a RecordStore read it.
type Stored struct {
	// Found is false when nothing is stored under the key (or it
	// expired); Fields is then empty.
	Found bool
	// Fields is the record as named fields (see Record.Fields). A store
	// keeps them as it likes: a hash's fields, columns, JSON.
	Fields map[string]string
	// Version identifies what was read, for SwapRecord: a counter, a
	// revision, or 0 for a store that compares Fields instead.
	Version int64
	// Now is the store's clock at the read. Holds and waits are measured
	// on it, so the clocks of the processes that claim do not matter.
	Now time.Time
	// TTL is the record's remaining time to live; 0 when nothing is
	// stored.
	TTL time.Duration
	// Token is anything else the store needs back in SwapRecord about
	// what it read (such as the lease the record is attached to); the
	// caller passes it through untouched.
	Token any
}

// Write is what SwapRecord stores.
type Write struct {
	// Fields replace the record's fields whole: a field left out is
	// removed.
	Fields map[string]string
	// Entry, when HasEntry, is written at ring index Index of the key's
	// history ring (0 ≤ Index < JobHistoryLen), with the record, in the
	// same atomic step.
	HasEntry bool
	Index    int
	Entry    string
	// TTL is the time to live of the record and of its ring from this
	// write (at least a millisecond).
	TTL time.Duration
}

// RecordStore is what a provider implements to keep the scheduler's job
// records (V1): one versioned record per key, written only if unchanged
// since it was read, with a time to live, and a ring of JobHistoryLen
// history entries per key that expires with it. It decides nothing;
// Store decides with Claim, Complete and Pause. Keys are provider keys.
type RecordStore interface {
	// LoadRecord reads key's record in one round trip.
	LoadRecord(ctx context.Context, key string) (Stored, error)
	// SwapRecord writes w as key's record when the record is unchanged
	// since from was read (by from.Version or from.Fields), in one atomic
	// step with w's history entry, and refreshes the time to live of the
	// record and its ring to w.TTL. It reports false, writing nothing,
	// when the record changed (then the caller reads again).
	SwapRecord(ctx context.Context, key string, from Stored, w Write) (bool, error)
	// LoadHistory reads key's record and its history entries by ring
	// index (entries never written are absent).
	LoadHistory(ctx context.Context, key string) (Stored, map[int]string, error)
}

// maxSwaps bounds the read-decide-write rounds of one operation that
// keeps losing to concurrent writers.
const maxSwaps = 20

// ErrConflict is returned by Store when an operation lost to concurrent
// writers of the same record maxSwaps times in a row.
var ErrConflict = errors.New("jobrecord: record changed by concurrent writers")

// Store implements Jobs over a provider's RecordStore and State: every
// operation reads the record, decides with this package's rules and
// swaps the record back, reading again when another writer came first.
type Store struct {
	rs RecordStore
	st State
}

var _ Jobs = (*Store)(nil)

// NewStore returns the job records kept in rs, with the slot state of st.
func NewStore(rs RecordStore, st State) *Store {
	return &Store{rs: rs, st: st}
}

// Advance implements State (L8) with the provider's own State.
func (s *Store) Advance(ctx context.Context, key string, value int64) (bool, int64, error) {
	return s.st.Advance(ctx, key, value)
}

// State implements State (L8) with the provider's own State.
func (s *Store) State(ctx context.Context, key string) (int64, bool, error) {
	return s.st.State(ctx, key)
}

// load reads and decodes key's record.
func (s *Store) load(ctx context.Context, key string) (Stored, Record, error) {
	st, err := s.rs.LoadRecord(ctx, key)
	if err != nil {
		return Stored{}, Record{}, err
	}
	r, err := Decode(st.Fields)
	if err != nil {
		return Stored{}, Record{}, fmt.Errorf("job %q: %w", key, err)
	}
	return st, r, nil
}

// apply runs decide over key's record until its change is written (or
// needs no write).
func (s *Store) apply(ctx context.Context, key string, ttl time.Duration, decide func(st Stored, r Record) Change) error {
	for range maxSwaps {
		st, r, err := s.load(ctx, key)
		if err != nil {
			return err
		}
		ch := decide(st, r)
		if !ch.Write {
			return nil
		}
		w := Write{Fields: ch.Record.Fields(), TTL: ttl}
		if ch.Entry > 0 {
			w.HasEntry, w.Index, w.Entry = true, RingIndex(ch.Entry), ch.Value
		}
		ok, err := s.rs.SwapRecord(ctx, key, st, w)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return fmt.Errorf("job %q: %w %d times", key, ErrConflict, maxSwaps)
}

// ClaimSlot implements Jobs (see Claim).
func (s *Store) ClaimSlot(ctx context.Context, key string, c SlotClaim) (SlotClaimResult, error) {
	var res SlotClaimResult
	err := s.apply(ctx, key, c.TTL, func(st Stored, r Record) Change {
		var ch Change
		res, ch = Claim(r, st.Now, c)
		return ch
	})
	if err != nil {
		return SlotClaimResult{}, err
	}
	return res, nil
}

// CompleteSlot implements Jobs (see Complete).
func (s *Store) CompleteSlot(ctx context.Context, key string, c SlotCompletion) (bool, error) {
	var matched bool
	err := s.apply(ctx, key, c.TTL, func(st Stored, r Record) Change {
		var ch Change
		matched, ch = Complete(r, st.Found, c)
		return ch
	})
	return matched, err
}

// SetJobPaused implements Jobs (see Pause).
func (s *Store) SetJobPaused(ctx context.Context, key string, paused bool, ttl time.Duration) error {
	return s.apply(ctx, key, ttl, func(st Stored, r Record) Change {
		return Pause(r, st.Found, paused)
	})
}

// JobStatus implements Jobs (see Status).
func (s *Store) JobStatus(ctx context.Context, key string) (JobStatus, error) {
	st, r, err := s.load(ctx, key)
	if err != nil || !st.Found {
		return JobStatus{}, err
	}
	return Status(r, st.TTL), nil
}

// JobHistory implements Jobs (see History).
func (s *Store) JobHistory(ctx context.Context, key string, n int) ([]string, error) {
	if n < 1 {
		return nil, fmt.Errorf("history %q: n %d must be positive", key, n)
	}
	st, entries, err := s.rs.LoadHistory(ctx, key)
	if err != nil {
		return nil, err
	}
	if !st.Found {
		return []string{}, nil
	}
	r, err := Decode(st.Fields)
	if err != nil {
		return nil, fmt.Errorf("job %q: %w", key, err)
	}
	out := []string{}
	for _, i := range History(r, n) {
		if e, ok := entries[i]; ok {
			out = append(out, e)
		}
	}
	return out, nil
}
