package leadership

import "sync"

// inbox is a FIFO queue with a consumer that runs only while the queue is
// not empty: put queues an item and, when no consumer runs, starts a
// goroutine that calls handle for each item in order and ends when the
// queue is empty (run consumes on the caller's goroutine instead). So
// items are handled one at a time, in order, never on a goroutine that
// put them unless it asked to, and an empty inbox costs no goroutine. The
// elector's state machine (loop) and its notifier each consume one.
type inbox[T any] struct {
	handle func(T)
	// spawn starts the consumer; nil: on a goroutine of its own. A
	// Process's electors start theirs through a gate (see
	// processGates.machines).
	spawn func(func())

	mu      sync.Mutex
	items   []T
	running bool
	idle    chan struct{} // made by waitIdle while running; closed when the consumer ends
}

// put queues x and starts the consumer when none runs. It is safe from any
// goroutine, the consumer's own included.
func (b *inbox[T]) put(x T) {
	if !b.queue(x) {
		return
	}
	if b.spawn != nil {
		b.spawn(b.consume)
		return
	}
	go b.consume()
}

// run queues x and, when no consumer runs, consumes on the calling
// goroutine until the queue is empty, saving the hand-off to a new
// goroutine. Only a goroutine the elector owns and that holds no lock
// (a lock call's goroutine after the call returned, a timer's) may use
// it: the caller runs handle for every item queued meanwhile.
func (b *inbox[T]) run(x T) {
	if b.queue(x) {
		b.consume()
	}
}

// queueOnly queues x without starting a consumer: it is handled, in
// order, before the next item put or run (or by the consumer running
// now). For an item that changes nothing until the next one comes, it
// saves a goroutine per call.
func (b *inbox[T]) queueOnly(x T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.items = append(b.items, x)
}

// queue appends x and reports whether the caller became the consumer
// (none was running); the caller must then consume.
func (b *inbox[T]) queue(x T) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.items = append(b.items, x)
	if b.running {
		return false
	}
	b.running = true
	return true
}

// consume handles the queued items, one at a time, until none is left.
func (b *inbox[T]) consume() {
	var zero T
	for {
		b.mu.Lock()
		if len(b.items) == 0 {
			b.items = nil // do not keep the drained backing array
			b.running = false
			if b.idle != nil {
				close(b.idle)
				b.idle = nil
			}
			b.mu.Unlock()
			return
		}
		x := b.items[0]
		b.items[0] = zero
		b.items = b.items[1:]
		b.mu.Unlock()
		b.handle(x)
	}
}

// waitIdle returns a channel closed once no item is queued or being
// handled (at once when the consumer does not run).
func (b *inbox[T]) waitIdle() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.running {
		return closedChan
	}
	if b.idle == nil {
		b.idle = make(chan struct{})
	}
	return b.idle
}

// closedChan is a closed channel.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
