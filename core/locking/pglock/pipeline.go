package pglock

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/kit/roundtrip"
)

// call is one statement: its text, its arguments (without the exec mode),
// where its single row is scanned and, once sent, its error.
type call struct {
	sql  string
	args []any
	dst  []any
	err  error
}

// newQueue returns the queue of p's statements.
//
// A Provider coalesces the acquisitions and extensions (candidates' tries
// and renewals) that fall due while another is on the wire into one
// pipelined round trip on one connection, through a roundtrip.Queue: each
// statement is still its own implicit transaction (a Sync follows each),
// so one's failure or row locks never touch another's, and every time
// still comes from the server's clock of its own statement. A lone call is
// sent at once; only those that arrive while one is in flight wait for
// it, so none is sent later than the in-flight one's reply. An elector
// measures its deadline from before it called Extend or Acquire, so the
// wait only makes that deadline more conservative.
//
// Besides the round trips, this bounds the connections one provider needs
// at a time to two, however many roles it serves: after the server comes
// back from an outage every connection of the pool is new, and a hundred
// electors each opening its own (a backend started and authenticated per
// connection, its caches cold after crash recovery) competed for the
// server's CPU with their own statements, past the acquisitions' bounds,
// which then dropped those connections and opened new ones.
//
// A round trip runs on a context of its own, not its callers'
// (roundtrip.Detached): it ends cleanupTimeout after the latest of their
// deadlines (roundtrip.DefaultTimeout when none has one). A caller whose
// context ends while its call is queued takes it out (nothing is sent);
// while it is on the wire, waits for the reply as a lost reply's cleanup
// would (cleanupTimeout), so Acquire's cleanup follows the acquisition,
// and returns its context's error. So a caller's deadline never closes the
// shared connection (pgx closes a connection whose context ends
// mid-statement): after a restart a new backend's first statements are
// slow (cold caches, crash recovery, every replica connecting at once),
// and closing its connection at each acquisition's deadline made every
// round trip pay for a new dial and a cold backend again, which kept roles
// leaderless for seconds after the server was back. A connection the
// server closed fails its round trip at once; only one that stays silent
// (an unreachable server) holds the calls behind it, up to its bound.
//
// A queued call whose deadline leaves less time than the last round trip
// took stays queued for the next round instead (roundtrip.HoldLate),
// unless it is the one with the most time left (each round sends at least
// one call, so a slow round trip's measure does not hold calls back for
// long): its reply would most likely come after its caller gave up, and a statement
// the server runs that late (a renewal over a slow link) extends a lease
// its holder no longer counts on, keeping the role from the candidates.
func (p *Provider) newQueue() *roundtrip.Queue[call] {
	return roundtrip.New(p.sendCalls, roundtrip.Detached(cleanupTimeout), roundtrip.HoldLate(), roundtrip.WireWait(cleanupTimeout))
}

// errNotSent marks the error of a call whose context ended while it was
// queued: no statement was sent. When the server answered other round
// trips while the call waited, the error wraps locking.ErrNotSent
// instead (see queryRow).
var errNotSent = errors.New("not sent")

// serverAnswered reports whether a statement whose error is err got the
// server's reply: a row, no row, or an error the server sent.
func serverAnswered(err error) bool {
	var pe *pgconn.PgError
	return err == nil || errors.Is(err, pgx.ErrNoRows) || errors.As(err, &pe)
}

// queryRow runs sql with args and scans its one row into dst, coalescing
// with the calls queued meanwhile (see newQueue).
func (p *Provider) queryRow(ctx context.Context, sql string, args []any, dst ...any) error {
	c, err := p.batch.Do(ctx, call{sql: sql, args: args, dst: dst})
	var ns *roundtrip.NotSentError
	switch {
	case errors.As(err, &ns) && ns.Saturated:
		// The queue held more than the server serves in the call's
		// time: the process, not the server, is the bottleneck, and the
		// error matches locking.ErrNotSent, so an elector backs off
		// rather than queueing its next try at once.
		return fmt.Errorf("%w: %w", locking.ErrNotSent, ns.Err)
	case ns != nil:
		// The server answered nothing meanwhile (a round trip stuck on
		// the wire: a server paused or gone): an outage like any
		// unanswered call.
		return fmt.Errorf("%w: %w", errNotSent, ns.Err)
	case err != nil:
		// On the wire when the context ended: the reply is not read.
		return err
	}
	if err := roundtrip.ContextErr(ctx); err != nil && c.err == nil {
		// The reply came, but after the caller's deadline.
		return err
	}
	return c.err
}

// queryRowAlone runs one statement the usual way.
func (p *Provider) queryRowAlone(ctx context.Context, sql string, args []any, dst []any) error {
	return p.pool.QueryRow(ctx, sql, append([]any{p.mode}, args...)...).Scan(dst...)
}

// sendCalls is the queue's transport: a lone call runs the usual way,
// several in one pipeline (see send). It reports whether the server
// answered.
func (p *Provider) sendCalls(ctx context.Context, calls []call) bool {
	if len(calls) == 1 {
		c := &calls[0]
		c.err = p.queryRowAlone(ctx, c.sql, c.args, c.dst)
		return serverAnswered(c.err)
	}
	p.send(ctx, calls)
	return slices.ContainsFunc(calls, func(c call) bool { return serverAnswered(c.err) })
}

// send runs calls over one connection in pipeline mode, a Sync after each
// statement, and sets each call's outcome.
func (p *Provider) send(ctx context.Context, calls []call) {
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		for i := range calls {
			calls[i].err = err
		}
		return
	}
	defer conn.Release()
	m := conn.Conn().TypeMap()
	sds := p.prepareAll(ctx, conn.Conn(), calls)
	pl := conn.Conn().PgConn().StartPipeline(ctx)
	sent := make([]*call, 0, len(calls))
	for i := range calls {
		w := &calls[i]
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
func (p *Provider) prepareAll(ctx context.Context, conn *pgx.Conn, calls []call) map[string]*pgconn.StatementDescription {
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
func receive(pl *pgconn.Pipeline, w *call, m interface {
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
