package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
)

// item is a small non-pointer payload of 32 bytes; the blank fields only
// give it its size.
type item struct {
	id int64
	_  float64
	_  [16]byte
}

// chanResult is one channel benchmark, median over the repeats.
type chanResult struct {
	Name    string
	NsPerOp float64
	Allocs  float64
	Bytes   float64
	Runs    int
}

const chanCapacity = 1024

// runChannel compares a leader's LeaderChannel Write+Read (and
// TryWrite+Read) with a plain buffered channel's send+receive, in one
// goroutine, with testing.Benchmark.
func runChannel(cfg config) ([]chanResult, error) {
	ctx := context.Background()
	newLeader := func() (*leadership.Channel[item], error) {
		fake := leadershiptest.NewFake("bench")
		fake.SetLeader(true)
		o := leadership.DefaultChannelOptions()
		o.Capacity = chanCapacity
		return leadership.NewChannel[item]("bench", fake, o)
	}
	var failure error
	benches := []struct {
		name string
		fn   func(b *testing.B)
	}{
		{"plain chan send+receive", func(b *testing.B) {
			ch := make(chan item, chanCapacity)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				ch <- item{id: int64(i)}
				<-ch
			}
		}},
		{"LeaderChannel Write+Read (leader)", func(b *testing.B) {
			c, err := newLeader()
			if err != nil {
				failure = err
				return
			}
			defer c.Close()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := c.Write(ctx, item{id: int64(i)}); err != nil {
					failure = err
					return
				}
				if _, err := c.Read(ctx); err != nil {
					failure = err
					return
				}
			}
		}},
		{"LeaderChannel TryWrite+Read (leader)", func(b *testing.B) {
			c, err := newLeader()
			if err != nil {
				failure = err
				return
			}
			defer c.Close()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if !c.TryWrite(item{id: int64(i)}) {
					failure = fmt.Errorf("TryWrite refused on an empty leader channel")
					return
				}
				if _, err := c.Read(ctx); err != nil {
					failure = err
					return
				}
			}
		}},
	}
	var out []chanResult
	for _, bm := range benches {
		var ns, allocs, bytes []float64
		for range cfg.repeats {
			r := testing.Benchmark(bm.fn)
			if failure != nil {
				return nil, fmt.Errorf("%s: %w", bm.name, failure)
			}
			if r.N == 0 {
				return nil, fmt.Errorf("%s: benchmark did not run", bm.name)
			}
			ns = append(ns, float64(r.T.Nanoseconds())/float64(r.N))
			allocs = append(allocs, float64(r.MemAllocs)/float64(r.N))
			bytes = append(bytes, float64(r.MemBytes)/float64(r.N))
		}
		res := chanResult{Name: bm.name, NsPerOp: median(ns), Allocs: median(allocs), Bytes: median(bytes), Runs: cfg.repeats}
		logf("channel %-40s %.1f ns/op %.2f allocs/op", res.Name, res.NsPerOp, res.Allocs)
		out = append(out, res)
	}
	return out, nil
}
