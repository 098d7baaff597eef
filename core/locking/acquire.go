package locking

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// acquirePoll is the longest Acquire waits between attempts when the
// provider neither publishes releases nor reports the holder's TTL.
const acquirePoll = 250 * time.Millisecond

// Held is a lock taken by Acquire: it extends itself every third of its
// lease until Release, until the lease is lost, or until it has been held
// for MaxHold (L6), after which it is left to expire.
//
// Done is closed when the lease ends: work guarded by the lock must stop
// when it is. Done alone does not exclude a late write: between the
// backend's expiry and Done there is a window of up to one extension
// period. Fence closes it where the store checks fences.
type Held struct {
	lease    Lease
	done     chan struct{}
	stop     chan struct{}
	stopped  chan struct{}
	once     sync.Once
	stopOnce sync.Once
	mu       sync.Mutex
	err      error
}

// Acquire waits until key can be taken for lease, then returns a Held lock
// that extends itself. It waits on release notifications when the provider
// publishes them, on the holder's remaining TTL otherwise, and ends with
// ctx's error when ctx ends first. Errors other than a held key (invalid
// key or lease, provider failures) are returned at once.
func (l *DistributedLock) Acquire(ctx context.Context, key string, lease time.Duration) (*Held, error) {
	// Released wakes the wait at once when the provider publishes events;
	// without them (or when subscribing fails) the loop polls.
	var released chan struct{}
	if l.events != nil && !l.o.Disabled {
		ch := make(chan struct{}, 1)
		if stop, err := l.Subscribe(key, func(e Event) {
			if e.Kind == EventReleased {
				select {
				case ch <- struct{}{}:
				default: // coalesced
				}
			}
		}); err == nil {
			defer stop()
			released = ch
		}
	}
	for {
		sent := time.Now()
		ls, err := l.TryAcquire(ctx, key, lease)
		if err == nil {
			return l.hold(ls, sent), nil
		}
		var held *HeldError
		if !errors.As(err, &held) {
			return nil, err
		}
		wait := acquirePoll
		if held.Remaining > 0 && held.Remaining < wait {
			wait = held.Remaining + time.Millisecond
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("locking: acquire %q: %w", key, ctx.Err())
		case <-released:
		case <-t.C:
		}
		t.Stop()
	}
}

// hold starts extending ls, granted by an acquisition sent at sent: its
// deadline runs from then, as an elector's does (E5), so a reply that came
// late does not lengthen it.
func (l *DistributedLock) hold(ls Lease, sent time.Time) *Held {
	h := &Held{
		lease:   ls,
		done:    make(chan struct{}),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	granted := l.o.MaxLease
	if g, ok := ls.(GrantedLease); ok {
		granted = g.Granted()
	}
	go h.extend(sent, granted, l.o.MaxHold)
	return h
}

// extend renews the lease every third of it until stopped, lost, or MaxHold.
// start is when the acquisition was sent.
func (h *Held) extend(start time.Time, granted, maxHold time.Duration) {
	defer close(h.stopped)
	deadline := start.Add(granted)
	every := max(granted/3, time.Millisecond)
	t := time.NewTimer(max(time.Until(start.Add(every)), time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		if !now.Before(deadline) {
			// No extension landed in time (the server was slow or away):
			// the lease ran out before MaxHold.
			h.end(fmt.Errorf("locking: %q: %w (not extended before the lease ran out)", h.lease.Key(), ErrLeaseLost))
			return
		}
		if now.Sub(start) >= maxHold {
			// Stop extending; the lease runs out at deadline.
			wait := time.Until(deadline)
			if wait > 0 {
				t.Reset(wait)
				select {
				case <-h.stop:
					return
				case <-t.C:
				}
			}
			h.end(fmt.Errorf("locking: %q: %w (held past Options.MaxHold %v)", h.lease.Key(), ErrLeaseLost, maxHold))
			return
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		sent := time.Now()
		err := h.lease.Extend(ctx, granted)
		cancel()
		switch {
		case err == nil:
			deadline = sent.Add(granted)
		case errors.Is(err, ErrLeaseLost):
			h.end(err)
			return
		}
		// A transport error keeps the old deadline: the next attempt comes
		// sooner, never past the deadline.
		t.Reset(max(min(every, time.Until(deadline)/2), time.Millisecond))
	}
}

func (h *Held) end(err error) {
	h.mu.Lock()
	h.err = err
	h.mu.Unlock()
	h.once.Do(func() { close(h.done) })
}

// Key is the consumer key.
func (h *Held) Key() string { return h.lease.Key() }

// Fence is the fencing token issued when the lock was taken (G1), kept by
// every automatic extension; 0 when the provider issues none (a disabled
// lock, or a provider without fences). Pass it with every write guarded by
// the lock to a store that refuses stale fences (core/fencing): a write
// from a holder that lost the lock then cannot land after its successor's.
func (h *Held) Fence() uint64 {
	if f, ok := h.lease.(Fenced); ok {
		return f.Fence()
	}
	return 0
}

// Done is closed when the lease ends: lost, expired, or released.
func (h *Held) Done() <-chan struct{} { return h.done }

// Err reports why Done was closed, or nil.
func (h *Held) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Release stops automatic extension, waits for it to end, and releases the
// lease. It is idempotent: later calls return nil. When the lease was lost
// before, Release returns the loss (Err) and touches nothing.
func (h *Held) Release(ctx context.Context) error {
	h.stopOnce.Do(func() { close(h.stop) })
	<-h.stopped
	first := false
	h.once.Do(func() {
		first = true
		close(h.done)
	})
	if !first {
		return h.Err()
	}
	return h.lease.Release(ctx)
}
