package pglock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/core/jobrecord"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/kit/roundtrip"
)

// ErrNilPool is returned by New for a nil pool.
var ErrNilPool = errors.New("pglock: nil pool")

// ErrClosed is returned by the operations of a closed Provider.
var ErrClosed = errors.New("pglock: provider closed")

// cleanupTimeout bounds the best-effort release of an acquisition whose
// reply was lost (L3: a cancelled context leaves no lease behind).
const cleanupTimeout = time.Second

// execMode is how a statement runs when nothing may outlive it: the
// extended protocol with an unnamed statement, parameter types taken from
// the Go values, in one round trip. Nothing outlives the statement (no
// named prepared statement, no session setting), so a pool behind
// PgBouncer in transaction mode works, whatever the pool's own
// DefaultQueryExecMode. It is the provider's mode with
// DisableNotifications, and CheckTerm's always (it runs on the caller's
// connection).
const execMode = pgx.QueryExecModeExec

// preparedMode is the provider's mode with notifications on: each
// statement is prepared once per connection and then only executed, so
// the server does not plan it again on every call (acquire+release in
// about a third of the time). Notifications need a session of their own
// (LISTEN), so a provider that uses them is not behind PgBouncer in
// transaction mode, where a prepared statement would not survive.
const preparedMode = pgx.QueryExecModeCacheStatement

// Provider is a locking.Provider over PostgreSQL (see the package
// documentation). It is safe for concurrent use. Close ends its LISTEN
// connection; it does not close the pool.
type Provider struct {
	pool *pgxpool.Pool
	o    Options
	t    tables
	sql  statements

	schemaMu  sync.Mutex
	ready     bool      // tables created (unless ExternalSchema) and probed; guarded by schemaMu
	preparing *prepCall // the preparation under way, if any; guarded by schemaMu

	l *listener

	batch *roundtrip.Queue[call] // coalesces acquisitions and extensions (see call)

	mode pgx.QueryExecMode // execMode or preparedMode (see preparedMode)
	// jobSlots gives the provider the earlier job-slot methods of
	// jobrecord.Jobs (ClaimSlot, CompleteSlot, SetJobPaused, JobStatus,
	// JobHistory), kept for code that calls a provider directly: they
	// are jobrecord.Store's over this provider, which decides every job
	// rule (V1). Its Advance and State are the provider's own.
	*jobSlots
}

// jobSlots is jobrecord.Store, embedded in Provider for its job-slot methods.
type jobSlots = jobrecord.Store

// statements are the provider's SQL with its table names filled in.
type statements struct {
	schema, probe, acquire, extend, release, releaseWithdraw, advance, state, resign,
	inspect, deregister, keys, checkTerm string
	recordLoad, recordSwap, recordHistory, jobKeys string
}

var (
	_ locking.Provider            = (*Provider)(nil)
	_ locking.Subscriber          = (*Provider)(nil)
	_ locking.ResignRequester     = (*Provider)(nil)
	_ locking.ParticipantRegistry = (*Provider)(nil)
	_ locking.ReleaseWithdrawer   = (*Provider)(nil)
	_ locking.ReleaseReserver     = (*Provider)(nil)
	_ locking.Inspector           = (*Provider)(nil)
	_ locking.RecordStore         = (*Provider)(nil)
	_ jobrecord.State             = (*Provider)(nil)
	_ jobrecord.Jobs              = (*Provider)(nil)
	_ io.Closer                   = (*Provider)(nil)
)

// New returns a provider over pool with options o. It does not talk to the
// server: the first operation creates the tables (unless
// o.ExternalSchema) and checks their columns, and the first Subscribe opens
// the LISTEN connection (unless o.DisableNotifications), with a copy of
// the pool's connection configuration. It returns ErrNilPool for a nil
// pool and an error matching ErrInvalidOptions, naming the field and the
// value, for invalid options. Call Close when done.
func New(pool *pgxpool.Pool, o Options) (*Provider, error) {
	if pool == nil {
		return nil, ErrNilPool
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	t := newTables(o.Schema, o.Table)
	p := &Provider{pool: pool, o: o, t: t, sql: statements{
		schema:          t.expand(schemaSQL),
		probe:           t.expand(probeSQL),
		acquire:         t.expand(acquireSQL),
		extend:          t.expand(extendSQL),
		release:         t.expand(releaseSQL),
		releaseWithdraw: t.expand(releaseWithdrawSQL),
		advance:         t.expand(advanceSQL),
		state:           t.expand(stateSQL),
		resign:          t.expand(resignSQL),
		inspect:         t.expand(inspectSQL),
		deregister:      t.expand(deregisterSQL),
		keys:            t.expand(keysSQL),
		checkTerm:       t.expand(checkTermSQL),

		recordLoad:    t.expand(recordLoadSQL),
		recordSwap:    t.expand(recordSwapSQL),
		recordHistory: t.expand(recordHistorySQL),
		jobKeys:       t.expand(jobKeysSQL),
	}}
	p.jobSlots = jobrecord.NewStore(p, p)
	p.batch = p.newQueue()
	p.mode = preparedMode
	if o.DisableNotifications {
		p.mode = execMode
	}
	p.l = newListener(p)
	return p, nil
}

// NewLock is a shorthand for locking.New(p.ForLock(), lo) with p =
// New(pool, po): a lock that owns its provider, so closing the lock closes
// the provider (not the pool). It has the shape of memlock.NewLock and
// redislock.NewLock; ProviderOf returns the provider, for CheckTerm.
func NewLock(pool *pgxpool.Pool, po Options, lo locking.Options) (*locking.DistributedLock, error) {
	p, err := New(pool, po)
	if err != nil {
		return nil, err
	}
	l, err := locking.New(p.ForLock(), lo)
	if err != nil {
		_ = p.Close()
		return nil, err
	}
	return l, nil
}

// ProviderOf returns the pglock provider a lock was built over (by NewLock,
// or locking.New with a Provider or its ForLock view); ok is false for a
// lock over another provider.
func ProviderOf(l *locking.DistributedLock) (p *Provider, ok bool) {
	if l == nil {
		return nil, false
	}
	switch v := l.Provider().(type) {
	case *Provider:
		return v, v != nil
	case polling:
		return v.p, true
	}
	return nil, false
}

// Table returns the lease table's name as configured (schema-qualified when
// Options.Schema is set), for CheckTerm and operators' queries.
func (p *Provider) Table() string { return p.t.qualified }

// Pool returns the pool the provider runs its statements on: the app's
// own, or the one built from locking.postgres.dsn. An app writes through
// it in a transaction that checks the term first (CheckLeader), so its
// rows commit only while this replica leads. The provider does not own
// the pool: whoever built it closes it.
func (p *Provider) Pool() *pgxpool.Pool { return p.pool }

// Close stops the LISTEN connection's goroutine and waits for it;
// subscribers whose subscription was live receive EventUnsubscribed, and
// later Subscribe calls fail with ErrClosed; lock operations keep working. Close does not
// close the pool. It is safe to call more than once and returns nil.
func (p *Provider) Close() error {
	p.l.close()
	return nil
}

// prepareTimeout bounds one preparation (creating and checking the
// tables), which runs detached from the callers' contexts.
const prepareTimeout = 10 * time.Second

// prepCall is one preparation under way; err is set before done closes.
type prepCall struct {
	done chan struct{}
	err  error
}

// prepare creates the tables on first use (unless ExternalSchema) and
// checks their columns, once: a failure is returned and tried again by
// the next operation. The work runs once at a time on a context detached
// from the callers' (bounded by prepareTimeout), and each caller waits for
// it up to its own context: callers with short deadlines (an elector's
// acquisition is bounded by its RetryInterval) that start together on a
// busy server would otherwise each cancel the creation halfway, and none
// would ever finish it.
func (p *Provider) prepare(ctx context.Context) error {
	p.schemaMu.Lock()
	if p.ready {
		p.schemaMu.Unlock()
		return nil
	}
	c := p.preparing
	if c == nil {
		c = &prepCall{done: make(chan struct{})}
		p.preparing = c
		go func() {
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), prepareTimeout)
			err := p.createAndProbe(pctx)
			cancel()
			p.schemaMu.Lock()
			c.err, p.preparing = err, nil
			p.ready = err == nil
			p.schemaMu.Unlock()
			close(c.done)
		}()
	}
	p.schemaMu.Unlock()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// createAndProbe creates the tables (unless ExternalSchema) and checks
// their columns.
func (p *Provider) createAndProbe(ctx context.Context) error {
	if !p.o.ExternalSchema {
		if _, err := p.pool.Exec(ctx, p.sql.schema, pgx.QueryExecModeSimpleProtocol); err != nil {
			return fmt.Errorf("pglock: create tables %s: %w", p.t.qualified, p.advise(classify(err)))
		}
	}
	if _, err := p.pool.Exec(ctx, p.sql.probe, p.mode); err != nil {
		return fmt.Errorf("pglock: tables %s (and %s, %s, %s, %s) do not match this version's columns or cannot be read (see pglock.Schema): %w",
			p.t.qualified, p.t.qualified+participantsSuffix, p.t.qualified+stateSuffix,
			p.t.qualified+jobsSuffix, p.t.qualified+runsSuffix, p.advise(classify(err)))
	}
	return nil
}

// classify wraps err with locking.ErrUnauthorized when the server refused
// the credentials (SQLSTATE class 28), a privilege (42501), or the
// database named does not exist (3D000): configuration errors, which
// callers tell from an outage (O4).
func classify(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "28") || pe.Code == "42501" || pe.Code == "3D000") {
		return &authError{err: err}
	}
	return err
}

// authError is an error of the server's refusal, matching
// locking.ErrUnauthorized; its Advice says what to check (the provider's
// Options.AuthAdvice), which the elector logs with
// LeadershipProviderAuthFailed.
type authError struct {
	err    error
	advice string // "": defaultAuthAdvice
}

// defaultAuthAdvice is what a refusal advises when Options.AuthAdvice is
// empty: the pool is the app's, so its connection settings are.
const defaultAuthAdvice = "check the credentials the *pgxpool.Pool given to pglock connects with (the user, its password and the database) and the user's privileges on the tables"

func (e *authError) Error() string   { return locking.ErrUnauthorized.Error() + ": " + e.err.Error() }
func (e *authError) Unwrap() []error { return []error{locking.ErrUnauthorized, e.err} }

// Advice names what to check.
func (e *authError) Advice() string {
	if e.advice != "" {
		return e.advice
	}
	return defaultAuthAdvice
}

// opError is the package's opError with the provider's advice on a
// refusal.
func (p *Provider) opError(op string, ctx context.Context, err error) error {
	return p.advise(opError(op, ctx, err))
}

// advise gives a refusal in err the provider's Options.AuthAdvice.
func (p *Provider) advise(err error) error {
	var ae *authError
	if p.o.AuthAdvice != "" && errors.As(err, &ae) {
		ae.advice = p.o.AuthAdvice
	}
	return err
}

// begin checks ctx and the schema before an operation.
func (p *Provider) begin(ctx context.Context, op string) error {
	if err := roundtrip.ContextErr(ctx); err != nil {
		return fmt.Errorf("pglock: %s: %w", op, err)
	}
	if err := p.prepare(ctx); err != nil {
		return p.opError(op, ctx, err)
	}
	return nil
}

// opError wraps the error of operation op, with ctx's error when ctx has
// ended whatever the driver reported.
func opError(op string, ctx context.Context, err error) error {
	err = classify(err)
	if cerr := roundtrip.ContextErr(ctx); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("pglock: %s: %w: %w", op, cerr, err)
	}
	return fmt.Errorf("pglock: %s: %w", op, err)
}

// mayHaveRun reports whether a failed statement may have committed: not
// when the server answered with an error (the statement was rolled back)
// or nothing was sent (pgx knows it, or the call never left the queue).
func mayHaveRun(err error) bool {
	if errors.Is(err, errNotSent) || errors.Is(err, locking.ErrNotSent) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return false
	}
	return !pgconn.SafeToRetry(err)
}

// micros converts a time to live to whole microseconds, rounding up so the
// server never expires a lease before its holder believes it ends.
func micros(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	if d%time.Microsecond != 0 {
		us++
	}
	return us
}

// checkTTL refuses a time to live below a millisecond, as the other
// providers do.
func checkTTL(op string, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("pglock: %s: ttl %v must be at least 1ms", op, ttl)
	}
	return nil
}

// fromMicros converts a remaining time in µs from the server.
func fromMicros(us int64) time.Duration { return time.Duration(max(us, 0)) * time.Microsecond }

// Acquire implements locking.Provider in one statement (see the package
// documentation): a free key is taken with a fence of max(last fence + 1,
// server time in µs); a held key reports its holder's value and remaining
// time. With a participant TTL it registers the participant (B2: with its
// priority, yielding a free key to a higher one for r.Yield) and announces
// the acquisition with the owner.
//
// When the reply is lost after the statement was sent (ctx ended, the
// connection broke), Acquire releases the value on a detached context
// bounded by one second, so no lease is left behind, and returns the error.
func (p *Provider) Acquire(ctx context.Context, r locking.AcquireRequest) (locking.AcquireResult, error) {
	var res locking.AcquireResult
	if err := checkTTL("acquire", r.TTL); err != nil {
		return res, err
	}
	if err := p.begin(ctx, "acquire"); err != nil {
		return res, err
	}
	var pttl, yield int64
	if r.ParticipantTTL > 0 {
		pttl = micros(r.ParticipantTTL)
		yield = micros(max(r.Yield, 0))
	}
	var remaining int64
	var top int32
	var notes int64
	err := p.queryRow(ctx, p.sql.acquire, []any{
		r.Key, r.Value, micros(r.TTL), r.Owner, pttl, int32(r.Priority), yield,
		p.t.name, pttl > 0 && !p.o.DisableNotifications, p.t.qualified,
	}, &res.Acquired, &res.Fence, &remaining, &res.HolderValue, &top, &notes)
	if err != nil {
		if mayHaveRun(err) {
			p.cleanup(ctx, r.Key, r.Value)
		}
		return locking.AcquireResult{}, p.opError("acquire", ctx, err)
	}
	if res.Acquired && res.Fence == 0 {
		return locking.AcquireResult{}, fmt.Errorf("pglock: acquire %q: the server issued fence 0", r.Key)
	}
	res.Remaining, res.TopPriority = fromMicros(remaining), int(top)
	if !res.Acquired && res.Remaining == 0 && res.HolderValue != "" {
		res.Remaining = time.Microsecond // expires within the microsecond
	}
	return res, nil
}

// cleanup releases key if it stores value, on a context detached from the
// caller's and bounded by cleanupTimeout; the outcome is not reported. It
// goes through the queue, so it is sent after the acquisition it undoes
// if that one is still on the wire, and on the connection the queue
// already has (after a restart, a second one would be dialled for it).
func (p *Provider) cleanup(ctx context.Context, key, value string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var ok bool
	var n int64
	_ = p.queryRow(ctx, p.sql.release, []any{key, value, p.t.name, "", !p.o.DisableNotifications, p.t.qualified, int64(0)}, &ok, &n)
}

// Extend implements locking.Provider: the new expiry when the key still
// stores the value, the participant's registration and the look for a
// higher-priority participant (B2), in one statement. The fence is kept.
func (p *Provider) Extend(ctx context.Context, r locking.ExtendRequest) (locking.ExtendResult, error) {
	var res locking.ExtendResult
	if err := checkTTL("extend", r.TTL); err != nil {
		return res, err
	}
	if err := p.begin(ctx, "extend"); err != nil {
		return res, err
	}
	var pttl int64
	if r.ParticipantTTL > 0 {
		pttl = micros(r.ParticipantTTL)
	}
	var live, notes int64
	err := p.queryRow(ctx, p.sql.extend, []any{
		r.Key, r.Value, micros(r.TTL), r.Owner, pttl, int32(r.Priority),
		p.t.name, pttl > 0 && !p.o.DisableNotifications, p.t.qualified,
	}, &res.Extended, &live, &res.Preempt, &notes)
	if err != nil {
		return locking.ExtendResult{}, p.opError("extend", ctx, err)
	}
	res.Participants = int(live)
	return res, nil
}

// Release implements locking.Provider: the row is freed (its fence kept)
// when it still stores the value, and the release is published, naming
// r.Target as the participant meant to take the key (B1) when set, in one
// statement, which also deletes r.Withdraw's participant row when set
// (locking.ReleaseWithdrawer).
func (p *Provider) Release(ctx context.Context, r locking.ReleaseRequest) (bool, error) {
	key, value, target := r.Key, r.Value, r.Target
	if err := p.begin(ctx, "release"); err != nil {
		return false, err
	}
	var ok bool
	var n int64
	var hold int64
	if target != "" && r.Hold > 0 {
		hold = max(micros(r.Hold), 1)
	}
	args := []any{p.mode, key, value, p.t.name, target, !p.o.DisableNotifications, p.t.qualified, hold}
	query := p.sql.release
	if r.Withdraw != "" {
		query, args = p.sql.releaseWithdraw, append(args, r.Withdraw)
	}
	err := p.pool.QueryRow(ctx, query, args...).Scan(&ok, &n)
	if err != nil {
		return false, p.opError("release", ctx, err)
	}
	return ok, nil
}

// Advance implements jobrecord.State in one statement (bigint
// values: no loss of precision).
func (p *Provider) Advance(ctx context.Context, key string, value int64) (bool, int64, error) {
	if err := p.begin(ctx, "advance"); err != nil {
		return false, 0, err
	}
	var cur int64
	var adv bool
	if err := p.pool.QueryRow(ctx, p.sql.advance, p.mode, key, value).Scan(&cur, &adv); err != nil {
		return false, 0, p.opError("advance", ctx, err)
	}
	return adv, cur, nil
}

// State implements jobrecord.State.
func (p *Provider) State(ctx context.Context, key string) (int64, bool, error) {
	if err := p.begin(ctx, "state"); err != nil {
		return 0, false, err
	}
	var v int64
	err := p.pool.QueryRow(ctx, p.sql.state, p.mode, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, p.opError("state", ctx, err)
	}
	return v, true, nil
}
