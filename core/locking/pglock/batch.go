package pglock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hostloom/hostloom/core/locking"
)

// batcher coalesces the acquisitions and extensions (candidates' tries and
// renewals) that fall due while another is on the wire into one pipelined
// round trip on one connection: each statement is still its own implicit
// transaction (a Sync follows each), so one's failure or row locks never
// touch another's, and every time still comes from the server's clock of
// its own statement. A lone call is sent at once; only those that arrive
// while one is in flight wait for it, so none is sent later than the
// in-flight one's reply. An elector measures its deadline from before it
// called Extend or Acquire, so the wait only makes that deadline more
// conservative.
//
// Besides the round trips, this bounds the connections one provider needs
// at a time to two, however many roles it serves: after the server comes
// back from an outage every connection of the pool is new, and a hundred
// electors each opening its own (a backend started and authenticated per
// connection, its caches cold after crash recovery) competed for the
// server's CPU with their own statements, past the acquisitions' bounds,
// which then dropped those connections and opened new ones.
//
// A round trip runs on a context of its own, not its callers': it ends
// cleanupTimeout after the latest of their deadlines (batchTimeout when
// none has one). A caller whose context ends while its call is queued
// takes it out (nothing is sent); while it is on the wire, waits for the
// reply as a lost reply's cleanup would (cleanupTimeout), so Acquire's
// cleanup follows the acquisition, and returns its context's error. So a
// caller's deadline never closes the shared connection (pgx closes a
// connection whose context ends mid-statement): after a restart a new
// backend's first statements are slow (cold caches, crash recovery, every
// replica connecting at once), and closing its connection at each
// acquisition's deadline made every round trip pay for a new dial and a
// cold backend again, which kept roles leaderless for seconds after the
// server was back. A connection the server closed fails its round trip at
// once; only one that stays silent (an unreachable server) holds the
// calls behind it, up to its bound.
//
// A queued call whose deadline leaves less time than the last round trip
// took stays queued for the next round instead (unless it is the one with
// the most time left: each round sends at least one call, so a slow round
// trip's measure does not hold calls back for long): its reply would most
// likely come after its caller gave up, and a statement the server runs
// that late (a renewal over a slow link) extends a lease its holder no
// longer counts on, keeping the role from the candidates. It leaves the
// queue, unsent, when its context ends.
type batcher struct {
	mu    sync.Mutex
	busy  bool       // a round trip is in flight, or its flush goroutine runs
	queue []*pending // waiting for the next round trip

	// rtt is how long the last round trip took, connection included;
	// only the flush goroutine (the one that set busy) uses it.
	rtt time.Duration

	// answered counts the round trips the server answered: a call that
	// leaves the queue unsent after some were answered while it waited
	// was held back by this process's own load, not by the server.
	answered atomic.Uint64
}

// pending is one queued statement: its text, its arguments (without the
// exec mode) and where its single row is scanned.
type pending struct {
	ctx      context.Context
	answered uint64 // batcher.answered when the call was queued
	sql      string
	args     []any
	dst      []any
	err      error
	done     chan struct{}
}

// batchTimeout bounds a pipelined round trip whose callers set no
// deadline (each caller still returns when its own context ends).
const batchTimeout = 5 * time.Second

// errNotSent marks the error of a call whose context ended while it was
// queued: no statement was sent. When the server answered other round
// trips while the call waited, the error wraps locking.ErrNotSent
// instead (see notSent).
var errNotSent = errors.New("not sent")

// notSent is the error of a call w whose context ended (err) while it was
// queued. When the server answered round trips meanwhile, the queue held
// more than the server serves in the call's time: the process, not the
// server, is the bottleneck, and the error matches locking.ErrNotSent, so
// an elector backs off rather than queueing its next try at once. When the
// server answered nothing meanwhile (a round trip stuck on the wire: a
// server paused or gone), it is an outage like any unanswered call.
func (b *batcher) notSent(w *pending, err error) error {
	if b.answered.Load() > w.answered {
		return fmt.Errorf("%w: %w", locking.ErrNotSent, err)
	}
	return fmt.Errorf("%w: %w", errNotSent, err)
}

// serverAnswered reports whether a statement whose error is err got the
// server's reply: a row, no row, or an error the server sent.
func serverAnswered(err error) bool {
	var pe *pgconn.PgError
	return err == nil || errors.Is(err, pgx.ErrNoRows) || errors.As(err, &pe)
}

// queryRow runs sql with args and scans its one row into dst, coalescing
// with the calls queued meanwhile (see batcher).
func (p *Provider) queryRow(ctx context.Context, sql string, args []any, dst ...any) error {
	b := &p.batch
	w := &pending{ctx: ctx, answered: b.answered.Load(), sql: sql, args: args, dst: dst, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, w)
	if !b.busy {
		// Lives as long as the round trips it makes: until the queue
		// is empty.
		b.busy = true
		go p.flush()
	}
	b.mu.Unlock()
	select {
	case <-w.done:
		if err := ctxErr(ctx); err != nil && w.err == nil {
			// The reply came, but after the caller's deadline.
			return err
		}
		return w.err
	case <-ctx.Done():
	}
	b.mu.Lock()
	queued := false
	for i, x := range b.queue {
		if x == w {
			b.queue = append(b.queue[:i:i], b.queue[i+1:]...)
			queued = true
			break
		}
	}
	b.mu.Unlock()
	if queued {
		return b.notSent(w, ctx.Err())
	}
	// On the wire: wait (as long as a lost reply's cleanup may) for the
	// reply, so a cleanup the caller makes next (Acquire) runs after the
	// statement did. The reply is not read: the caller's context ended.
	t := time.NewTimer(cleanupTimeout)
	select {
	case <-w.done:
	case <-t.C:
	}
	t.Stop()
	return ctx.Err()
}

// queryRowAlone runs one statement the usual way.
func (p *Provider) queryRowAlone(ctx context.Context, sql string, args []any, dst []any) error {
	return p.pool.QueryRow(ctx, sql, append([]any{p.mode}, args...)...).Scan(dst...)
}

// flush sends the queued calls, one pipeline per round, until none is
// left.
func (p *Provider) flush() {
	b := &p.batch
	for {
		b.mu.Lock()
		q := b.queue
		b.queue = nil
		if len(q) == 0 {
			b.busy = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		p.pipeline(q)
	}
}

// pipeline runs q in one round trip (a caller whose context has ended is
// skipped) and completes every call it sent; the calls it holds back for
// the next round (see batcher) go back to the head of the queue before
// the round trip, so a caller whose context ends meanwhile finds its call
// there and knows it was not sent. The round trip's context is its own
// (see batcher): cleanupTimeout past the latest of the callers'
// deadlines.
func (p *Provider) pipeline(q []*pending) {
	b := &p.batch
	now := time.Now()
	live := q[:0:0]
	var deadline time.Time
	best := -1 // the live call with the most time left
	for _, w := range q {
		if err := ctxErr(w.ctx); err != nil {
			w.err = b.notSent(w, err)
			close(w.done)
			continue
		}
		d, ok := w.ctx.Deadline()
		if ok {
			d = d.Add(cleanupTimeout)
		} else {
			d = now.Add(batchTimeout)
		}
		if d.After(deadline) {
			deadline, best = d, len(live)
		}
		live = append(live, w)
	}
	if len(live) == 0 {
		return
	}
	sent, held := live[:0:0], live[:0:0]
	for i, w := range live {
		if d, ok := w.ctx.Deadline(); ok && i != best && d.Sub(now) < b.rtt {
			held = append(held, w)
			continue
		}
		sent = append(sent, w)
	}
	if len(held) > 0 {
		b.mu.Lock()
		b.queue = append(held, b.queue...)
		b.mu.Unlock()
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(sent[0].ctx), deadline)
	defer cancel()
	start := time.Now()
	if len(sent) == 1 {
		w := sent[0]
		w.err = p.queryRowAlone(ctx, w.sql, w.args, w.dst)
		b.rtt = time.Since(start)
		if serverAnswered(w.err) {
			b.answered.Add(1)
		}
		close(w.done)
		return
	}
	p.send(ctx, sent)
	b.rtt = time.Since(start)
	if slices.ContainsFunc(sent, func(w *pending) bool { return serverAnswered(w.err) }) {
		b.answered.Add(1)
	}
	for _, w := range sent {
		close(w.done)
	}
}

// send runs calls over one connection in pipeline mode, a Sync after each
// statement, and sets each call's outcome.
func (p *Provider) send(ctx context.Context, calls []*pending) {
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		for _, w := range calls {
			w.err = err
		}
		return
	}
	defer conn.Release()
	m := conn.Conn().TypeMap()
	sds := p.prepareAll(ctx, conn.Conn(), calls)
	pl := conn.Conn().PgConn().StartPipeline(ctx)
	sent := calls[:0:0]
	for _, w := range calls {
		var eqb pgx.ExtendedQueryBuilder
		sd := sds[w.sql]
		if err := eqb.Build(m, sd, w.args); err != nil {
			w.err = err
			continue
		}
		if sd != nil {
			pl.SendQueryPrepared(sd.Name, eqb.ParamValues, eqb.ParamFormats, eqb.ResultFormats)
		} else {
			pl.SendQueryParams(w.sql, eqb.ParamValues, nil, eqb.ParamFormats, eqb.ResultFormats)
		}
		pl.SendPipelineSync()
		sent = append(sent, w)
	}
	err = pl.Flush()
	for i, w := range sent {
		if err == nil {
			err = receive(pl, w, m)
		}
		if err != nil {
			// The connection failed: this call and the ones after it
			// have no answer.
			for _, rest := range sent[i:] {
				rest.err = err
			}
			break
		}
	}
	_ = pl.Close()
}

// prepareAll prepares on conn each statement of calls not prepared there
// yet (a round trip for each, once per connection) when the provider
// prepares its statements (see preparedMode); nil otherwise. A statement
// that fails to prepare is sent unprepared, so its own error reaches its
// caller.
func (p *Provider) prepareAll(ctx context.Context, conn *pgx.Conn, calls []*pending) map[string]*pgconn.StatementDescription {
	if p.mode != preparedMode {
		return nil
	}
	sds := map[string]*pgconn.StatementDescription{}
	for _, w := range calls {
		if _, done := sds[w.sql]; done {
			continue
		}
		sd, err := conn.Prepare(ctx, w.sql, w.sql)
		if err != nil {
			sd = nil
		}
		sds[w.sql] = sd
	}
	return sds
}

// receive reads one call's result and the Sync after it; it returns an
// error only when the connection failed (a statement's own error, one the
// server reported, is the call's).
func receive(pl *pgconn.Pipeline, w *pending, m interface {
	Scan(oid uint32, format int16, src []byte, dst any) error
}) error {
	res, err := pl.GetResults()
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// The server refused the statement (at parse or bind): the
		// Sync after it still comes.
		w.err = err
		return receiveSync(pl)
	}
	if err != nil {
		return err
	}
	rr, ok := res.(*pgconn.ResultReader)
	if !ok {
		return fmt.Errorf("pglock: pipeline: unexpected %T", res)
	}
	r := rr.Read()
	switch {
	case r.Err != nil && !errors.As(r.Err, &pe):
		return r.Err
	case r.Err != nil:
		w.err = r.Err
	case len(r.Rows) != 1:
		w.err = pgx.ErrNoRows
	case len(r.Rows[0]) != len(w.dst) || len(r.FieldDescriptions) != len(w.dst):
		w.err = fmt.Errorf("pglock: %d columns, want %d", len(r.Rows[0]), len(w.dst))
	default:
		for i, fd := range r.FieldDescriptions {
			if err := m.Scan(fd.DataTypeOID, fd.Format, r.Rows[0][i], w.dst[i]); err != nil {
				w.err = fmt.Errorf("pglock: column %d: %w", i, err)
				break
			}
		}
	}
	return receiveSync(pl)
}

// receiveSync reads the Sync that follows each statement.
func receiveSync(pl *pgconn.Pipeline) error {
	res, err := pl.GetResults()
	if err != nil {
		return err
	}
	if _, ok := res.(*pgconn.PipelineSync); !ok {
		return fmt.Errorf("pglock: pipeline: unexpected %T", res)
	}
	return nil
}
