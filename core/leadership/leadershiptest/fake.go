package leadershiptest

import (
	"context"
	"sync"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
)

// Fake is a leadership.Leadership driven by the test. The zero value is not
// usable; call NewFake. It is safe for concurrent use.
type Fake struct {
	role string

	mu          sync.Mutex
	leader      bool
	coordinated bool
	term        uint64
	token       context.Context
	cancel      context.CancelFunc
	led         chan struct{} // closed at the next acquisition
	subs        map[int]func(leadership.Change)
	nextSub     int
	notify      sync.Mutex // serialises OnChange calls, in transition order
}

var _ leadership.Leadership = (*Fake)(nil)

// NewFake returns a coordinated follower for role.
func NewFake(role string) *Fake {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	return &Fake{
		role:        role,
		coordinated: true,
		token:       done,
		cancel:      cancel,
		led:         make(chan struct{}),
		subs:        make(map[int]func(leadership.Change)),
	}
}

// SetLeader moves the fake to leader or follower. A change of state calls
// the OnChange subscribers synchronously, in subscription order, before it
// returns; setting the current state again does nothing.
func (f *Fake) SetLeader(leader bool) {
	f.notify.Lock()
	defer f.notify.Unlock()
	f.mu.Lock()
	if f.leader == leader {
		f.mu.Unlock()
		return
	}
	f.leader = leader
	reason := leadership.Acquired
	if leader {
		f.term++
		f.token, f.cancel = context.WithCancel(context.Background())
		close(f.led)
		f.led = make(chan struct{})
	} else {
		reason = leadership.Released
		f.cancel()
	}
	c := leadership.Change{Role: f.role, IsLeader: leader, Term: f.term, Reason: reason, At: time.Now()}
	subs := make([]func(leadership.Change), 0, len(f.subs))
	for i := 0; i < f.nextSub; i++ {
		if fn, ok := f.subs[i]; ok {
			subs = append(subs, fn)
		}
	}
	f.mu.Unlock()
	for _, fn := range subs {
		fn(c)
	}
}

// SetCoordinated sets what IsCoordinated reports. Default true.
func (f *Fake) SetCoordinated(v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.coordinated = v
}

// Role implements leadership.Leadership.
func (f *Fake) Role() string { return f.role }

// IsLeader implements leadership.Leadership.
func (f *Fake) IsLeader() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leader
}

// IsCoordinated implements leadership.Leadership.
func (f *Fake) IsCoordinated() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.coordinated
}

// Term implements leadership.Leadership.
func (f *Fake) Term() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.term
}

// Token implements leadership.Leadership.
func (f *Fake) Token() context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.token
}

// WaitForLeadership implements leadership.Leadership.
func (f *Fake) WaitForLeadership(ctx context.Context) error {
	f.mu.Lock()
	if f.leader {
		f.mu.Unlock()
		return nil
	}
	led := f.led
	f.mu.Unlock()
	select {
	case <-led:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// OnChange implements leadership.Leadership. Subscribers are called
// synchronously by SetLeader.
func (f *Fake) OnChange(fn func(leadership.Change)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.nextSub
	f.nextSub++
	f.subs[id] = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, id)
	}
}
