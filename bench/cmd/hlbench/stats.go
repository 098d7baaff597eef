package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/hostloom/hostloom/bench/internal/stats"
)

// summary is the p50/p99/max of a sample.
type summary struct {
	N             int
	P50, P99, Max time.Duration
	Mean          time.Duration
}

func summarize(ds []time.Duration) summary {
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	out := summary{N: len(s), P50: stats.Quantile(s, 0.50), P99: stats.Quantile(s, 0.99)}
	if len(s) > 0 {
		out.Max = s[len(s)-1]
		out.Mean = sum / time.Duration(len(s))
	}
	return out
}

// median of float64s.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianDur(v []time.Duration) time.Duration {
	f := make([]float64, len(v))
	for i, d := range v {
		f[i] = float64(d)
	}
	return time.Duration(median(f))
}

// fmtDur prints a duration with three significant digits.
func fmtDur(d time.Duration) string {
	if d < 0 {
		return "−" + fmtDur(-d)
	}
	switch {
	case d == 0:
		return "0"
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.3fs", d.Seconds())
	}
}

// ratio prints a/b as "1.23×".
func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	r := a / b
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f×", r)
	case r >= 10:
		return fmt.Sprintf("%.1f×", r)
	default:
		return fmt.Sprintf("%.2f×", r)
	}
}

func mark(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**MISSED**"
}
