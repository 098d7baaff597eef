package leadership

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
)

// ErrChannelClosed is returned by Channel writes after Close, and by
// Channel.Read once the channel is closed and every accepted item has been
// read: it marks the end of the channel, as io.EOF marks the end of a
// stream.
var ErrChannelClosed = errors.New("leadership: channel closed")

// ErrInvalidChannelOptions is wrapped by every error NewChannel,
// ChannelOptions.Validate and ParseFullMode return for bad input; the
// message names the field and its value.
var ErrInvalidChannelOptions = errors.New("leadership: invalid channel options")

// FullMode says what a Channel does with a write while this instance leads
// and the buffer is full.
type FullMode int

// Full modes. Every item a full mode drops is counted with reason "full".
const (
	// Wait blocks the writer until there is room, the instance stops
	// leading (the item is then discarded as a follower's, C4), the
	// channel closes, or the writer's context ends. Default.
	Wait FullMode = iota + 1
	// DropWrite keeps the buffer as it is and drops the item being
	// written. The write still succeeds.
	DropWrite
	// DropNewest drops the newest buffered item to make room, then
	// enqueues the item being written.
	DropNewest
	// DropOldest drops the oldest buffered item to make room, then
	// enqueues the item being written.
	DropOldest
)

// String returns the mode's lower-case name, as used in config: "wait",
// "drop_write", "drop_newest" or "drop_oldest".
func (m FullMode) String() string {
	switch m {
	case Wait:
		return "wait"
	case DropWrite:
		return "drop_write"
	case DropNewest:
		return "drop_newest"
	case DropOldest:
		return "drop_oldest"
	default:
		return "unknown"
	}
}

// ParseFullMode parses a mode name. It ignores case, '_' and '-', so
// "drop_oldest", "DropOldest" and "drop-oldest" all give DropOldest.
func ParseFullMode(s string) (FullMode, error) {
	norm := strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(strings.TrimSpace(s)))
	switch norm {
	case "wait":
		return Wait, nil
	case "dropwrite":
		return DropWrite, nil
	case "dropnewest":
		return DropNewest, nil
	case "dropoldest":
		return DropOldest, nil
	}
	return 0, fmt.Errorf("%w: FullMode %q: want wait, drop_write, drop_newest or drop_oldest", ErrInvalidChannelOptions, s)
}

// MarshalText implements encoding.TextMarshaler with String's names. An
// unknown mode is an error.
func (m FullMode) MarshalText() ([]byte, error) {
	if m < Wait || m > DropOldest {
		return nil, fmt.Errorf("%w: FullMode %d: unknown", ErrInvalidChannelOptions, int(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseFullMode.
func (m *FullMode) UnmarshalText(b []byte) error {
	v, err := ParseFullMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// ChannelOptions configure a Channel. The zero value is not valid: start
// from DefaultChannelOptions.
type ChannelOptions struct {
	// Capacity is the number of items the buffer holds. Must be > 0.
	// Default: 1024.
	Capacity int

	// FullMode says what a leader's write does when the buffer is full.
	// Default: Wait.
	FullMode FullMode

	// DrainOnLoss discards the buffered items when leadership ends,
	// counted and logged as "loss" (C6). It narrows the window in which a
	// former leader's reader still acts on accepted items; it does not
	// close it. Default: false (accepted items stay readable).
	DrainOnLoss bool

	// DropReportInterval is the least time between two drop summaries in
	// the log (C3). Zero logs a summary at every drop. Must be ≥ 0.
	// Default: 1 minute.
	DropReportInterval time.Duration
}

// DefaultChannelOptions returns the defaults: Capacity 1024, FullMode Wait,
// DrainOnLoss false, DropReportInterval 1 minute.
func DefaultChannelOptions() ChannelOptions {
	return ChannelOptions{
		Capacity:           1024,
		FullMode:           Wait,
		DrainOnLoss:        false,
		DropReportInterval: time.Minute,
	}
}

// Validate reports every invalid field at once; each problem names the
// field and its value, and the error wraps ErrInvalidChannelOptions.
func (o ChannelOptions) Validate() error {
	if errs := o.problems(); len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidChannelOptions, errors.Join(errs...))
	}
	return nil
}

func (o ChannelOptions) problems() []error {
	var errs []error
	if o.Capacity <= 0 {
		errs = append(errs, fmt.Errorf("capacity %d: must be > 0", o.Capacity))
	}
	if o.FullMode < Wait || o.FullMode > DropOldest {
		errs = append(errs, fmt.Errorf("FullMode %d: want Wait, DropWrite, DropNewest or DropOldest", int(o.FullMode)))
	}
	if o.DropReportInterval < 0 {
		errs = append(errs, fmt.Errorf("DropReportInterval %s: must be ≥ 0", o.DropReportInterval))
	}
	return errs
}

// Drop reasons, as reported in the "reason" metric attribute and the log.
const (
	chanReasonFollower = iota // written while not leading (C1)
	chanReasonFull            // dropped by a full mode
	chanReasonLoss            // buffered, discarded at loss by DrainOnLoss
	chanReasons
)

var chanReasonNames = [chanReasons]string{"follower", "full", "loss"}

// MetricChannelDropped counts items a leader channel accepted and dropped,
// by channel (AttrChannel) and reason (AttrReason: follower, full, loss).
const MetricChannelDropped = "hostloom.leadership.channel.dropped"

// Channel is a bounded FIFO channel gated on leadership: producers on every
// instance write to it, a leader's items reach the reader, and a
// follower's are accepted and discarded (C1). That keeps a warm standby's
// producers running without letting the standby act.
//
// # Admission
//
// A write is admitted to the buffer when the Leadership reports IsLeader at
// that moment (which checks the term's deadline, G3), so a write right
// after WaitForLeadership returns is admitted even before the channel's
// own OnChange notification arrives. Otherwise it is discarded as a
// follower's. The OnChange notification of a loss wakes blocked writers
// and applies DrainOnLoss; if the same instance already leads again when
// it arrives, items of the new term drained with the old are counted with
// reason loss like any other (C2). Admission
// is not a fencing guarantee: items accepted while leading stay readable
// after the leadership ends (C6) unless DrainOnLoss discards them, so wrap
// leader-only side effects in the Leadership's Token.
//
// # Drops
//
// Every accepted item is read, still buffered, or dropped and counted on
// the counter hostloom.leadership.channel.dropped (scope: this package's
// import path) with attributes reason (follower, full or loss) and channel
// (the name) (C2). Drops are summarised in the log (message
// LeaderChannelDropped, with the counts per reason and the start of the
// period) at most once per DropReportInterval, on the write or transition
// that finds the interval elapsed; the unsummarised tail is logged when the instance becomes leader
// and at Close (C3). The channel starts no goroutine.
//
// # Waiting
//
// With FullMode Wait a leader's write blocks while the buffer is full.
// Losing leadership wakes it, and it then discards the item as a
// follower's; a write that waited always rechecks the role before it
// enqueues (C4, C5). Followers never block: WaitToWrite succeeds for a
// follower even while the buffer left from its last term is full.
//
// # Closing
//
// Close ends the channel: writes return ErrChannelClosed, blocked writers
// wake with it, readers drain what was accepted and then get
// ErrChannelClosed (All's loop ends).
//
// A Channel is safe for concurrent use by many producers and readers. Its
// leader path (a write that enqueues and the read that takes the item)
// does not allocate.
type Channel[T any] struct {
	name     string
	l        Leadership
	mode     FullMode
	drain    bool
	interval time.Duration
	log      *zap.Logger
	dropped  metric.Int64Counter
	dropOpts [chanReasons][]metric.AddOption
	unsub    func()

	mu       sync.Mutex
	buf      []T // ring buffer of len Capacity
	head     int // index of the oldest item
	n        int // number of buffered items
	closed   bool
	done     chan struct{} // closed by Close
	lost     chan struct{} // closed and replaced at each loss of leadership
	readable chan struct{} // cap 1: wakes one waiting reader
	writable chan struct{} // cap 1: wakes one waiting writer
	readers  int           // readers waiting on readable
	writers  int           // writers waiting on writable
	pending  [chanReasons]int64
	since    time.Time // start of the unsummarised period
	reported time.Time // when the last summary was logged
}

// NewChannel returns a channel named name (the AttrChannel metric attribute
// and log field) gated on l. It subscribes to l.OnChange; Close
// unsubscribes. Bad input (an empty name, a nil l, invalid options) returns
// an error wrapping ErrInvalidChannelOptions that names the field and
// value. The Options used are WithLogger and WithMeterProvider.
func NewChannel[T any](name string, l Leadership, o ChannelOptions, opts ...Option) (*Channel[T], error) {
	var errs []error
	if name == "" {
		errs = append(errs, fmt.Errorf("name %q: must not be empty", name))
	}
	if l == nil {
		errs = append(errs, errors.New("Leadership <nil>: must not be nil"))
	}
	errs = append(errs, o.problems()...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: channel %q: %w", ErrInvalidChannelOptions, name, errors.Join(errs...))
	}
	s := newSettings(opts)
	counter, err := s.meters.Meter(instrumentationScope).Int64Counter(MetricChannelDropped,
		metric.WithUnit("{item}"),
		metric.WithDescription("Items a leader channel accepted and dropped, by reason: follower, full or loss."))
	if err != nil {
		return nil, fmt.Errorf("leadership: channel %q: drop counter: %w", name, err)
	}
	now := time.Now()
	c := &Channel[T]{
		name:     name,
		l:        l,
		mode:     o.FullMode,
		drain:    o.DrainOnLoss,
		interval: o.DropReportInterval,
		log:      s.logger.With(zap.String("channel", name), zap.String("role", l.Role())),
		dropped:  counter,
		buf:      make([]T, o.Capacity),
		done:     make(chan struct{}),
		lost:     make(chan struct{}),
		readable: make(chan struct{}, 1),
		writable: make(chan struct{}, 1),
		since:    now,
		reported: now,
	}
	for r := range chanReasons {
		set := attribute.NewSet(attribute.String(AttrReason, chanReasonNames[r]), attribute.String(AttrChannel, name))
		c.dropOpts[r] = []metric.AddOption{metric.WithAttributeSet(set)}
	}
	c.unsub = l.OnChange(c.onChange)
	return c, nil
}

// Name returns the channel's name.
func (c *Channel[T]) Name() string { return c.name }

// Cap returns the buffer's capacity.
func (c *Channel[T]) Cap() int { return len(c.buf) }

// Len returns the number of buffered items.
func (c *Channel[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// chanOutcome is what an attempt to write found.
type chanOutcome int

const (
	chanEnqueued    chanOutcome = iota + 1 // in the buffer
	chanDiscarded                          // accepted and dropped (follower or full mode)
	chanWouldBlock                         // leader, full, FullMode Wait
	chanClosedWrite                        // channel closed
)

// chanReport is a drop summary taken under the lock, logged after it.
type chanReport struct {
	counts [chanReasons]int64
	since  time.Time
	tail   bool // logged because the instance became leader or the channel closed
}

// Write writes v. A leader enqueues it, or applies FullMode when the buffer
// is full; a follower accepts and discards it (C1). With FullMode Wait a
// leader's write blocks until there is room, the leadership ends (v is
// then discarded, C4), the channel closes (ErrChannelClosed) or ctx ends
// (ctx's error; v is not written). ctx is consulted only when the write
// must wait. After Close, Write returns ErrChannelClosed.
func (c *Channel[T]) Write(ctx context.Context, v T) error {
	for {
		leading := c.l.IsLeader()
		c.mu.Lock()
		out, drop, rep := c.offerLocked(v, leading)
		if out != chanWouldBlock {
			c.mu.Unlock()
			c.finish(drop, rep)
			if out == chanClosedWrite {
				return ErrChannelClosed
			}
			return nil
		}
		if err := ctx.Err(); err != nil {
			c.mu.Unlock()
			return err
		}
		c.writers++
		lost := c.lost
		c.mu.Unlock()
		c.waitWritable(ctx, lost)
		// Loop: recheck the role, closure and room before enqueueing (C5).
		// A ctx that ended is reported only if the write still cannot
		// proceed.
	}
}

// TryWrite writes v without waiting. It reports whether v was accepted:
// true when v was enqueued, discarded as a follower's (C1), or handled by a
// dropping FullMode; false when the channel is closed, or when this
// instance leads, the buffer is full and FullMode is Wait.
func (c *Channel[T]) TryWrite(v T) bool {
	leading := c.l.IsLeader()
	c.mu.Lock()
	out, drop, rep := c.offerLocked(v, leading)
	c.mu.Unlock()
	c.finish(drop, rep)
	return out == chanEnqueued || out == chanDiscarded
}

// WaitToWrite waits until a write would not block and reports true: at
// once for a follower (its writes are discarded, C4, even while the buffer
// is full) and for a dropping FullMode; for a leader with FullMode Wait,
// when there is room or the leadership ends. It returns false with a nil
// error when the channel is closed, and false with ctx's error when ctx
// ends first. A later write may still have to wait if another producer
// took the room.
func (c *Channel[T]) WaitToWrite(ctx context.Context) (bool, error) {
	for {
		leading := c.l.IsLeader()
		c.mu.Lock()
		switch {
		case c.closed:
			c.mu.Unlock()
			return false, nil
		case !leading || c.mode != Wait || c.n < len(c.buf):
			c.mu.Unlock()
			return true, nil
		}
		if err := ctx.Err(); err != nil {
			c.mu.Unlock()
			return false, err
		}
		c.writers++
		lost := c.lost
		c.mu.Unlock()
		c.waitWritable(ctx, lost)
	}
}

// waitWritable blocks a writer, counted in c.writers under c.mu before the
// call, until a read frees room, the leadership ends (the channel's loss
// notification or the Leadership's Token, whichever comes first), the
// channel closes or ctx ends. The caller then rechecks everything (C5).
// A writer that leaves while others wait and there is room passes the
// wake-up on, so none is lost.
func (c *Channel[T]) waitWritable(ctx context.Context, lost <-chan struct{}) {
	token := c.l.Token().Done()
	select {
	case <-c.writable:
	case <-lost:
	case <-token:
	case <-c.done:
	case <-ctx.Done():
	}
	c.mu.Lock()
	c.writers--
	if c.writers > 0 && c.n < len(c.buf) {
		c.wake(c.writable)
	}
	c.mu.Unlock()
}

// Read returns the oldest buffered item, waiting for one while the buffer
// is empty. It returns ctx's error when ctx ends first, and
// ErrChannelClosed once the channel is closed and empty. Items accepted
// while leading stay readable after the leadership ends (C6) unless
// DrainOnLoss discarded them.
func (c *Channel[T]) Read(ctx context.Context) (T, error) {
	for {
		c.mu.Lock()
		if v, ok := c.takeLocked(); ok {
			c.mu.Unlock()
			return v, nil
		}
		if c.closed {
			c.mu.Unlock()
			var zero T
			return zero, ErrChannelClosed
		}
		if err := ctx.Err(); err != nil {
			c.mu.Unlock()
			var zero T
			return zero, err
		}
		c.readers++
		c.mu.Unlock()
		select {
		case <-c.readable:
		case <-c.done:
		case <-ctx.Done():
		}
		c.mu.Lock()
		c.readers--
		if c.readers > 0 && c.n > 0 {
			c.wake(c.readable)
		}
		c.mu.Unlock()
	}
}

// TryRead returns the oldest buffered item without waiting; ok is false
// when the buffer is empty.
func (c *Channel[T]) TryRead() (v T, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.takeLocked()
}

// All returns an iterator over the items, in order, for use with range. It
// reads like Read and ends when the channel is closed and drained, or when
// ctx ends (check ctx.Err to tell them apart). Breaking out of the loop
// leaves the remaining items buffered.
func (c *Channel[T]) All(ctx context.Context) iter.Seq[T] {
	return func(yield func(T) bool) {
		for {
			v, err := c.Read(ctx)
			if err != nil || !yield(v) {
				return
			}
		}
	}
}

// Close closes the channel: later writes return ErrChannelClosed, blocked
// writers wake and return it, and readers drain the buffered items before
// they get ErrChannelClosed. Close unsubscribes from the Leadership and
// logs the unsummarised drop tail. It is idempotent.
func (c *Channel[T]) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.done)
	rep := c.tailLocked(time.Now())
	c.mu.Unlock()
	c.unsub()
	c.logReport(rep)
}

// offerLocked tries to accept v, given whether the Leadership reported
// leading. It returns the outcome, the reason of a drop (or -1), and a
// summary due for logging (or nil).
func (c *Channel[T]) offerLocked(v T, leading bool) (chanOutcome, int, *chanReport) {
	if c.closed {
		return chanClosedWrite, -1, nil
	}
	if !leading {
		return chanDiscarded, chanReasonFollower, c.countLocked(chanReasonFollower, 1)
	}
	size := len(c.buf)
	if c.n < size {
		c.pushLocked(v)
		return chanEnqueued, -1, nil
	}
	switch c.mode {
	case DropWrite:
		// v itself is dropped.
	case DropNewest:
		c.buf[(c.head+c.n-1)%size] = v
	case DropOldest:
		c.buf[c.head] = v
		c.head = (c.head + 1) % size
	default: // Wait
		return chanWouldBlock, -1, nil
	}
	return chanDiscarded, chanReasonFull, c.countLocked(chanReasonFull, 1)
}

func (c *Channel[T]) pushLocked(v T) {
	size := len(c.buf)
	i := c.head + c.n
	if i >= size {
		i -= size
	}
	c.buf[i] = v
	c.n++
	if c.readers > 0 {
		c.wake(c.readable)
	}
}

func (c *Channel[T]) takeLocked() (T, bool) {
	var zero T
	if c.n == 0 {
		return zero, false
	}
	v := c.buf[c.head]
	c.buf[c.head] = zero // let the item be collected
	c.head++
	if c.head == len(c.buf) {
		c.head = 0
	}
	c.n--
	if c.writers > 0 {
		c.wake(c.writable)
	}
	if c.n > 0 && c.readers > 0 {
		c.wake(c.readable)
	}
	return v, true
}

// wake leaves a token in a cap-1 channel, unless one is there already.
func (c *Channel[T]) wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// countLocked adds n drops to the unsummarised counts and returns a summary
// when DropReportInterval has elapsed since the last one.
func (c *Channel[T]) countLocked(reason int, n int64) *chanReport {
	now := time.Now()
	if c.pending == [chanReasons]int64{} {
		c.since = now
	}
	c.pending[reason] += n
	if now.Sub(c.reported) < c.interval {
		return nil
	}
	return c.takeReportLocked(now, false)
}

// tailLocked returns the unsummarised tail, or nil when there is none.
func (c *Channel[T]) tailLocked(now time.Time) *chanReport {
	if c.pending == [chanReasons]int64{} {
		return nil
	}
	return c.takeReportLocked(now, true)
}

func (c *Channel[T]) takeReportLocked(now time.Time, tail bool) *chanReport {
	rep := &chanReport{counts: c.pending, since: c.since, tail: tail}
	c.pending = [chanReasons]int64{}
	c.reported = now
	return rep
}

// finish records a drop on the counter and logs a due summary, outside the
// lock.
func (c *Channel[T]) finish(reason int, rep *chanReport) {
	if reason >= 0 {
		c.dropped.Add(context.Background(), 1, c.dropOpts[reason]...)
	}
	if rep != nil {
		c.logReport(rep)
	}
}

// logReport logs a drop summary (message LeaderChannelDropped; fields
// follower, full, loss, since, tail): at Info when only followers' items were
// dropped (the expected cost of standing by), at Warn when a full buffer or
// a loss dropped a leader's items.
func (c *Channel[T]) logReport(rep *chanReport) {
	if rep == nil {
		return
	}
	fields := []zap.Field{
		zap.Int64("follower", rep.counts[chanReasonFollower]),
		zap.Int64("full", rep.counts[chanReasonFull]),
		zap.Int64("loss", rep.counts[chanReasonLoss]),
		zap.Time("since", rep.since),
		zap.Bool("tail", rep.tail),
	}
	if rep.counts[chanReasonFull] > 0 || rep.counts[chanReasonLoss] > 0 {
		c.log.Warn("LeaderChannelDropped", fields...)
		return
	}
	c.log.Info("LeaderChannelDropped", fields...)
}

// onChange follows the Leadership's transitions (admission itself reads
// IsLeader). On acquisition it logs the unsummarised tail (C3); on loss it
// wakes blocked writers (C4) and, with DrainOnLoss, discards the buffer
// (C6).
func (c *Channel[T]) onChange(ch Change) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	now := time.Now()
	var drained int64
	var rep *chanReport
	if ch.IsLeader {
		rep = c.tailLocked(now)
	} else {
		close(c.lost)
		c.lost = make(chan struct{})
		if c.drain && c.n > 0 {
			drained = int64(c.n)
			clear(c.buf)
			c.head, c.n = 0, 0
			rep = c.countLocked(chanReasonLoss, drained)
		}
	}
	c.mu.Unlock()
	if drained > 0 {
		c.dropped.Add(context.Background(), drained, c.dropOpts[chanReasonLoss]...)
	}
	c.logReport(rep)
}
