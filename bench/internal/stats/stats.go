// Package stats holds the benchmark harness's sample arithmetic, so that
// hlbench and the probes under cmd/ report percentiles the same way.
package stats

import "time"

// Quantile returns the q-quantile (0..1) of sorted durations by nearest
// rank: for 100 samples the p99 is the 99th, for 30 it is the largest. It
// returns 0 for no samples.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}
