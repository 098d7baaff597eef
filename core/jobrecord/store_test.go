package jobrecord_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/jobrecord"
)

// mapStore is a RecordStore in a map, for the Store's own loop: it can be
// told to lose the next swaps to a writer that came first. Providers are
// checked against their servers by lockingtest.RunJobStore.
type mapStore struct {
	fields  map[string]string
	version int64
	entries map[int]string
	lose    int // swaps still to lose
	swaps   int
}

func (m *mapStore) LoadRecord(context.Context, string) (jobrecord.Stored, error) {
	return jobrecord.Stored{Found: m.version > 0, Fields: maps.Clone(m.fields), Version: m.version, Now: now, TTL: time.Minute}, nil
}

func (m *mapStore) SwapRecord(_ context.Context, _ string, from jobrecord.Stored, w jobrecord.Write) (bool, error) {
	m.swaps++
	if m.lose > 0 {
		m.lose--
		m.version++ // another writer's
		return false, nil
	}
	if from.Version != m.version {
		return false, nil
	}
	m.fields, m.version = w.Fields, m.version+1
	if w.HasEntry {
		m.entries[w.Index] = w.Entry
	}
	return true, nil
}

func (m *mapStore) LoadHistory(ctx context.Context, key string) (jobrecord.Stored, map[int]string, error) {
	st, _ := m.LoadRecord(ctx, key)
	return st, maps.Clone(m.entries), nil
}

func (m *mapStore) Advance(context.Context, string, int64) (bool, int64, error) { return false, 0, nil }
func (m *mapStore) State(context.Context, string) (int64, bool, error)          { return 0, false, nil }

func newMapStore() *mapStore { return &mapStore{entries: map[int]string{}} }

// TestStore_V1_ReadsAgainAfterALostSwap: a swap that lost to another
// writer is decided again over what that writer left.
func TestStore_V1_ReadsAgainAfterALostSwap(t *testing.T) {
	ctx := context.Background()
	m := newMapStore()
	s := jobrecord.NewStore(m, m)
	m.lose = 2
	r, err := s.ClaimSlot(ctx, "k", jobrecord.SlotClaim{Slot: 5, Attempt: 1, Term: "t", Record: "r1", TTL: time.Hour})
	if err != nil || r.Status != jobrecord.ClaimGranted || m.swaps != 3 {
		t.Fatalf("claim = %+v, %v after %d swaps; want granted after 3", r, err, m.swaps)
	}
	if h, err := s.JobHistory(ctx, "k", 10); err != nil || len(h) != 1 || h[0] != "r1" {
		t.Errorf("history = %v, %v; want [r1]", h, err)
	}
	if st, err := s.JobStatus(ctx, "k"); err != nil || st.Slot != 5 || !st.Running || st.TTL != time.Minute {
		t.Errorf("status = %+v, %v", st, err)
	}
}

// TestStore_V1_GivesUpAfterRepeatedConflicts: an operation that keeps
// losing ends with ErrConflict naming the key instead of looping.
func TestStore_V1_GivesUpAfterRepeatedConflicts(t *testing.T) {
	m := newMapStore()
	m.lose = 1000
	err := jobrecord.NewStore(m, m).SetJobPaused(context.Background(), "k", true, time.Hour)
	if !errors.Is(err, jobrecord.ErrConflict) || !strings.Contains(err.Error(), `"k"`) {
		t.Errorf("pause = %v, want ErrConflict naming the key", err)
	}
}

// TestStore_V1_CorruptRecordsAreErrors: a record that does not decode is
// an error naming the key and the field, never a decision.
func TestStore_V1_CorruptRecordsAreErrors(t *testing.T) {
	m := newMapStore()
	m.fields, m.version = map[string]string{"seq": "many"}, 1
	s := jobrecord.NewStore(m, m)
	ctx := context.Background()
	if _, err := s.ClaimSlot(ctx, "k", jobrecord.SlotClaim{Slot: 1, Attempt: 1, Term: "t", TTL: time.Hour}); err == nil || !strings.Contains(err.Error(), `"k"`) || !strings.Contains(err.Error(), "seq") {
		t.Errorf("claim = %v, want an error naming the key and the field", err)
	}
	if _, err := s.JobHistory(ctx, "k", 1); err == nil {
		t.Error("history over a corrupt record: no error")
	}
	if m.swaps != 0 {
		t.Errorf("%d swaps over a corrupt record, want none", m.swaps)
	}
}
