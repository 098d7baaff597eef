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

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// The scripts, embedded at build time (a missing file fails the build).
var (
	//go:embed acquire.lua
	acquireLua string
	//go:embed extend.lua
	extendLua string
	//go:embed release.lua
	releaseLua string
	//go:embed get.lua
	getLua string
	//go:embed advance.lua
	advanceLua string
	//go:embed inspect.lua
	inspectLua string
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
	heldReply     = 0 // {0, pttl, holder value}
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

// scripts are the provider's Lua scripts.
type scripts struct {
	acquire, extend, release, get, advance, inspect script
}

func newScripts() scripts {
	return scripts{
		acquire: newScript(acquireLua),
		extend:  newScript(extendLua),
		release: newScript(releaseLua),
		get:     newScript(getLua),
		advance: newScript(advanceLua),
		inspect: newScript(inspectLua),
	}
}

// run runs s. args must be []any{nil, nil, numkeys, keys..., argv...}: run
// fills in the command and the script. On Redis Cluster the client routes
// the command by its first key (the argument after numkeys); every key of
// a script is in that key's slot.
func (p *Provider) run(ctx context.Context, s script, args []any) *redis.Cmd {
	args[0], args[1] = "evalsha", s.sha
	cmd := p.c.Do(ctx, args...)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		retry := append([]any{"eval", s.src}, args[2:]...)
		cmd = p.c.Do(ctx, retry...)
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
}

var (
	_ locking.Provider            = (*Provider)(nil)
	_ locking.Subscriber          = (*Provider)(nil)
	_ locking.ResignRequester     = (*Provider)(nil)
	_ locking.ParticipantRegistry = (*Provider)(nil)
	_ locking.Inspector           = (*Provider)(nil)
	_ slotstore.Jobs              = (*Provider)(nil)
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
// the key's meta hash, and publishes "acquired:OWNER" on the key's event
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
	if err := ctxErr(ctx); err != nil {
		return res, opError("acquire", ctx, err)
	}
	reply, err := p.run(ctx, p.s.acquire, []any{nil, nil, "2", r.Key, metaKey(r.Key),
		r.Value, ms, r.Owner, pms, metaTTLFor(r.TTL, r.ParticipantTTL), p.channelMode(r.Key), p.publish, r.Priority, r.Yield.Milliseconds()}).Slice()
	if err != nil {
		if mayHaveRun(err) {
			p.cleanup(ctx, r.Key, r.Value)
		}
		return res, opError("acquire", ctx, err)
	}
	kind, _ := replyInt(reply, 0)
	switch {
	case kind == acquiredReply && len(reply) == 2:
		f, ok := replyInt(reply, 1)
		if !ok || f <= 0 {
			break
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
		switch {
		case n > 0:
			res.Remaining = time.Duration(n) * time.Millisecond
		case n == 0: // expires within the millisecond
			res.Remaining = time.Millisecond
		default: // -1: held without expiry (written by someone else); unknown
		}
		return res, nil
	case kind == badFenceReply && len(reply) == 2:
		v, _ := reply[1].(string)
		return res, fmt.Errorf("redislock: acquire: %w", locking.NewRecordError(metaKey(r.Key), fenceField, v))
	}
	return res, fmt.Errorf("redislock: acquire %q: unexpected reply %v", r.Key, reply)
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
// publishes the release like Release (an acquisition that ran announced
// itself). The outcome is not reported: the acquisition already failed.
func (p *Provider) cleanup(ctx context.Context, key, value string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = p.run(ctx, p.s.release, []any{nil, nil, "1", key, value, p.channelMode(key), p.publish}).Err()
}

// opError wraps the error of operation op. When ctx has ended, its error is
// wrapped too, whatever the transport reported: go-redis may report a
// deadline as an i/o timeout (the connection's deadline can fire a moment
// before the context's own timer, so ctxErr also compares the deadline with
// the clock).
func opError(op string, ctx context.Context, err error) error {
	if authError(err) {
		return fmt.Errorf("redislock: %s: %w: %w", op, locking.ErrUnauthorized, err)
	}
	if cerr := ctxErr(ctx); cerr != nil && !errors.Is(err, cerr) {
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

// ctxErr is ctx.Err(), or context.DeadlineExceeded once ctx's deadline has
// passed even if its timer has not fired yet.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// mayHaveRun reports whether a failed command may have run on the server:
// not when Redis replied with an error (the script failed, nothing was
// written), the connection could not be made, or the client never sent it
// (closed, pool exhausted). Otherwise (reply lost: an ended context, a
// read timeout, a broken connection) the outcome is unknown.
func mayHaveRun(err error) bool {
	var re redis.Error
	if errors.As(err, &re) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
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
	if err := ctxErr(ctx); err != nil {
		return locking.ExtendResult{}, opError("extend", ctx, err)
	}
	reply, err := p.run(ctx, p.s.extend, []any{nil, nil, "2", r.Key, metaKey(r.Key),
		r.Value, ms, r.Owner, participantMillis(r.ParticipantTTL), metaTTLFor(r.TTL, r.ParticipantTTL), r.Priority}).Int64Slice()
	if err != nil {
		return locking.ExtendResult{}, opError("extend", ctx, err)
	}
	if len(reply) != 2 {
		return locking.ExtendResult{}, fmt.Errorf("redislock: extend: unexpected reply %v", reply)
	}
	return locking.ExtendResult{Extended: reply[0] >= 1, Preempt: reply[0] == 2, Participants: int(reply[1])}, nil
}

// Release implements locking.Provider: DEL when the key still stores the
// value, then a notification on the key's event channel (PUBLISH, or
// SPUBLISH on Redis Cluster), in one script. The notification names
// r.Target as the participant meant to take the key (B1):
// "released:TARGET".
func (p *Provider) Release(ctx context.Context, r locking.ReleaseRequest) (bool, error) {
	if err := p.ready(); err != nil {
		return false, err
	}
	if err := ctxErr(ctx); err != nil {
		return false, opError("release", ctx, err)
	}
	n, err := p.run(ctx, p.s.release, []any{nil, nil, "1", r.Key, r.Value, p.channelMode(r.Key), p.publish, r.Target}).Int64()
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
	if err := ctxErr(ctx); err != nil {
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

// Advance implements slotstore.State in one script; values are
// compared as int64 without loss of precision.
func (p *Provider) Advance(ctx context.Context, key string, value int64) (bool, int64, error) {
	if err := p.ready(); err != nil {
		return false, 0, err
	}
	if err := ctxErr(ctx); err != nil {
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

// State implements slotstore.State with one GET.
func (p *Provider) State(ctx context.Context, key string) (int64, bool, error) {
	if err := p.ready(); err != nil {
		return 0, false, err
	}
	if err := ctxErr(ctx); err != nil {
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
