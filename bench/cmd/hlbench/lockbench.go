package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostloom/hostloom/bench/internal/locks"
	"github.com/hostloom/hostloom/bench/internal/redisproc"
	"github.com/redis/go-redis/v9"
)

// lockRun is one timed run of one implementation at one concurrency.
type lockRun struct {
	Ops       int
	P50, P99  time.Duration
	OpsPerSec float64
	Allocs    float64 // heap allocations per op, whole process
	Bytes     float64
	Commands  float64 // Redis commands per op (INFO commandstats, script-internal included)
	ServerUs  float64 // redis-server CPU per op, µs (INFO cpu: user + sys)
	Failed    int     // round trips that returned an error (not in the latencies)
}

// lockResult is the median over the repeats.
type lockResult struct {
	Name      string
	Conc      int
	Runs      []lockRun
	P50, P99  time.Duration
	OpsPerSec float64
	Allocs    float64
	Bytes     float64
	Commands  float64
	ServerUs  float64
	Failed    int // over all repeats
	Attempts  int // over all repeats
	// Spread of the repeats.
	P50Min, P50Max time.Duration
	OpsMin, OpsMax float64
}

// refusedResult is the cost of one refused acquire.
type refusedResult struct {
	Name       string
	Ops        int
	P50        time.Duration
	Allocs     float64
	Commands   float64 // Redis commands per refused acquire, from INFO commandstats (script-internal ones included)
	RoundTrips float64 // requests written per refused acquire
	PerCmd     map[string]float64
}

// runLocks measures every implementation's acquire+release round trip at
// each concurrency, the implementations interleaved within each repeat.
func runLocks(ctx context.Context, cfg config, addr string, admin *redis.Client) ([]lockResult, error) {
	impls := map[string]locks.Locker{}
	for _, n := range locks.Names {
		l, err := locks.New(n, addr, nil)
		if err != nil {
			return nil, err
		}
		defer l.Close()
		impls[n] = l
	}
	// Warm up: connections, script caches, rueidislock's tracking.
	for _, n := range locks.Names {
		if _, err := lockRunOnce(ctx, admin, impls[n], 64, cfg.lockWarm, fmt.Sprintf("warm:%s", n)); err != nil {
			return nil, fmt.Errorf("warm up %s: %w", n, err)
		}
	}
	results := map[string]*lockResult{}
	for _, conc := range []int{1, 64} {
		for _, n := range locks.Names {
			results[fmt.Sprintf("%s/%d", n, conc)] = &lockResult{Name: n, Conc: conc}
		}
	}
	for r := range cfg.lockRepeats {
		order := rand.Perm(len(locks.Names))
		for _, conc := range []int{1, 64} {
			for _, i := range order {
				n := locks.Names[i]
				run, err := lockRunOnce(ctx, admin, impls[n], conc, cfg.lockTime, fmt.Sprintf("rt:%s:%d", n, r))
				if err != nil {
					return nil, fmt.Errorf("%s at %d goroutines: %w", n, conc, err)
				}
				res := results[fmt.Sprintf("%s/%d", n, conc)]
				res.Runs = append(res.Runs, run)
				logf("lock %-14s c=%-2d rep %d: p50 %s p99 %s %.0f ops/s %.1f allocs/op %.2f commands/op %.1f Redis CPU µs/op", n, conc, r+1, fmtDur(run.P50), fmtDur(run.P99), run.OpsPerSec, run.Allocs, run.Commands, run.ServerUs)
			}
		}
	}
	var out []lockResult
	for _, conc := range []int{1, 64} {
		for _, n := range locks.Names {
			res := results[fmt.Sprintf("%s/%d", n, conc)]
			var p50, p99 []time.Duration
			var ops, allocs, bytes, cmds, cpu []float64
			for _, r := range res.Runs {
				p50 = append(p50, r.P50)
				p99 = append(p99, r.P99)
				ops = append(ops, r.OpsPerSec)
				allocs = append(allocs, r.Allocs)
				bytes = append(bytes, r.Bytes)
				cmds = append(cmds, r.Commands)
				cpu = append(cpu, r.ServerUs)
				res.Failed += r.Failed
				res.Attempts += r.Ops + r.Failed
			}
			res.Commands, res.ServerUs = median(cmds), median(cpu)
			res.P50, res.P99 = medianDur(p50), medianDur(p99)
			res.P50Min, res.P50Max = slices.Min(p50), slices.Max(p50)
			res.OpsMin, res.OpsMax = slices.Min(ops), slices.Max(ops)
			res.OpsPerSec, res.Allocs, res.Bytes = median(ops), median(allocs), median(bytes)
			out = append(out, *res)
		}
	}
	return out, nil
}

// lockRunOnce runs conc goroutines, each on its own key, for d.
func lockRunOnce(ctx context.Context, admin *redis.Client, l locks.Locker, conc int, d time.Duration, prefix string) (lockRun, error) {
	const maxPer = 1 << 17
	per := maxPer
	if conc > 1 {
		per = 1 << 13
	}
	lat := make([][]time.Duration, conc)
	for i := range lat {
		lat[i] = make([]time.Duration, 0, per)
	}
	errs := make([]error, conc) // first error of each goroutine
	fails := make([]int, conc)
	cmd0, err := redisproc.CommandStats(ctx, admin)
	if err != nil {
		return lockRun{}, err
	}
	cpu0, err := redisCPU(ctx, admin)
	if err != nil {
		return lockRun{}, err
	}
	var wg sync.WaitGroup
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	deadline := start.Add(d)
	for g := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("%s:%d", prefix, g)
			buf := lat[g]
			for len(buf) < cap(buf) {
				t0 := time.Now()
				if t0.After(deadline) {
					break
				}
				if err := l.RoundTrip(ctx, key); err != nil {
					// A library may give up under load: count it, go on.
					if errs[g] == nil {
						errs[g] = err
					}
					if fails[g]++; fails[g] > 1000 {
						break
					}
					continue
				}
				buf = append(buf, time.Since(t0))
			}
			lat[g] = buf
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&ms1)
	cpu1, err := redisCPU(ctx, admin)
	if err != nil {
		return lockRun{}, err
	}
	cmd1, err := redisproc.CommandStats(ctx, admin)
	if err != nil {
		return lockRun{}, err
	}
	_, cmds := redisproc.Delta(cmd0, cmd1)
	var all []time.Duration
	failed := 0
	var firstErr error
	for g := range conc {
		all = append(all, lat[g]...)
		failed += fails[g]
		if firstErr == nil {
			firstErr = errs[g]
		}
	}
	if failed*2 > len(all)+failed {
		return lockRun{}, fmt.Errorf("%d of %d round trips failed, first: %w", failed, len(all)+failed, firstErr)
	}
	if failed > 0 {
		logf("lock %s: %d of %d round trips failed, first: %v", l.Name(), failed, len(all)+failed, firstErr)
	}
	s := summarize(all)
	n := float64(len(all))
	return lockRun{
		Ops:       len(all),
		P50:       s.P50,
		P99:       s.P99,
		OpsPerSec: n / elapsed.Seconds(),
		Allocs:    float64(ms1.Mallocs-ms0.Mallocs) / n,
		Bytes:     float64(ms1.TotalAlloc-ms0.TotalAlloc) / n,
		Commands:  float64(cmds) / n,
		ServerUs:  (cpu1 - cpu0) * 1e6 / n,
		Failed:    failed,
	}, nil
}

// runRefused measures one refused acquire per implementation: a key held
// by another owner, attempted sequentially.
func runRefused(ctx context.Context, cfg config, addr string, admin *redis.Client) ([]refusedResult, error) {
	var out []refusedResult
	for _, n := range locks.Names {
		var writes atomic.Int64
		l, err := locks.New(n, addr, &writes)
		if err != nil {
			return nil, err
		}
		res, err := refusedOne(ctx, cfg, l, admin, &writes)
		_ = l.Close()
		if err != nil {
			return nil, fmt.Errorf("refused %s: %w", n, err)
		}
		logf("refused %-14s p50 %s %.1f allocs/op %.2f round trips/op %.2f commands/op %v", n, fmtDur(res.P50), res.Allocs, res.RoundTrips, res.Commands, res.PerCmd)
		out = append(out, res)
	}
	return out, nil
}

func refusedOne(ctx context.Context, cfg config, l locks.Locker, admin *redis.Client, writes *atomic.Int64) (refusedResult, error) {
	key := "refused:" + l.Name()
	keys, err := locks.HeldKey(l, key)
	if err != nil {
		return refusedResult{}, err
	}
	for _, k := range keys {
		if err := admin.Set(ctx, k, "someone-else", time.Hour).Err(); err != nil {
			return refusedResult{}, err
		}
	}
	defer admin.Del(context.Background(), keys...)
	for range 50 { // warm up
		if err := l.Refused(ctx, key); err != nil {
			return refusedResult{}, err
		}
	}
	lat := make([]time.Duration, 0, cfg.refusedOps)
	before, err := redisproc.CommandStats(ctx, admin)
	if err != nil {
		return refusedResult{}, err
	}
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	w0 := writes.Load()
	for range cfg.refusedOps {
		t0 := time.Now()
		if err := l.Refused(ctx, key); err != nil {
			return refusedResult{}, err
		}
		lat = append(lat, time.Since(t0))
	}
	w1 := writes.Load()
	runtime.ReadMemStats(&ms1)
	after, err := redisproc.CommandStats(ctx, admin)
	if err != nil {
		return refusedResult{}, err
	}
	delta, total := redisproc.Delta(before, after)
	n := float64(cfg.refusedOps)
	per := map[string]float64{}
	for k, v := range delta {
		per[k] = float64(v) / n
	}
	return refusedResult{
		Name:       l.Name(),
		Ops:        cfg.refusedOps,
		P50:        summarize(lat).P50,
		Allocs:     float64(ms1.Mallocs-ms0.Mallocs) / n,
		Commands:   float64(total) / n,
		RoundTrips: float64(w1-w0) / n,
		PerCmd:     per,
	}, nil
}
