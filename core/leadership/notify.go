package leadership

import (
	"sync"

	"go.uber.org/zap"
)

// notifier delivers the elector's notifications (OnChange, OnNewLeader) in
// order on a delivery goroutine that runs while notifications are queued,
// so a slow subscriber delays the notifications after it but never the
// election. Subscriber callbacks are foreign code: a panic is logged and
// the other subscribers still run.
type notifier struct {
	log *zap.Logger

	mu         sync.Mutex
	changes    []*func(Change)
	leaders    []*func(string)
	queue      []notice
	delivering chan struct{} // non-nil while the delivery goroutine runs; closed when it ends
}

// notice is one queued notification: a Change, or a new leader identity.
type notice struct {
	change   Change
	leader   string
	isLeader bool // the notice is a leader identity
}

// subscribe adds fn to *list and returns the function that removes it.
func subscribe[F any](n *notifier, list *[]*F, fn F) (unsubscribe func()) {
	p := &fn
	n.mu.Lock()
	*list = append(*list, p)
	n.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			for i, q := range *list {
				if q == p {
					*list = append((*list)[:i:i], (*list)[i+1:]...)
					return
				}
			}
		})
	}
}

// change queues c for the OnChange subscribers.
func (n *notifier) change(c Change) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.changes) > 0 {
		n.enqueue(notice{change: c})
	}
}

// leader queues a new leader identity for the OnNewLeader subscribers.
func (n *notifier) leader(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.leaders) > 0 {
		n.enqueue(notice{leader: id, isLeader: true})
	}
}

// enqueue queues x and starts the delivery goroutine when none runs. n.mu
// is held.
func (n *notifier) enqueue(x notice) {
	n.queue = append(n.queue, x)
	if n.delivering == nil {
		done := make(chan struct{})
		n.delivering = done
		go n.deliver(done)
	}
}

// deliver calls the subscribers for each queued notice, in order, and ends
// when the queue is empty.
func (n *notifier) deliver(done chan struct{}) {
	defer close(done)
	for {
		n.mu.Lock()
		if len(n.queue) == 0 {
			n.queue = nil // do not keep the drained backing array
			n.delivering = nil
			n.mu.Unlock()
			return
		}
		x := n.queue[0]
		n.queue[0] = notice{}
		n.queue = n.queue[1:]
		changes := append([]*func(Change){}, n.changes...)
		leaders := append([]*func(string){}, n.leaders...)
		n.mu.Unlock()
		if x.isLeader {
			for _, fn := range leaders {
				n.call(func() { (*fn)(x.leader) })
			}
			continue
		}
		for _, fn := range changes {
			n.call(func() { (*fn)(x.change) })
		}
	}
}

// call runs one subscriber callback, surviving its panic.
func (n *notifier) call(f func()) {
	defer func() {
		if r := recover(); r != nil {
			n.log.Error("LeadershipSubscriberPanicked", zap.Any("panic", r))
		}
	}()
	f()
}

// idle returns a channel closed when no delivery is under way.
func (n *notifier) idle() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.delivering != nil {
		return n.delivering
	}
	done := make(chan struct{})
	close(done)
	return done
}
