package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostloom/hostloom/core/locking"
)

// Watch event names, as lines and JSON show them.
const (
	watchLeading  = "leading"  // the state when watch started
	watchAcquired = "acquired" // a new term began (a new leader or a new fence)
	watchReleased = "released" // the leader released the lease (notification seen)
	watchDeleted  = "deleted"  // an operator deleted the lease (release --force)
	watchExpired  = "expired"  // the lease vanished without a release notification
	watchResign   = "resign"   // someone asked the leader to step down
)

// watchJSON is one line of watch --json.
type watchJSON struct {
	Time  time.Time `json:"time"`
	Role  string    `json:"role"`
	Event string    `json:"event"`
	// Leader is the new holder (acquired, leading), the holder that went
	// (released, deleted, expired) or the one asked to step down (resign).
	Leader string `json:"leader,omitempty"`
	Fence  uint64 `json:"fence,omitempty"`
	// Previous is the holder before an acquisition, whenever watch saw
	// one (also across a released, deleted or expired line).
	Previous string `json:"previous,omitempty"`
}

type watchFlags struct {
	interval time.Duration
	count    int
	duration time.Duration
}

func newWatch(g *globals, sio stdio) *cobra.Command {
	var f watchFlags
	c := &cobra.Command{
		Use:   "watch [ROLE...]",
		Short: "Follow handovers as they happen",
		Long: `watch prints the current leader of every role (or of the roles given),
then one line per change as it happens: acquired (a new term: its leader,
fence and the previous leader), released (the leader gave the role up),
deleted (an operator deleted the lease with release --force), expired (the
lease vanished without a release notification: it ran out, or the
notification was missed), resign (someone asked the leader to step down).

Changes arrive through the lock's notifications (Redis pub/sub, PostgreSQL
LISTEN/NOTIFY, an etcd watch) and are
confirmed by reading the role; every --interval watch also reads every role,
so expiries, roles that appear later and notifications lost while the
subscription was down are seen too. watch runs until interrupted, until
--count lines were printed (the current leader of each role counts: --count
1 prints it and exits), or for --for.

With -o json (or --json) every line is one JSON object; with -o yaml every
event is one YAML document, opened with "---".`,
		Example: `  hostloom watch -config app.yaml
  hostloom watch billing --count 1 --json`,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return watch(cmd.Context(), g, sio, args, f)
		}),
	}
	c.Flags().DurationVar(&f.interval, "interval", time.Second, "how often every role is read besides the notifications")
	c.Flags().IntVar(&f.count, "count", 0, "exit after this many lines, the initial ones included; 0 runs until interrupted")
	c.Flags().DurationVar(&f.duration, "for", 0, "exit after this long; 0 runs until interrupted")
	return c
}

// watcher follows the roles of one watch command.
type watcher struct {
	e       *env
	out     io.Writer
	format  string   // outTable, outWide, outJSON or outYAML
	names   []string // the roles given; nil follows every role
	state   map[string]locking.KeyState
	roles   map[string]roleKey // by key
	last    map[string]string  // by key: the latest holder seen, kept after the lease went
	changes int                // lines printed

	merged  chan keyEvent
	backlog []keyEvent      // taken off merged while waiting for a release notification
	live    map[string]bool // keys whose subscription is up
	done    chan struct{}
	wg      sync.WaitGroup
	stops   []func()
	down    bool // the last read failed; warned once
	width   int  // of the longest role name, to align the lines
}

type keyEvent struct {
	key string
	ev  locking.Event
}

func watch(ctx context.Context, g *globals, sio stdio, names []string, f watchFlags) error {
	switch {
	case f.interval <= 0:
		return badUsage("--interval %v must be positive", f.interval)
	case f.count < 0:
		return badUsage("--count %d must not be negative", f.count)
	case f.duration < 0:
		return badUsage("--for %v must not be negative", f.duration)
	}
	return withEnv(ctx, g, sio, func(e *env) error {
		if f.duration > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, f.duration)
			defer cancel()
		}
		w := &watcher{
			e: e, out: sio.out, format: g.output, names: names,
			state:  map[string]locking.KeyState{},
			live:   map[string]bool{},
			roles:  map[string]roleKey{},
			last:   map[string]string{},
			merged: make(chan keyEvent, eventBuffer),
			done:   make(chan struct{}),
		}
		defer w.close()
		roles, err := e.list(ctx, names)
		if err != nil {
			return err
		}
		if len(roles) == 0 && !g.structured() {
			fmt.Fprintf(sio.out, "No roles in %s yet; waiting.\n", e.namespaceRead())
		}
		for _, rk := range roles {
			w.follow(ctx, rk)
		}
		for _, rk := range roles {
			st, err := e.inspect(ctx, rk.key)
			if err != nil {
				return err
			}
			w.state[rk.key] = st
			if st.Held {
				w.last[rk.key] = st.Holder.Owner
			}
			if err := w.print(watchJSON{Role: rk.role, Event: watchLeading, Leader: st.Holder.Owner, Fence: fenceIfHeld(st)}); err != nil {
				return err
			}
			if w.changes++; f.count > 0 && w.changes >= f.count {
				return nil
			}
		}
		tick := time.NewTicker(f.interval)
		defer tick.Stop()
		for f.count == 0 || w.changes < f.count {
			if len(w.backlog) > 0 {
				ke := w.backlog[0]
				w.backlog = w.backlog[1:]
				w.event(ctx, ke)
				continue
			}
			select {
			case <-ctx.Done():
				return nil
			case ke := <-w.merged:
				w.event(ctx, ke)
			case <-tick.C:
				w.poll(ctx)
			}
		}
		return nil
	})
}

func fenceIfHeld(st locking.KeyState) uint64 {
	if st.Held {
		return st.Fence
	}
	return 0
}

// follow subscribes to a role's notifications.
func (w *watcher) follow(ctx context.Context, rk roleKey) {
	if _, ok := w.roles[rk.key]; ok {
		return
	}
	w.roles[rk.key] = rk
	w.width = max(w.width, len(rk.role))
	events, stop, live := w.e.subscribe(ctx, rk.key)
	w.stops = append(w.stops, stop)
	w.live[rk.key] = live
	if events == nil {
		return
	}
	w.wg.Go(func() {
		for {
			select {
			case ev := <-events:
				select {
				case w.merged <- keyEvent{key: rk.key, ev: ev}:
				case <-w.done:
					return
				}
			case <-w.done:
				return
			}
		}
	})
}

// close ends the subscriptions and their goroutines.
func (w *watcher) close() {
	close(w.done)
	w.wg.Wait()
	for _, stop := range w.stops {
		stop()
	}
}

// event handles one notification: a resign request is printed as it is;
// releases and acquisitions are confirmed by reading the role.
func (w *watcher) event(ctx context.Context, ke keyEvent) {
	rk := w.roles[ke.key]
	switch ke.ev.Kind {
	case locking.EventSubscribed:
		w.live[ke.key] = true
	case locking.EventUnsubscribed:
		w.live[ke.key] = false
	}
	switch ke.ev.Kind {
	case locking.EventResign:
		leader := ke.ev.Owner
		if leader == "" {
			leader = w.state[ke.key].Holder.Owner
		}
		w.change(watchJSON{Role: rk.role, Event: watchResign, Leader: leader})
	case locking.EventReleased:
		w.read(ctx, rk, watchReleased)
	case locking.EventAcquired, locking.EventSubscribed:
		// A (re)subscription may have missed events: read the role.
		w.read(ctx, rk, watchExpired)
	}
}

// poll reads every role, and looks for new ones when following all.
func (w *watcher) poll(ctx context.Context) {
	if w.names == nil {
		roles, err := w.e.list(ctx, nil)
		if !w.failed(ctx, err) {
			for _, rk := range roles {
				w.follow(ctx, rk)
			}
		}
	}
	for _, rk := range w.roles {
		w.read(ctx, rk, watchExpired)
	}
}

// read inspects a role and prints what changed since the last read. gone
// names a lease's disappearance: released when a notification said so,
// expired otherwise.
func (w *watcher) read(ctx context.Context, rk roleKey, gone string) {
	st, err := w.e.inspect(ctx, rk.key)
	if w.failed(ctx, err) {
		return
	}
	old, known := w.state[rk.key]
	w.state[rk.key] = st
	ended := old.Held && (!st.Held || old.Fence != st.Fence || old.Holder.Owner != st.Holder.Owner)
	if ended && gone == watchExpired {
		gone = w.releaseSeen(rk.key)
	}
	if ended && w.e.forcedDelete(ctx, rk.key, old.Fence) {
		gone = watchDeleted
	}
	previous := w.last[rk.key]
	if st.Held {
		w.last[rk.key] = st.Holder.Owner
	}
	switch {
	case !known && st.Held:
		w.change(watchJSON{Role: rk.role, Event: watchAcquired, Leader: st.Holder.Owner, Fence: st.Fence})
	case !known:
		w.change(watchJSON{Role: rk.role, Event: watchLeading})
	case old.Held && !st.Held:
		w.change(watchJSON{Role: rk.role, Event: gone, Leader: old.Holder.Owner, Fence: old.Fence})
	case st.Held && (!old.Held || old.Fence != st.Fence || old.Holder.Owner != st.Holder.Owner):
		if old.Held {
			// The previous term ended between two reads: say how first.
			w.change(watchJSON{Role: rk.role, Event: gone, Leader: old.Holder.Owner, Fence: old.Fence})
		}
		// previous is the holder before this term, also when a released,
		// deleted or expired line came between.
		w.change(watchJSON{Role: rk.role, Event: watchAcquired, Leader: st.Holder.Owner, Fence: st.Fence, Previous: previous})
	}
}

// releaseGrace is how long a read that found a lease gone waits for the
// release notification that may be on its way (the release script deletes
// and publishes in one step, but the message still has to arrive), before
// calling the lease expired.
const releaseGrace = 100 * time.Millisecond

// releaseSeen waits up to releaseGrace for key's release notification and
// returns released when it comes, expired otherwise. Other notifications
// that arrive meanwhile are kept for the main loop, in order.
func (w *watcher) releaseSeen(key string) string {
	if !w.live[key] {
		return watchExpired
	}
	t := time.NewTimer(releaseGrace)
	defer t.Stop()
	for {
		select {
		case ke := <-w.merged:
			if ke.key == key && ke.ev.Kind == locking.EventReleased {
				return watchReleased
			}
			w.backlog = append(w.backlog, ke)
		case <-t.C:
			return watchExpired
		}
	}
}

// failed reports a read error once per outage, on stderr; watch goes on.
func (w *watcher) failed(ctx context.Context, err error) bool {
	if err == nil {
		if w.down {
			w.down = false
			fmt.Fprintln(w.e.stderr, "hostloom: watch: reading again")
		}
		return false
	}
	if !w.down && !over(ctx) {
		w.down = true
		fmt.Fprintf(w.e.stderr, "hostloom: watch: %v (retrying every interval)\n", err)
	}
	return true
}

// over reports whether the command is ending: its ctx is done or its
// deadline (--for) has passed; a read cut short by the deadline can fail a
// moment before the ctx reports it.
func over(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// change prints a change and counts it (a "leading" line for a role that
// appeared counts too: it is news), as the initial lines are counted.
func (w *watcher) change(j watchJSON) {
	w.changes++
	_ = w.print(j)
}

// print writes one line.
func (w *watcher) print(j watchJSON) error {
	j.Time = time.Now().UTC()
	if w.format == outYAML {
		// One document per event, each opened with "---", so a reader
		// can take them as they come.
		if _, err := io.WriteString(w.out, "---\n"); err != nil {
			return err
		}
		return writeYAML(w.out, j)
	}
	if w.format == outJSON {
		b, err := json.Marshal(j)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w.out, "%s\n", b)
		return err
	}
	line := fmt.Sprintf("%s  %-8s  %-*s  %s", showTime(j.Time), j.Event, w.width, j.Role, showString(j.Leader))
	if j.Fence != 0 {
		line += fmt.Sprintf("  fence=%d", j.Fence)
	}
	if j.Previous != "" {
		line += "  previous=" + j.Previous
	}
	_, err := fmt.Fprintln(w.out, line)
	return err
}
