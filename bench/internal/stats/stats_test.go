package stats

import (
	"testing"
	"time"
)

func TestQuantile_NearestRank(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	thirty := hundred[:30]
	for _, c := range []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"none", nil, 0.5, 0},
		{"one", []time.Duration{7}, 0.99, 7},
		{"p50 of 100", hundred, 0.50, 50 * time.Millisecond},
		{"p99 of 100 is the 99th", hundred, 0.99, 99 * time.Millisecond},
		{"p99 of 30 is the largest", thirty, 0.99, 30 * time.Millisecond},
		{"p0 is the smallest", hundred, 0, time.Millisecond},
		{"p100 is the largest", hundred, 1, 100 * time.Millisecond},
	} {
		if got := Quantile(c.sorted, c.q); got != c.want {
			t.Errorf("%s: Quantile(q=%v) = %v, want %v", c.name, c.q, got, c.want)
		}
	}
}
