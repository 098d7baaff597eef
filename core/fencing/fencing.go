package fencing

import (
	"context"
	_ "embed" // the gate script
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
)

//go:embed gate.lua
var gateLua string

// gateScript runs with EVALSHA, and with EVAL when the server does not know
// it yet (NOSCRIPT, for example after a restart or SCRIPT FLUSH).
var gateScript = redis.NewScript(gateLua)

// ErrStale reports a fence lower than the highest fence the store has
// admitted for the resource: the writer's term has been superseded, and its
// effect was not applied. Errors returned for a stale fence are a
// *StaleError, which matches ErrStale with errors.Is.
//
// It is locking.ErrStaleFence: stores that are not Redis (pglock's term
// check, for one) return it without linking this package's Redis client.
var ErrStale = locking.ErrStaleFence

// ErrZeroFence is returned for a fence of 0, which no fenced lease carries:
// it means "no fence" (leadership.FenceFrom reports (0, false) over a lock
// without fences), and admitting it would let every writer through.
// It is locking.ErrZeroFence.
var ErrZeroFence = locking.ErrZeroFence

// ErrNilClient is returned by every operation of a Gate built with a nil
// client.
var ErrNilClient = errors.New("fencing: nil client")

// DefaultPrefix starts every key of a Gate built without WithPrefix.
const DefaultPrefix = "hostloom:fence:"

// StaleError is the error of a write or admission refused because a higher
// fence has been admitted for the resource. errors.Is(err, ErrStale) holds.
type StaleError struct {
	// Resource is the resource the write was for.
	Resource string
	// Fence is the refused fence.
	Fence uint64
	// Highest is the highest fence admitted for Resource when the write
	// was refused.
	Highest uint64
}

// Error implements error.
func (e *StaleError) Error() string {
	return fmt.Sprintf("fencing: resource %q: fence %d is stale: fence %d was admitted", e.Resource, e.Fence, e.Highest)
}

// Is reports whether target is ErrStale.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// Option configures a Gate.
type Option interface{ apply(*Gate) }

type prefixOption string

func (p prefixOption) apply(g *Gate) { g.prefix = string(p) }

// WithPrefix sets the text every key of the gate starts with. It must not
// contain '{' or '}': the gate puts the resource in braces so that a
// resource's keys share a Redis Cluster hash slot. Default: DefaultPrefix.
func WithPrefix(prefix string) Option { return prefixOption(prefix) }

// Gate makes a Redis or Valkey store refuse stale fences. For each resource
// it keeps the highest fence it admitted and admits a fence only when it is
// at least that high. It is safe for concurrent use; it keeps no state of
// its own besides the client.
type Gate struct {
	c      redis.UniversalClient
	prefix string
}

// New returns a gate over c: a *redis.Client (standalone or Sentinel
// failover client), a *redis.ClusterClient or any redis.UniversalClient. It
// does not talk to Redis, and it does not close c.
//
// A nil c does not panic: every operation of the gate then returns
// ErrNilClient. The only error of New is an invalid option.
func New(c redis.UniversalClient, opts ...Option) (*Gate, error) {
	g := &Gate{c: c, prefix: DefaultPrefix}
	switch v := c.(type) {
	case *redis.Client:
		if v == nil {
			g.c = nil
		}
	case *redis.ClusterClient:
		if v == nil {
			g.c = nil
		}
	case *redis.Ring:
		if v == nil {
			g.c = nil
		}
	}
	for _, o := range opts {
		if o != nil {
			o.apply(g)
		}
	}
	if strings.ContainsAny(g.prefix, "{}") {
		return nil, fmt.Errorf("fencing: prefix %q contains '{' or '}': the gate adds the hash tag itself", g.prefix)
	}
	return g, nil
}

// Keys names the Redis keys of one resource. All three share the hash tag
// {resource}, hence one Redis Cluster slot.
type Keys struct {
	// Gate stores the highest fence admitted for the resource, as a
	// decimal number. It never expires.
	Gate string
	// Value is the string written by Set.
	Value string
	// Log is the list Append adds to.
	Log string
}

// Keys returns the keys of resource: prefix + "{" + resource + "}" followed
// by ":gate", ":value" or ":log". resource must not be empty and must not
// start with '}' (Redis would then hash each whole key, and the keys could
// land in different Cluster slots).
func (g *Gate) Keys(resource string) (Keys, error) {
	if resource == "" {
		return Keys{}, errors.New("fencing: empty resource")
	}
	if resource[0] == '}' {
		return Keys{}, fmt.Errorf("fencing: resource %q starts with '}': its keys would have no Cluster hash tag", resource)
	}
	base := g.prefix + "{" + resource + "}"
	return Keys{Gate: base + ":gate", Value: base + ":value", Log: base + ":log"}, nil
}

// Admit records fence for resource when it is at least the highest fence
// admitted for resource so far, in one atomic step, and returns nil; it
// returns a *StaleError (errors.Is(err, ErrStale)) when a higher fence has
// been admitted. The same fence may be admitted any number of times.
//
// Admit alone orders writers but does not protect an effect performed after
// it returns: a successor may admit a higher fence in between. Use Set or
// Append, or a store that checks the fence itself, so that the check and
// the effect are one step.
func (g *Gate) Admit(ctx context.Context, resource string, fence uint64) error {
	return g.gate(ctx, "admit", resource, fence, "")
}

// Set stores value for resource (a Redis string under Keys.Value) when fence
// is admitted, exactly as Admit decides, in the same script and round trip:
// either the fence is recorded and value stored, or nothing is written and
// a *StaleError is returned. Get reads the value.
//
// When the reply is lost (a broken connection, a context that ended after
// the command was sent), the write may or may not have happened; retrying
// with the same fence and value is safe.
func (g *Gate) Set(ctx context.Context, resource string, fence uint64, value string) error {
	return g.gate(ctx, "set", resource, fence, value)
}

// Append adds entry at the end of resource's log (a Redis list under
// Keys.Log) when fence is admitted, like Set. In the log's order, the fences
// of the writers never go back down: two terms' entries never interleave.
// The entry is stored as given; include the fence in it when readers need
// it. Entries reads the log.
//
// A retry after a lost reply may add the entry twice.
func (g *Gate) Append(ctx context.Context, resource string, fence uint64, entry string) error {
	return g.gate(ctx, "append", resource, fence, entry)
}

// gate runs the gate script with the effect op ("admit", "set", "append").
func (g *Gate) gate(ctx context.Context, op, resource string, fence uint64, value string) error {
	if g.c == nil {
		return ErrNilClient
	}
	if fence == 0 {
		return fmt.Errorf("%w: %s resource %q", ErrZeroFence, op, resource)
	}
	k, err := g.Keys(resource)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fencing: %s %q: %w", op, resource, err)
	}
	keys := []string{k.Gate}
	switch op {
	case "set":
		keys = append(keys, k.Value)
	case "append":
		keys = append(keys, k.Log)
	}
	reply, err := gateScript.Run(ctx, g.c, keys, strconv.FormatUint(fence, 10), op, value).Slice()
	if err != nil && redis.HasErrorPrefix(err, "WRONGTYPE") {
		return fmt.Errorf("fencing: %s %q: one of the keys %q holds another Redis type: %w", op, resource, keys, err)
	}
	if err != nil {
		return fmt.Errorf("fencing: %s %q: %w", op, resource, err)
	}
	code, stored, err := parseReply(reply)
	if err != nil {
		return fmt.Errorf("fencing: %s %q: %w", op, resource, err)
	}
	switch code {
	case 1:
		return nil
	case 0:
		highest, err := parseFence(k.Gate, stored)
		if err != nil {
			return err
		}
		return &StaleError{Resource: resource, Fence: fence, Highest: highest}
	default:
		return notAFence(k.Gate, stored)
	}
}

// parseReply decodes the script's {code, text} reply.
func parseReply(reply []any) (int64, string, error) {
	if len(reply) != 2 {
		return 0, "", fmt.Errorf("unexpected reply %v", reply)
	}
	code, ok1 := reply[0].(int64)
	text, ok2 := reply[1].(string)
	if !ok1 || !ok2 {
		return 0, "", fmt.Errorf("unexpected reply %v", reply)
	}
	return code, text, nil
}

// Highest returns the highest fence admitted for resource, or 0 when none
// has been.
func (g *Gate) Highest(ctx context.Context, resource string) (uint64, error) {
	if g.c == nil {
		return 0, ErrNilClient
	}
	k, err := g.Keys(resource)
	if err != nil {
		return 0, err
	}
	s, err := g.c.Get(ctx, k.Gate).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("fencing: highest %q: %w", resource, err)
	}
	return parseFence(k.Gate, s)
}

// Get returns the value Set last stored for resource; ok is false when
// none has been stored.
func (g *Gate) Get(ctx context.Context, resource string) (value string, ok bool, err error) {
	if g.c == nil {
		return "", false, ErrNilClient
	}
	k, err := g.Keys(resource)
	if err != nil {
		return "", false, err
	}
	value, err = g.c.Get(ctx, k.Value).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("fencing: get %q: %w", resource, err)
	}
	return value, true, nil
}

// Entries returns resource's log, oldest first: the entries Append
// admitted, in the order the store admitted them.
func (g *Gate) Entries(ctx context.Context, resource string) ([]string, error) {
	if g.c == nil {
		return nil, ErrNilClient
	}
	k, err := g.Keys(resource)
	if err != nil {
		return nil, err
	}
	entries, err := g.c.LRange(ctx, k.Log, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("fencing: entries %q: %w", resource, err)
	}
	return entries, nil
}

// maxShown bounds how much of a foreign gate value an error quotes.
const maxShown = 64

// parseFence parses the stored value s of the gate key key.
func parseFence(key, s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, notAFence(key, s)
	}
	return n, nil
}

// notAFence is the error for a gate key holding something other than a
// fence (written by something else than a Gate).
func notAFence(key, s string) error {
	if len(s) > maxShown {
		s = s[:maxShown] + "..."
	}
	return fmt.Errorf("fencing: gate key %q holds %q, not a fence (a decimal number up to 2^64-1)", key, s)
}
