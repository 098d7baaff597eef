package leadershipfx

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// reader is the Work Go attaches.
type reader struct {
	name string
	fn   func(context.Context)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	since  time.Time
}

func (rd *reader) Start(context.Context) error {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.done != nil {
		return fmt.Errorf("leadershipfx: reader %q started twice", rd.name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rd.cancel, rd.done, rd.since = cancel, make(chan struct{}), time.Now()
	go func() {
		defer close(rd.done)
		rd.fn(ctx)
	}()
	return nil
}

func (rd *reader) Stop(ctx context.Context) error {
	rd.mu.Lock()
	cancel, done := rd.cancel, rd.done
	rd.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (rd *reader) Running() []Activity {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.done == nil {
		return nil
	}
	select {
	case <-rd.done:
		return nil
	default:
		return []Activity{{Kind: "reader", Name: rd.name, Since: rd.since}}
	}
}
