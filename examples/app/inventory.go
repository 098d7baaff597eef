package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
)

// inventoryChange is what the producers report.
type inventoryChange struct {
	SKU   string
	Delta int
	At    time.Time
}

// produceEvery is the producers' cadence.
const produceEvery = 200 * time.Millisecond

type inventoryParams struct {
	fx.In

	Lifecycle fx.Lifecycle
	Inventory leadership.Leadership `name:"inventory"`
	Config    config.LeaderChannelConfig
	Meters    metric.MeterProvider
	Log       *zap.Logger
}

// inventory feeds a leader channel from a producer that runs on every
// replica; the reader applies what reaches it, which is only the leader's
// items (C1).
type inventory struct {
	ch      *leadership.Channel[inventoryChange]
	l       leadership.Leadership
	log     *zap.Logger
	applied atomic.Int64
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// newInventory builds the channel over the inventory role. Its hooks come
// after the elector's (it depends on it), so on stop the producer and the
// reader end before the elector releases the lease (E11).
func newInventory(p inventoryParams) (*inventory, error) {
	ch, err := leadership.NewChannel[inventoryChange]("inventory-changes", p.Inventory, p.Config.Options(),
		leadership.WithLogger(p.Log), leadership.WithMeterProvider(p.Meters))
	if err != nil {
		return nil, err
	}
	inv := &inventory{ch: ch, l: p.Inventory, log: p.Log.With(zap.String("role", roleInventory))}
	p.Lifecycle.Append(fx.Hook{OnStart: inv.start, OnStop: inv.stop})
	return inv, nil
}

func (inv *inventory) start(context.Context) error {
	ctx, cancel := context.WithCancel(context.Background())
	inv.cancel = cancel
	inv.wg.Go(func() { inv.produce(ctx) })
	inv.wg.Go(func() { inv.consume(ctx) })
	return nil
}

func (inv *inventory) stop(ctx context.Context) error {
	if inv.cancel != nil {
		inv.cancel()
	}
	inv.ch.Close()
	done := make(chan struct{})
	go func() { inv.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("inventory: stop: %w", ctx.Err())
	}
}

// produce writes a change every produceEvery, on every replica. A
// follower's writes succeed and are discarded (counted as "follower").
func (inv *inventory) produce(ctx context.Context) {
	t := time.NewTicker(produceEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			c := inventoryChange{SKU: fmt.Sprintf("sku-%03d", rand.IntN(1000)), Delta: rand.IntN(11) - 5, At: now}
			if err := inv.ch.Write(ctx, c); err != nil && !errors.Is(err, leadership.ErrChannelClosed) && ctx.Err() == nil {
				inv.log.Warn("InventoryWriteFailed", zap.Error(err))
			}
		}
	}
}

// consume applies the changes that reach the reader. Admission is not
// fencing (C6): a change is applied only while the term it is read in
// lasts.
func (inv *inventory) consume(ctx context.Context) {
	for c := range inv.ch.All(ctx) {
		if inv.l.Token().Err() != nil {
			continue // leadership ended after the item was accepted
		}
		n := inv.applied.Add(1)
		if n%25 == 1 {
			inv.log.Info("InventoryApplied", zap.Int64("total", n), zap.String("last_sku", c.SKU), zap.Int("delta", c.Delta))
		}
	}
}
