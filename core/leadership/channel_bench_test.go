package leadership_test

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// chanBenchItem is a non-pointer payload of a realistic size.
type chanBenchItem struct {
	id int64
	_  float64  // value
	_  [16]byte // kind
}

// BenchmarkChannel compares a leader's Write+Read with a plain buffered Go
// channel's send+receive, in one goroutine (uncontended) and with one
// producer and one reader goroutine, and measures a follower's discarded
// write.
func BenchmarkChannel(b *testing.B) {
	const capacity = 1024
	ctx := context.Background()
	newLeader := func(b *testing.B) *leadership.Channel[chanBenchItem] {
		fake := leadershiptest.NewFake("bench")
		fake.SetLeader(true)
		o := leadership.DefaultChannelOptions()
		o.Capacity = capacity
		c, err := leadership.NewChannel[chanBenchItem]("bench", fake, o)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		return c
	}

	b.Run("WriteRead/leader", func(b *testing.B) {
		c := newLeader(b)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := c.Write(ctx, chanBenchItem{id: int64(i)}); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Read(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("WriteRead/leader-elector", func(b *testing.B) {
		lock, err := memlock.NewLock(locking.DefaultOptions())
		if err != nil {
			b.Fatal(err)
		}
		e, err := leadership.NewElector("bench", lock, leadership.DefaultOptions())
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Start(ctx); err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := e.Stop(ctx); err != nil {
				b.Error(err)
			}
		}()
		o := leadership.DefaultChannelOptions()
		o.Capacity = capacity
		c, err := leadership.NewChannel[chanBenchItem]("bench", e, o)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		// Admission starts once the elector has notified the channel.
		for !c.TryWrite(chanBenchItem{}) || c.Len() == 0 {
			runtime.Gosched()
		}
		if _, err := c.Read(ctx); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := c.Write(ctx, chanBenchItem{id: int64(i)}); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Read(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("WriteRead/plain", func(b *testing.B) {
		ch := make(chan chanBenchItem, capacity)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			ch <- chanBenchItem{id: int64(i)}
			<-ch
		}
	})
	b.Run("ProducerReader/leader", func(b *testing.B) {
		c := newLeader(b)
		b.ReportAllocs()
		b.ResetTimer()
		var wg sync.WaitGroup
		wg.Go(func() {
			for range b.N {
				if _, err := c.Read(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
		for i := range b.N {
			if err := c.Write(ctx, chanBenchItem{id: int64(i)}); err != nil {
				b.Fatal(err)
			}
		}
		wg.Wait()
	})
	b.Run("ProducerReader/plain", func(b *testing.B) {
		ch := make(chan chanBenchItem, capacity)
		b.ReportAllocs()
		b.ResetTimer()
		var wg sync.WaitGroup
		wg.Go(func() {
			for range b.N {
				<-ch
			}
		})
		for i := range b.N {
			ch <- chanBenchItem{id: int64(i)}
		}
		wg.Wait()
	})
	b.Run("Write/follower", func(b *testing.B) {
		fake := leadershiptest.NewFake("bench")
		o := leadership.DefaultChannelOptions()
		o.DropReportInterval = 1 << 62 // no summary inside the loop
		c, err := leadership.NewChannel[chanBenchItem]("bench", fake, o)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := c.Write(ctx, chanBenchItem{id: int64(i)}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
