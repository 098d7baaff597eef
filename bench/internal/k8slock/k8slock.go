// Package k8slock is a Redis-backed resourcelock.Interface for client-go's
// tools/leaderelection: the LeaderElectionRecord is stored as JSON in one
// Redis key next to a resource version, and Update is a compare-and-swap
// on that version (one Lua script), the way the API server checks
// metadata.resourceVersion on a Lease.
package k8slock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// The stored value is "<resourceVersion>\n<record JSON>".

// update replaces the value when the stored resource version equals
// ARGV[1]; it returns the new version, 0 when the key is absent and -1 on a
// version conflict.
var update = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local nl = string.find(cur, '\n', 1, true)
if not nl or string.sub(cur, 1, nl - 1) ~= ARGV[1] then return -1 end
local nrv = tonumber(ARGV[1]) + 1
redis.call('SET', KEYS[1], nrv .. '\n' .. ARGV[2])
return nrv
`)

var leases = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

// ErrConflict is returned by Update when the record changed since it was
// last read (the resource version moved).
var ErrConflict = errors.New("k8slock: resource version conflict")

// Lock is a resourcelock.Interface over one Redis key. Like client-go's
// LeaseLock it remembers the resource version it last observed, and
// Update succeeds only when the stored version still matches.
type Lock struct {
	client   redis.UniversalClient
	key      string
	identity string

	mu sync.Mutex
	rv string // resource version last observed; "" before Get/Create
}

var _ resourcelock.Interface = (*Lock)(nil)

// New returns a lock on key for identity.
func New(client redis.UniversalClient, key, identity string) *Lock {
	return &Lock{client: client, key: key, identity: identity}
}

// Get reads the record; a missing key yields a NotFound API error, which
// client-go answers with Create.
func (l *Lock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	v, err := l.client.Get(ctx, l.key).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil, apierrors.NewNotFound(leases, l.key)
	}
	if err != nil {
		return nil, nil, err
	}
	rv, raw, ok := strings.Cut(v, "\n")
	if !ok {
		return nil, nil, fmt.Errorf("k8slock: malformed value at %q", l.key)
	}
	var rec resourcelock.LeaderElectionRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return nil, nil, fmt.Errorf("k8slock: decode %q: %w", l.key, err)
	}
	l.mu.Lock()
	l.rv = rv
	l.mu.Unlock()
	return &rec, []byte(raw), nil
}

// Create stores the record when the key is absent (SET NX).
func (l *Lock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	raw, err := json.Marshal(ler)
	if err != nil {
		return err
	}
	ok, err := l.client.SetNX(ctx, l.key, "1\n"+string(raw), 0).Result()
	if err != nil {
		return err
	}
	if !ok {
		return apierrors.NewAlreadyExists(leases, l.key)
	}
	l.mu.Lock()
	l.rv = "1"
	l.mu.Unlock()
	return nil
}

// Update replaces the record if nobody changed it since this lock last
// observed it.
func (l *Lock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	rv := l.rv
	l.mu.Unlock()
	if rv == "" {
		return errors.New("k8slock: record not initialized, call Get or Create first")
	}
	raw, err := json.Marshal(ler)
	if err != nil {
		return err
	}
	n, err := update.Run(ctx, l.client, []string{l.key}, rv, raw).Int64()
	if err != nil {
		return err
	}
	switch {
	case n == 0:
		return apierrors.NewNotFound(leases, l.key)
	case n < 0:
		return ErrConflict
	}
	l.mu.Lock()
	l.rv = strconv.FormatInt(n, 10)
	l.mu.Unlock()
	return nil
}

// RecordEvent does nothing: there is no event sink outside Kubernetes.
func (l *Lock) RecordEvent(string) {}

// Identity is the holder identity of this candidate.
func (l *Lock) Identity() string { return l.identity }

// Describe names the Redis key.
func (l *Lock) Describe() string { return "redis/" + l.key }
