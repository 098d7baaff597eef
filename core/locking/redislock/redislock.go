package redislock

import (
	"context"
	_ "embed" // the Lua scripts
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/internal/keycache"
	"github.com/hostloom/hostloom/core/jobrecord"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/kit/eventhub"
	"github.com/hostloom/hostloom/core/locking/kit/roundtrip"
)

// The scripts, embedded at build time (a missing file fails the build).
var (
	//go:embed acquire.lua
	acquireLua string
	//go:embed extend.lua
	extendLua string
	//go:embed take.lua
	takeLua string
	//go:embed release.lua
	releaseLua string
	//go:embed get.lua
	getLua string
	//go:embed advance.lua
	advanceLua string
	//go:embed inspect.lua
	inspectLua string
	//go:embed deregister.lua
	deregisterLua string
)

// ErrNilClient is returned by every operation of a Provider built with a nil
// client.
var ErrNilClient = errors.New("redislock: nil client")

// ErrClosed is returned by Subscribe after Close.
var ErrClosed = errors.New("redislock: provider closed")

// cleanupTimeout bounds the best-effort release of an acquisition whose
// reply was lost (L3: a cancelled context leaves no lease behind).
const cleanupTimeout = time.Second

// Replies of the acquire script (first element).
const (
	acquiredReply = 1 // {1, fence}
	heldReply     = 0 // {0, wait, holder value, top priority}
	badFenceReply = 2 // {2, stored fence}
)

// script is one Lua script: run with EVALSHA, and with EVAL when the server
// does not know it yet (NOSCRIPT, e.g. after SCRIPT FLUSH or a restart).
// The SHA1 and the source are boxed once, so a call allocates only for its
// own arguments.
type script struct {
	sha, src any
}

func newScript(src string) script {
	return script{sha: redis.NewScript(src).Hash(), src: src}
}

// head sets args' first two elements, kept free for it, to EVALSHA and
// the script's hash, or with source to EVAL and its source (for a server
// that answered NOSCRIPT), and returns args.
func (s script) head(args []any, source bool) []any {
	if source {
		args[0], args[1] = "eval", s.src
	} else {
		args[0], args[1] = "evalsha", s.sha
	}
	return args
}

// scripts are the provider's Lua scripts.
type scripts struct {
	acquire, take, extend, release, get, advance, inspect, deregister script
}

func newScripts() scripts {
	return scripts{
		acquire:    newScript(acquireLua),
		take:       newScript(takeLua),
		extend:     newScript(extendLua),
		release:    newScript(releaseLua),
		get:        newScript(getLua),
		advance:    newScript(advanceLua),
		inspect:    newScript(inspectLua),
		deregister: newScript(deregisterLua),
	}
}

// run runs s. args must be []any{nil, nil, numkeys, keys..., argv...}: run
// fills in the command and the script. On Redis Cluster the client routes
// the command by its first key (the argument after numkeys); every key of
// a script is in that key's slot.
func (p *Provider) run(ctx context.Context, s script, args []any) *redis.Cmd {
	cmd := p.c.Do(ctx, s.head(args, false)...)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		cmd = p.c.Do(ctx, s.head(args, true)...)
	}
	return cmd
}

// Provider is a locking.Provider over Redis or Valkey. It is safe for
// concurrent use. Close ends its release subscription.
type Provider struct {
	c       redis.UniversalClient
	cluster bool
	publish any // "PUBLISH", or "SPUBLISH" on Redis Cluster
	s       scripts

	mu     sync.Mutex
	subs   map[int]*subscription // by slot on Cluster, one entry (-1) otherwise
	closed bool
	// flushers counts the goroutines unlisten started to write
	// UNSUBSCRIBE commands; Close waits for them.
	flushers sync.WaitGroup

	events *eventhub.Hub // Subscribe's subscribers; listen subscribes their channels

	quarantine  bool          // Options.Quarantine (Q3)
	minReplicas int           // Options.MinReplicas (Q2)
	ackTimeout  time.Duration // Options.ReplicaAckTimeout (Q2)
	seenMu      sync.Mutex
	seen        map[string]string // Q3: key -> the server run id last seen with its meta hash

	batch *roundtrip.Queue[call] // coalesced acquisitions, extensions, reads (pipeline.go)
	// Coalesced renewals, releases and deregistrations, each kind apart
	// from the others: a renewal or a release never waits behind another
	// kind of call (a renewal queued behind thousands of candidates'
	// tries, on a saturated machine, came back after its lease had run
	// out, and every lost lease brought more tries).
	extends, releases, deregs *roundtrip.Queue[call]
	marks                     markQueue // coalesced waiter marks (watch.go)

	// The meta and waiter-mark key names of the keys in use, built once.
	metaKeys, waitKeys keycache.Cache
	// jobSlots gives the provider the earlier job-slot methods of
	// jobrecord.Jobs (ClaimSlot, CompleteSlot, SetJobPaused, JobStatus,
	// JobHistory), kept for code that calls a provider directly: they
	// are jobrecord.Store's over this provider, which decides every job
	// rule (V1). Its Advance and State are the provider's own.
	*jobSlots
}

// jobSlots is jobrecord.Store, embedded in Provider for its job-slot methods.
type jobSlots = jobrecord.Store

// Options are a Provider's optional behaviours; the zero value is the
// behaviour of New.
type Options struct {
	// Quarantine (Q3; config locking.redis.quarantine) refuses every
	// acquisition of a key for one lease (the TTL asked) after the server
	// lost the key's state: its meta hash (the fence) is gone although
	// this provider saw it, or the server's run id changed since this
	// provider last saw it (a restart, with or without persistence, or a
	// failover). A holder the loss could not reach (partitioned, paused,
	// not yet told) has seen its lease run out by then, so two holders
	// never overlap, at the price of one lease without a holder after each
	// loss. The check runs inside the acquire and extend scripts: no extra
	// round trip (the scripts read the run id and uptime with INFO
	// server). A provider that never saw the key (a process started after
	// the loss) still finds it quarantined when another provider noticed
	// the loss first, or when the server has been up for less than a lease
	// and has no meta hash for the key: so the first acquisition of a key
	// on a server started less than a lease ago waits a lease too.
	// Default false.
	Quarantine bool

	// MinReplicas (Q2; config locking.redis.min_replicas): when positive,
	// an acquisition or an extension counts only once that many replicas
	// acknowledged it: the script and a WAIT run in one pipeline, on one
	// connection, in one round trip. An acquisition that too few
	// replicas acknowledged is deleted again (compare-and-delete, without
	// a release notification, so candidates are not woken into the same
	// refusal) and reported as an AckError; an extension is reported as an
	// AckError, so an elector keeps its earlier deadline and retries (the
	// server's lease was extended, which only delays the next holder). A
	// promoted replica then knows every lease a holder relies on. Default
	// 0: no wait.
	MinReplicas int
	// ReplicaAckTimeout bounds the WAIT. Default (0) 100ms; it must stay
	// well below the lease, since an acquisition or renewal takes that
	// long when a replica lags.
	ReplicaAckTimeout time.Duration
}

// DefaultReplicaAckTimeout is the WAIT timeout when
// Options.ReplicaAckTimeout is zero.
const DefaultReplicaAckTimeout = 100 * time.Millisecond

// ErrNotAcknowledged matches an AckError; it is
// locking.ErrNotAcknowledged, which an elector recognises (Q2).
var ErrNotAcknowledged = locking.ErrNotAcknowledged

// AckError reports an acquisition or extension that fewer replicas than
// Options.MinReplicas acknowledged within Options.ReplicaAckTimeout; it is
// locking.AckError.
type AckError = locking.AckError

// NewWithOptions is New with options. It returns an error naming the field
// and the value for a negative MinReplicas or ReplicaAckTimeout.
func NewWithOptions(c redis.UniversalClient, o Options) (*Provider, error) {
	if o.MinReplicas < 0 {
		return nil, fmt.Errorf("redislock: Options.MinReplicas %d must not be negative", o.MinReplicas)
	}
	if o.ReplicaAckTimeout < 0 {
		return nil, fmt.Errorf("redislock: Options.ReplicaAckTimeout %v must not be negative", o.ReplicaAckTimeout)
	}
	p := New(c)
	p.quarantine = o.Quarantine
	p.minReplicas = o.MinReplicas
	p.ackTimeout = o.ReplicaAckTimeout
	if p.ackTimeout == 0 {
		p.ackTimeout = DefaultReplicaAckTimeout
	}
	return p, nil
}

// runAcked runs s like run, followed by WAIT MinReplicas in the same
// pipeline (one connection; on Cluster the master of key), and returns the
// script's reply and the number of replicas that acknowledged.
func (p *Provider) runAcked(ctx context.Context, key string, s script, args []any) (*redis.Cmd, int, error) {
	for _, sha := range []bool{true, false} {
		var pipe redis.Pipeliner
		if cc, ok := p.c.(*redis.ClusterClient); ok {
			m, err := cc.MasterForKey(ctx, key)
			if err != nil {
				return nil, 0, err
			}
			pipe = m.Pipeline()
		} else {
			pipe = p.c.Pipeline()
		}
		cmd := pipe.Do(ctx, s.head(args, !sha)...)
		wait := pipe.Do(ctx, "wait", p.minReplicas, max(p.ackTimeout.Milliseconds(), 1))
		_, _ = pipe.Exec(ctx)
		if err := cmd.Err(); err != nil {
			if sha && redis.HasErrorPrefix(err, "NOSCRIPT") {
				continue
			}
			return cmd, 0, err
		}
		n, err := wait.Int64()
		if err != nil {
			return cmd, 0, err
		}
		return cmd, int(n), nil
	}
	return nil, 0, errors.New("redislock: the server refused the script after EVAL")
}

// ReplicasConnected reports how many replicas the server key lives on has
// connected now (INFO replication, one round trip; on Cluster the master
// of key), for a check at start against Options.MinReplicas.
func (p *Provider) ReplicasConnected(ctx context.Context, key string) (int, error) {
	if err := p.ready(); err != nil {
		return 0, err
	}
	var c redis.Cmdable = p.c
	if cc, ok := p.c.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return 0, opError("replicas", ctx, err)
		}
		c = m
	}
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return 0, opError("replicas", ctx, err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("redislock: replicas: connected_slaves %q: %w", v, err)
			}
			return n, nil
		}
	}
	return 0, nil
}

// MinReplicas is Options.MinReplicas.
func (p *Provider) MinReplicas() int { return p.minReplicas }

// quarantineArgs are the script arguments of Q3 for key: the mode ('0'
// off, '1' on, '2' on and the meta hash was seen) and the run id last
// seen with it.
func (p *Provider) quarantineArgs(key string) (mode, rid string) {
	if !p.quarantine {
		return "0", ""
	}
	p.seenMu.Lock()
	defer p.seenMu.Unlock()
	rid, ok := p.seen[key]
	if !ok {
		return "1", ""
	}
	return "2", rid
}

// sawServer records that key's meta hash exists on the server with run id
// rid (every reply with quarantine on: after it the hash exists).
func (p *Provider) sawServer(key string, reply []any) []any {
	if !p.quarantine || len(reply) == 0 {
		return reply
	}
	rid, ok := reply[len(reply)-1].(string)
	if !ok {
		return reply
	}
	p.seenMu.Lock()
	if p.seen == nil {
		p.seen = make(map[string]string)
	}
	p.seen[key] = rid
	p.seenMu.Unlock()
	return reply[:len(reply)-1]
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

// New returns a provider over c: a *redis.Client (standalone or Sentinel
// failover client) or a *redis.ClusterClient. It does not talk to Redis.
//
// A nil c does not panic: every operation of the provider then returns
// ErrNilClient. Call Close
// when done to end the release subscription; Close does not close c.
func New(c redis.UniversalClient) *Provider {
	p := &Provider{c: c, publish: "PUBLISH", s: newScripts(), subs: make(map[int]*subscription)}
	p.jobSlots = jobrecord.NewStore(p, p)
	p.batch, p.extends, p.releases, p.deregs = p.newQueue(), p.newQueue(), p.newQueue(), p.newQueue()
	p.events = eventhub.New(eventhub.Options{Listen: p.listen, ErrClosed: ErrClosed})
	switch v := c.(type) {
	case *redis.Client:
		if v == nil {
			p.c = nil
		}
	case *redis.ClusterClient:
		if v == nil {
			p.c = nil
		} else {
			p.cluster = true
			p.publish = "SPUBLISH"
		}
	case *redis.Ring:
		if v == nil {
			p.c = nil
		}
	}
	return p
}

// NewLock is a shorthand for locking.New(New(c), o): a lock that owns its
// provider, so closing the lock ends the provider's subscriptions (it does
// not close c). It has the shape of memlock.NewLock.
func NewLock(c redis.UniversalClient, o locking.Options) (*locking.DistributedLock, error) {
	return locking.New(New(c), o)
}

// millis converts a time to live to whole milliseconds, rounding up so the
// backend never expires a lease before its holder believes it ends.
func millis(ttl time.Duration) (int64, error) {
	if ttl < time.Millisecond {
		return 0, fmt.Errorf("redislock: ttl %v is below Redis' 1ms resolution", ttl)
	}
	ms := int64(ttl / time.Millisecond)
	if ttl%time.Millisecond != 0 {
		ms++
	}
	return ms, nil
}

// ready reports ErrNilClient for a provider without a client.
func (p *Provider) ready() error {
	if p.c == nil {
		return ErrNilClient
	}
	return nil
}

// Acquire implements locking.Provider in one script (see
// acquire.lua): when the key is free it stores the value with PX ttl,
// issues the fence max(last fence + 1, server TIME in microseconds) into
// the key's meta hash, and publishes "acquired@FENCE:OWNER" on the key's event
// channel; when the key is held it reports the holder's value and PTTL.
// Either way it registers the participant.
//
// When the reply is lost because ctx ended or the connection failed after
// the command was sent, Acquire makes a best-effort release of the value
// (compare-and-delete, bounded by one second) so that no lease is left
// behind, and returns the error; when ctx has ended, the error wraps
// ctx.Err() whatever the transport reported.
func (p *Provider) Acquire(ctx context.Context, r locking.AcquireRequest) (locking.AcquireResult, error) {
	var res locking.AcquireResult
	if err := p.ready(); err != nil {
		return res, err
	}
	ms, err := millis(r.TTL)
	if err != nil {
		return res, err
	}
	pms := participantMillis(r.ParticipantTTL)
	if err := roundtrip.ContextErr(ctx); err != nil {
		return res, opError("acquire", ctx, err)
	}
	// A plain lock user (no participant) without quarantine takes the
	// short script (take.lua): three commands whether refused or taken.
	s := p.s.acquire
	var args []any
	plain := r.ParticipantTTL <= 0 && !p.quarantine
	if plain {
		s = p.s.take
		c := &takeCall{key: r.Key, meta: p.metaKeys.Get(r.Key, metaKey), value: r.Value, ms: ms, metaTTL: metaTTLFor(r.TTL, 0)}
		c.args = [...]any{nil, nil, "2", &c.key, &c.meta, &c.value, &c.ms, &c.metaTTL}
		args = c.args[:]
	} else {
		qmode, qrid := p.quarantineArgs(r.Key)
		args = []any{nil, nil, "2", r.Key, p.metaKeys.Get(r.Key, metaKey),
			r.Value, ms, r.Owner, pms, metaTTLFor(r.TTL, r.ParticipantTTL), p.channelMode(r.Key), p.publish, r.Priority, r.Yield.Milliseconds(), qmode, qrid}
	}
	var cmd *redis.Cmd
	acked := 0
	if p.minReplicas > 0 {
		cmd, acked, err = p.runAcked(ctx, r.Key, s, args)
		if cmd == nil {
			return res, opError("acquire", ctx, err)
		}
	} else {
		cmd = p.runBatched(ctx, s, args)
	}
	if err == nil {
		err = cmd.Err()
	}
	if plain && err == nil {
		return p.takeResult(ctx, r, cmd.Val(), acked)
	}
	reply, rerr := cmd.Slice()
	if err == nil {
		err = rerr
	}
	if err != nil {
		if mayHaveRun(err) {
			p.cleanup(ctx, r.Key, r.Value, r.ParticipantTTL > 0)
		}
		return res, opError("acquire", ctx, err)
	}
	reply = p.sawServer(r.Key, reply)
	kind, _ := replyInt(reply, 0)
	switch {
	case kind == acquiredReply && len(reply) == 2:
		f, ok := replyInt(reply, 1)
		if !ok || f <= 0 {
			break
		}
		if acked < p.minReplicas {
			return res, p.unacked(ctx, r, acked)
		}
		res.Acquired, res.Fence = true, uint64(f)
		return res, nil
	case kind == heldReply && len(reply) == 4:
		n, ok1 := replyInt(reply, 1)
		v, ok2 := reply[2].(string)
		top, ok3 := replyInt(reply, 3)
		if !ok1 || !ok2 || !ok3 {
			break
		}
		res.HolderValue, res.TopPriority = v, int(top)
		res.Remaining = remainingMicros(n)
		return res, nil
	case kind == badFenceReply && len(reply) == 2:
		v, _ := reply[1].(string)
		return res, fmt.Errorf("redislock: acquire: %w", locking.NewRecordError(metaKey(r.Key), fenceField, v))
	}
	return res, fmt.Errorf("redislock: acquire %q: unexpected reply %v", r.Key, reply)
}

// unacked takes back an acquisition too few replicas acknowledged (Q2: a
// failover could lose it), without a notification (candidates would only
// meet the same wait), and returns the AckError.
func (p *Provider) unacked(ctx context.Context, r locking.AcquireRequest, acked int) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = p.run(ctx, p.s.release, []any{nil, nil, "2", r.Key, waitKey(r.Key), r.Value, "", p.publish}).Err()
	return &AckError{Op: "acquire", Key: r.Key, Want: p.minReplicas, Got: acked, Timeout: p.ackTimeout}
}

// remaining converts a PTTL reply: 0 (expires within the millisecond)
// counts as 1ms, -1 (held without expiry, written by someone else) as
// unknown.
func remaining(pttl int64) time.Duration {
	switch {
	case pttl > 0:
		return time.Duration(pttl) * time.Millisecond
	case pttl == 0:
		return time.Millisecond
	default:
		return 0
	}
}

// remainingMicros converts acquire.lua's wait: microseconds until the
// holder's expiry millisecond begins (at least 1), or -1 (held without
// expiry) as unknown.
func remainingMicros(us int64) time.Duration {
	if us <= 0 {
		return 0
	}
	return time.Duration(us) * time.Microsecond
}

// takeResult interprets take.lua's reply v: the fence (taken), "PTTL:VALUE"
// (held) or {2, stored} (a bad stored fence).
func (p *Provider) takeResult(ctx context.Context, r locking.AcquireRequest, v any, acked int) (locking.AcquireResult, error) {
	var res locking.AcquireResult
	switch v := v.(type) {
	case int64:
		if v <= 0 {
			break
		}
		if acked < p.minReplicas {
			return res, p.unacked(ctx, r, acked)
		}
		res.Acquired, res.Fence = true, uint64(v)
		return res, nil
	case string:
		ms, holder, ok := strings.Cut(v, ":")
		n, err := strconv.ParseInt(ms, 10, 64)
		if !ok || err != nil {
			break
		}
		res.HolderValue, res.Remaining = holder, remaining(n)
		return res, nil
	case []any:
		if kind, _ := replyInt(v, 0); kind == badFenceReply && len(v) == 2 {
			stored, _ := v[1].(string)
			return res, fmt.Errorf("redislock: acquire: %w", locking.NewRecordError(metaKey(r.Key), fenceField, stored))
		}
	}
	return res, fmt.Errorf("redislock: acquire %q: unexpected reply %v", r.Key, v)
}

// takeCall and releaseCall hold the arguments of the plain lock's
// scripts in one allocation: go-redis writes *string and *int64 arguments
// (and routes Cluster commands by a *string key) like their values, so
// pointing into the struct saves boxing each value on its own.
type takeCall struct {
	args             [8]any
	key, meta, value string
	ms, metaTTL      int64
}

type releaseCall struct {
	args                                  [13]any
	key, wait, meta, value, target, field string
}

// replyInt returns element i of a script reply as an integer.
func replyInt(r []any, i int) (int64, bool) {
	if i >= len(r) {
		return 0, false
	}
	n, ok := r[i].(int64)
	return n, ok
}

// participantMillis is a participant ttl in whole milliseconds for the
// scripts, rounded up; "0" (register nothing) when it is not positive.
func participantMillis(d time.Duration) any {
	if d <= 0 {
		return "0"
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// cleanup deletes key if it stores value, on a context detached from the
// caller's (which may have ended) and bounded by cleanupTimeout, and then
// publishes the release like Release (an elector's acquisition that ran
// announced itself: notify). The outcome is not reported: the acquisition
// already failed.
func (p *Provider) cleanup(ctx context.Context, key, value string, notify bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	// Through the releases' queue: when many acquisitions fail at once
	// (a server too slow to answer them in time), their cleanups share
	// pipelined round trips instead of each waiting for a connection of
	// its own, which starved the pipelines that carry renewals and kept
	// the process failing acquisitions.
	_ = p.runOn(p.releases, ctx, p.s.release, []any{nil, nil, "2", key, p.waitKeys.Get(key, waitKey), value, p.channelMode(key), p.publish, "", notifyArg(notify)}).Err()
}

// notifyArg is release.lua's ARGV[5]: '1' publishes the release whether
// or not the key has a waiter mark.
func notifyArg(notify bool) string {
	if notify {
		return "1"
	}
	return "0"
}

// opError wraps the error of operation op. When ctx has ended, its error is
// wrapped too, whatever the transport reported: go-redis may report a
// deadline as an i/o timeout (the connection's deadline can fire a moment
// before the context's own timer, so roundtrip.ContextErr also compares the
// deadline with the clock).
func opError(op string, ctx context.Context, err error) error {
	if authError(err) {
		return fmt.Errorf("redislock: %s: %w: %w", op, locking.ErrUnauthorized, err)
	}
	if cerr := roundtrip.ContextErr(ctx); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("redislock: %s: %w: %w", op, cerr, err)
	}
	return fmt.Errorf("redislock: %s: %w", op, err)
}

// authError reports a reply refusing the credentials or the command's
// permission: WRONGPASS (bad username or password), NOAUTH (none sent),
// NOPERM (an ACL user lacking a command or key), and the protocol error
// Redis sends an unauthenticated client whose command has more than a few
// arguments (as the lock's scripts do) instead of NOAUTH.
func authError(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, p := range []string{"WRONGPASS", "NOAUTH", "NOPERM", "ERR Protocol error: unauthenticated"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// mayHaveRun reports whether a failed command may have run on the server:
// not when Redis replied with an error (the script failed, nothing was
// written), the connection could not be made, or the client never sent it
// (closed, pool exhausted, queued until its context ended). Otherwise
// (reply lost: an ended context, a read timeout, a broken connection) the
// outcome is unknown.
func mayHaveRun(err error) bool {
	if errors.Is(err, errNotSent) || errors.Is(err, locking.ErrNotSent) {
		return false
	}
	if serverReplied(err) {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	return !errors.Is(err, redis.ErrClosed) && !errors.Is(err, redis.ErrPoolTimeout)
}

// Extend implements locking.Provider: PEXPIRE when the key
// still stores the value, the participant's registration and the look for
// a higher-priority participant (B2), in one script (see extend.lua). The
// fence is kept.
func (p *Provider) Extend(ctx context.Context, r locking.ExtendRequest) (locking.ExtendResult, error) {
	if err := p.ready(); err != nil {
		return locking.ExtendResult{}, err
	}
	ms, err := millis(r.TTL)
	if err != nil {
		return locking.ExtendResult{}, err
	}
	if err := roundtrip.ContextErr(ctx); err != nil {
		return locking.ExtendResult{}, opError("extend", ctx, err)
	}
	args := []any{nil, nil, "2", r.Key, p.metaKeys.Get(r.Key, metaKey),
		r.Value, ms, r.Owner, participantMillis(r.ParticipantTTL), metaTTLFor(r.TTL, r.ParticipantTTL), r.Priority}
	if p.quarantine || p.minReplicas > 0 {
		return p.extendChecked(ctx, r, args)
	}
	{
		reply, err := p.runOn(p.extends, ctx, p.s.extend, args).Int64Slice()
		if err != nil {
			return locking.ExtendResult{}, opError("extend", ctx, err)
		}
		if len(reply) != 2 {
			return locking.ExtendResult{}, fmt.Errorf("redislock: extend: unexpected reply %v", reply)
		}
		return locking.ExtendResult{Extended: reply[0] >= 1, Preempt: reply[0] == 2, Participants: int(reply[1])}, nil
	}
}

// extendChecked is ExtendWith with quarantine (Q3) or replica
// acknowledgement (Q2).
func (p *Provider) extendChecked(ctx context.Context, r locking.ExtendRequest, args []any) (locking.ExtendResult, error) {
	qmode, qrid := p.quarantineArgs(r.Key)
	if p.quarantine {
		args = append(args, qmode, qrid)
	}
	var cmd *redis.Cmd
	var err error
	acked := 0
	if p.minReplicas > 0 {
		cmd, acked, err = p.runAcked(ctx, r.Key, p.s.extend, args)
		if cmd == nil {
			return locking.ExtendResult{}, opError("extend", ctx, err)
		}
	} else {
		cmd = p.run(ctx, p.s.extend, args)
	}
	if err == nil {
		err = cmd.Err()
	}
	reply, rerr := cmd.Slice()
	if err == nil {
		err = rerr
	}
	if err != nil {
		return locking.ExtendResult{}, opError("extend", ctx, err)
	}
	reply = p.sawServer(r.Key, reply)
	code, ok1 := replyInt(reply, 0)
	live, ok2 := replyInt(reply, 1)
	if len(reply) != 2 || !ok1 || !ok2 {
		return locking.ExtendResult{}, fmt.Errorf("redislock: extend: unexpected reply %v", reply)
	}
	if code >= 1 && acked < p.minReplicas {
		return locking.ExtendResult{}, &AckError{Op: "extend", Key: r.Key, Want: p.minReplicas, Got: acked, Timeout: p.ackTimeout}
	}
	return locking.ExtendResult{Extended: code >= 1, Preempt: code == 2, Participants: int(live)}, nil
}

// Release implements locking.Provider: DEL when the key still stores the
// value, then a notification on the key's event channel (PUBLISH, or
// SPUBLISH on Redis Cluster), in one script (see release.lua). The
// notification is sent when someone may listen: r.Notify or r.Target is
// set, or the key's waiter mark exists (Subscribe sets it); a plain
// release nobody waits for costs three commands. The notification names
// r.Target as the participant meant to take the key (B1):
// "released:TARGET". With r.Withdraw the script first drops that
// participant's record from the key's meta hash (one HDEL more, in the
// same script; locking.ReleaseWithdrawer). With r.Target and r.Hold the
// key stays the target's for the hold: the meta field 'n', which elector
// acquisitions of other owners respect (TIME, HSET and PTTL more, in the
// same script; locking.ReleaseReserver).
func (p *Provider) Release(ctx context.Context, r locking.ReleaseRequest) (bool, error) {
	if err := p.ready(); err != nil {
		return false, err
	}
	if err := roundtrip.ContextErr(ctx); err != nil {
		return false, opError("release", ctx, err)
	}
	c := &releaseCall{key: r.Key, wait: p.waitKeys.Get(r.Key, waitKey), value: r.Value, target: r.Target}
	mode, notify := p.channelMode(r.Key), notifyArg(r.Notify)
	args := c.args[:10]
	hold := r.Target != "" && r.Hold > 0
	if r.Withdraw == "" && !hold {
		c.args = [13]any{nil, nil, "2", &c.key, &c.wait, &c.value, mode, p.publish, &c.target, notify}
	} else {
		c.meta = p.metaKeys.Get(r.Key, metaKey)
		if r.Withdraw != "" {
			c.field = participantField + r.Withdraw
		}
		var holdMS any = "0"
		if hold {
			holdMS = max(r.Hold.Milliseconds(), 1)
		}
		c.args = [...]any{nil, nil, "3", &c.key, &c.wait, &c.meta, &c.value, mode, p.publish, &c.target, notify, &c.field, holdMS}
		args = c.args[:]
	}
	// Releases made at once (a process stopping many electors) share
	// pipelined round trips; a lone release goes out at once as before,
	// whatever else is on the wire.
	n, err := p.runOn(p.releases, ctx, p.s.release, args).Int64()
	if err != nil {
		return false, opError("release", ctx, err)
	}
	return n == 1, nil
}

// Get returns the value stored under key and its remaining time to live,
// GET and PTTL in one script; ok is false when key is absent.
func (p *Provider) Get(ctx context.Context, key string) (string, time.Duration, bool, error) {
	if err := p.ready(); err != nil {
		return "", 0, false, err
	}
	if err := roundtrip.ContextErr(ctx); err != nil {
		return "", 0, false, opError("get", ctx, err)
	}
	r, err := p.run(ctx, p.s.get, []any{nil, nil, "1", key}).Slice()
	if errors.Is(err, redis.Nil) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, opError("get", ctx, err)
	}
	if len(r) != 2 {
		return "", 0, false, fmt.Errorf("redislock: get: unexpected reply %v", r)
	}
	v, ok1 := r[0].(string)
	ms, ok2 := r[1].(int64)
	if !ok1 || !ok2 {
		return "", 0, false, fmt.Errorf("redislock: get: unexpected reply %v", r)
	}
	return v, time.Duration(max(ms, 0)) * time.Millisecond, true, nil
}

// Advance implements jobrecord.State in one script; values are
// compared as int64 without loss of precision.
func (p *Provider) Advance(ctx context.Context, key string, value int64) (bool, int64, error) {
	if err := p.ready(); err != nil {
		return false, 0, err
	}
	if err := roundtrip.ContextErr(ctx); err != nil {
		return false, 0, opError("advance", ctx, err)
	}
	r, err := p.run(ctx, p.s.advance, []any{nil, nil, "1", key, strconv.FormatInt(value, 10)}).Slice()
	if err != nil {
		return false, 0, opError("advance", ctx, err)
	}
	if len(r) != 2 {
		return false, 0, fmt.Errorf("redislock: advance: unexpected reply %v", r)
	}
	set, ok1 := r[0].(int64)
	cur, ok2 := r[1].(string)
	if !ok1 || !ok2 {
		return false, 0, fmt.Errorf("redislock: advance: unexpected reply %v", r)
	}
	n, err := strconv.ParseInt(cur, 10, 64)
	if err != nil {
		return false, 0, fmt.Errorf("redislock: advance: stored value %q: %w", cur, err)
	}
	return set == 1, n, nil
}

// State implements jobrecord.State with one GET.
func (p *Provider) State(ctx context.Context, key string) (int64, bool, error) {
	if err := p.ready(); err != nil {
		return 0, false, err
	}
	if err := roundtrip.ContextErr(ctx); err != nil {
		return 0, false, opError("state", ctx, err)
	}
	s, err := p.c.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, opError("state", ctx, err)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("redislock: state: stored value %q: %w", s, err)
	}
	return n, true, nil
}
