package leadership

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// GoWork returns a Work that runs fn on a goroutine of its own from Start
// until Stop cancels fn's ctx (H3): a leader channel's reader, a loop that
// does leader-only work while its role leads. While fn runs the Work
// reports one Activity of kind and name, so a leave that waits too long
// for it names it (O2). fn must return when ctx ends; Stop waits for it.
// A second Start fails; a Stop before Start returns at once. fn's ctx is
// not derived from Start's, which bounds starting only.
func GoWork(kind, name string, fn func(ctx context.Context)) Work {
	return &goWork{kind: kind, name: name, fn: fn}
}

// goWork is the Work GoWork returns.
type goWork struct {
	kind, name string
	fn         func(context.Context)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{} // closed when fn returned; nil before Start
	since  time.Time
}

// Start runs fn on a goroutine of its own.
func (w *goWork) Start(context.Context) error {
	if w.fn == nil {
		return fmt.Errorf("leadership: %s %q: nil func", w.kind, w.name)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done != nil {
		return fmt.Errorf("leadership: %s %q started twice", w.kind, w.name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done, w.since = cancel, make(chan struct{}), time.Now()
	go func(done chan struct{}) {
		defer close(done)
		w.fn(ctx)
	}(w.done)
	return nil
}

// Stop cancels fn's ctx and waits for fn to return, or for ctx.
func (w *goWork) Stop(ctx context.Context) error {
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
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

// Running reports fn while it runs.
func (w *goWork) Running() []Activity {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done == nil {
		return nil
	}
	select {
	case <-w.done:
		return nil
	default:
		return []Activity{{Kind: w.kind, Name: w.name, Since: w.since}}
	}
}
