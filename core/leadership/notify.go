package leadership

import (
	"sync"

	"go.uber.org/zap"
)

// notifier delivers the elector's notifications (OnChange, OnNewLeader) in
// order on a goroutine that runs while notifications are queued (an
// inbox), so a slow subscriber delays the notifications after it but never
// the election. A Process's electors start that goroutine through the
// Process's notices gate (see processGates.notices). Subscriber callbacks
// are foreign code: a panic is logged and the other subscribers still run.
type notifier struct {
	log *zap.Logger

	mu      sync.Mutex // guards the subscriber lists
	changes []*func(Change)
	leaders []*func(string)
	queue   inbox[notice]
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
		n.queue.put(notice{change: c})
	}
}

// leader queues a new leader identity for the OnNewLeader subscribers.
func (n *notifier) leader(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.leaders) > 0 {
		n.queue.put(notice{leader: id, isLeader: true})
	}
}

// deliver calls the subscribers of x, in order; the inbox runs it.
func (n *notifier) deliver(x notice) {
	n.mu.Lock()
	changes := append([]*func(Change){}, n.changes...)
	leaders := append([]*func(string){}, n.leaders...)
	n.mu.Unlock()
	if x.isLeader {
		for _, fn := range leaders {
			n.call(func() { (*fn)(x.leader) })
		}
		return
	}
	for _, fn := range changes {
		n.call(func() { (*fn)(x.change) })
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
func (n *notifier) idle() <-chan struct{} { return n.queue.waitIdle() }
