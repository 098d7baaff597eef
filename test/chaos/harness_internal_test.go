//go:build unix

package chaos

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestFaultOrder_SeededRoundsCoverEveryKind(t *testing.T) {
	draw := func(seed uint64, n int) []FaultKind {
		o := &faultOrder{rng: rand.New(rand.NewPCG(seed, 1)), kinds: StandaloneFaults}
		out := make([]FaultKind, n)
		for i := range out {
			out[i] = o.next()
		}
		return out
	}
	k := len(StandaloneFaults)
	a, b := draw(42, 3*k), draw(42, 3*k)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different schedules:\n%v\n%v", a, b)
	}
	if slices.Equal(a, draw(43, 3*k)) {
		t.Errorf("seeds 42 and 43 drew the same schedule %v", a)
	}
	for r := range 3 {
		round := slices.Clone(a[r*k : (r+1)*k])
		slices.Sort(round)
		want := slices.Clone(StandaloneFaults)
		slices.Sort(want)
		if !slices.Equal(round, want) {
			t.Errorf("round %d = %v, want every kind once", r, a[r*k:(r+1)*k])
		}
	}
}

func TestReplicaOf(t *testing.T) {
	tests := []struct {
		id   string
		want int
		ok   bool
	}{
		{"r0.1", 0, true}, {"r12.3", 12, true}, {"r3", 0, false}, {"x1.1", 0, false}, {"r.1", 0, false}, {"", 0, false},
	}
	for _, tt := range tests {
		got, ok := replicaOf(tt.id)
		if got != tt.want || ok != tt.ok {
			t.Errorf("replicaOf(%q) = %d, %v; want %d, %v", tt.id, got, ok, tt.want, tt.ok)
		}
	}
}
