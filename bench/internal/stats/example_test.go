package stats_test

import (
	"fmt"
	"time"

	"github.com/hostloom/hostloom/bench/internal/stats"
)

func ExampleQuantile() {
	sorted := []time.Duration{1 * time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 40 * time.Millisecond}
	fmt.Println(stats.Quantile(sorted, 0.5), stats.Quantile(sorted, 0.99))
	// Output: 2ms 40ms
}
