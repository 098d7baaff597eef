package scheduling_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// meter is a manual OpenTelemetry reader and its provider.
type meter struct {
	reader   *sdkmetric.ManualReader
	provider *sdkmetric.MeterProvider
}

func newMeter() meter {
	r := sdkmetric.NewManualReader()
	return meter{reader: r, provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))}
}

func (m meter) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// dataOf collects m and returns the data of every metric called name,
// failing the test when one is not a D.
func dataOf[D metricdata.Aggregation](t *testing.T, m meter, name string) []D {
	t.Helper()
	var out []D
	for _, sm := range m.collect(t).ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != name {
				continue
			}
			d, ok := mt.Data.(D)
			if !ok {
				t.Fatalf("%s is %T", name, mt.Data)
			}
			out = append(out, d)
		}
	}
	return out
}

// sum adds up the points of the int64 counter name whose attributes
// include every key=value of want.
func (m meter) sum(t *testing.T, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	var n int64
	for _, s := range dataOf[metricdata.Sum[int64]](t, m, name) {
		for _, p := range s.DataPoints {
			if matches(p.Attributes, want) {
				n += p.Value
			}
		}
	}
	return n
}

func matches(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		v, ok := set.Value(kv.Key)
		if !ok || v != kv.Value {
			return false
		}
	}
	return true
}

func job(name string) attribute.KeyValue  { return attribute.String("job", name) }
func reason(r string) attribute.KeyValue  { return attribute.String("reason", r) }
func outcome(o string) attribute.KeyValue { return attribute.String("outcome", o) }

// interval is one recorded run.
type interval struct {
	replica    string
	start, end time.Time
	err        error
}

// recorder records runs from several replicas.
type recorder struct {
	mu   sync.Mutex
	runs []interval
}

// job returns a Run func for replica that records its interval and lasts
// d (or until its ctx ends).
func (r *recorder) job(replica string, d time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		iv := interval{replica: replica, start: time.Now()}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			iv.err = ctx.Err()
		}
		iv.end = time.Now()
		r.mu.Lock()
		r.runs = append(r.runs, iv)
		r.mu.Unlock()
		return iv.err
	}
}

func (r *recorder) snapshot() []interval {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]interval(nil), r.runs...)
}

// noOverlap fails when two recorded runs overlap in time.
func noOverlap(t *testing.T, runs []interval) {
	t.Helper()
	for i := range runs {
		for k := i + 1; k < len(runs); k++ {
			a, b := runs[i], runs[k]
			if a.start.Before(b.end) && b.start.Before(a.end) {
				t.Errorf("runs overlap: %s [%v, %v] and %s [%v, %v]", a.replica, a.start, a.end, b.replica, b.start, b.end)
			}
		}
	}
}

// newStore returns a slot store over a fresh memlock provider; call it
// inside the synctest bubble.
func newStore(t *testing.T) *locking.DistributedLock {
	t.Helper()
	l, err := memlock.NewLock(locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// newScheduler builds a scheduler over l and stops it at cleanup.
func newScheduler(t *testing.T, l leadership.Leadership, opts ...scheduling.Option) *scheduling.Scheduler {
	t.Helper()
	s, err := scheduling.New(l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return s
}

func mustAdd(t *testing.T, s *scheduling.Scheduler, j scheduling.Job) {
	t.Helper()
	if err := s.Add(j); err != nil {
		t.Fatal(err)
	}
}

func mustStart(t *testing.T, s *scheduling.Scheduler) {
	t.Helper()
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// newStoreNoBubble is newStore for tests that start no goroutine.
func newStoreNoBubble(t *testing.T) *locking.DistributedLock { return newStore(t) }

// stateStore hides everything of a store but StateStore: the scheduler's
// path for stores without job records.
type stateStore struct{ st slotstore.State }

func (s stateStore) Advance(ctx context.Context, key string, value int64) (bool, int64, error) {
	return s.st.Advance(ctx, key, value)
}

func (s stateStore) State(ctx context.Context, key string) (int64, bool, error) {
	return s.st.State(ctx, key)
}

// seedSlot records slot as started and finished in store's job records, as
// a run of another instance would have.
func seedSlot(t *testing.T, store slotstore.Jobs, key string, slot time.Time) {
	t.Helper()
	ctx := context.Background()
	r, err := store.ClaimSlot(ctx, key, slotstore.SlotClaim{Slot: slot.UnixMilli(), Attempt: 1, Term: "seed", TTL: time.Hour, Record: "{}"})
	if err != nil || r.Status != slotstore.ClaimGranted {
		t.Fatalf("seed claim: %+v %v", r, err)
	}
	if _, err := store.CompleteSlot(ctx, key, slotstore.SlotCompletion{Slot: slot.UnixMilli(), Attempt: 1, Term: "seed", Seq: r.Seq, Done: true, Record: "{}", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
}
