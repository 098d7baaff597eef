package redislock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/kit/roundtrip"
)

// MetaTTL is how long a key's meta hash (its last fence and its
// participants) is kept after the last acquisition or participant
// registration. Once it has expired, the next fence is the server's time in
// microseconds, which is larger than every fence issued before as long as
// the server's clock has not stepped back by MetaTTL.
const MetaTTL = 7 * 24 * time.Hour

// metaInfix separates a meta key's hash tag from the lock key it belongs to.
const metaInfix = ":meta:"

// waitInfix separates a waiter mark's hash tag from its lock key.
const waitInfix = ":wait:"

// WaitMarkTTL is how long a subscription marks its key as listened to: a
// release publishes its notification while the mark lives (release.lua).
// Every Subscribe sets it, and a live subscription sets its keys' marks
// again every half WaitMarkTTL and after a lost connection. Electors'
// releases are published whatever the mark says.
const WaitMarkTTL = 24 * time.Hour

// waitKey returns key's waiter mark, "{TAG}:wait:" + key with metaKey's
// TAG (same Cluster slot as key).
func waitKey(key string) string {
	tag, ok := hashTag(key)
	if !ok {
		tag = slotTag(keySlot(key))
	}
	return "{" + tag + "}" + waitInfix + key
}

// isWaitKey reports whether k has the form of a waiter mark.
func isWaitKey(k string) bool {
	e := strings.IndexByte(k, '}')
	return strings.HasPrefix(k, "{") && e > 1 && strings.HasPrefix(k[e+1:], waitInfix)
}

// Fields of the meta hash.
const (
	fenceField       = "fence"
	participantField = "p:" // + owner
)

// metaKey returns the meta hash of lock key: "{TAG}:meta:" + key, where TAG
// is key's own hash tag when it has one, else a short string hashing to
// key's slot, so the hash lives in key's Redis Cluster slot (the scripts
// touch both in one step). TAG never holds '}', so the lock key can be read
// back from its meta key, and no two lock keys share a meta key. The form is
// the same on standalone servers and Sentinel.
func metaKey(key string) string {
	tag, ok := hashTag(key)
	if !ok {
		tag = slotTag(keySlot(key))
	}
	return "{" + tag + "}" + metaInfix + key
}

// lockKeyOf returns the lock key a meta key belongs to.
func lockKeyOf(meta string) (string, bool) {
	if !strings.HasPrefix(meta, "{") {
		return "", false
	}
	e := strings.IndexByte(meta, '}')
	if e <= 1 {
		return "", false
	}
	return strings.CutPrefix(meta[e+1:], metaInfix)
}

// slotTags maps every Cluster slot to the shortest string over [0-9a-z]
// (found in that order) that hashes to it; built on first use.
var (
	slotTagsOnce sync.Once
	slotTags     [slots]string
)

// slotTag returns a short string, without braces, whose slot is slot.
func slotTag(slot int) string {
	slotTagsOnce.Do(func() {
		const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
		left := slots
		var buf [4]byte
		var fill func(pos, n int)
		fill = func(pos, n int) {
			if left == 0 {
				return
			}
			if pos == n {
				s := string(buf[:n])
				if k := keySlot(s); slotTags[k] == "" {
					slotTags[k] = s
					left--
				}
				return
			}
			for i := 0; i < len(alphabet) && left > 0; i++ {
				buf[pos] = alphabet[i]
				fill(pos+1, n)
			}
		}
		for n := 1; n <= len(buf) && left > 0; n++ {
			fill(0, n)
		}
	})
	return slotTags[slot]
}

// metaTTLFor is the meta hash's time to live for a request whose lease and
// participant registration last ttl and pttl: MetaTTL, or longer when they
// do.
func metaTTLFor(ttl, pttl time.Duration) int64 {
	return int64(max(MetaTTL, ttl, pttl) / time.Millisecond)
}

// Participants implements locking.ParticipantRegistry: the meta hash is
// read with the server's time in one script; records that do not parse are
// skipped and reported (locking.ErrBadRecord) along with the others.
func (p *Provider) Participants(ctx context.Context, key string) ([]locking.Participant, error) {
	st, err := p.Inspect(ctx, key)
	if err != nil && !errors.Is(err, locking.ErrBadRecord) {
		return nil, err
	}
	return st.Participants, err
}

// WithdrawsOnRelease implements locking.ReleaseWithdrawer: Release
// honours ReleaseRequest.Withdraw.
func (*Provider) WithdrawsOnRelease() bool { return true }

// ReservesOnRelease implements locking.ReleaseReserver: Release honours
// ReleaseRequest.Hold (see release.lua), and elector acquisitions
// (acquire.lua) respect the hold; plain TryAcquire (take.lua) does not
// read it.
func (*Provider) ReservesOnRelease() bool { return true }

// Deregister implements locking.ParticipantRegistry with one HDEL, in a
// script so that deregistrations made at once share pipelined round
// trips.
func (p *Provider) Deregister(ctx context.Context, key, owner string) error {
	if err := p.ready(); err != nil {
		return err
	}
	if err := roundtrip.ContextErr(ctx); err != nil {
		return opError("deregister", ctx, err)
	}
	if err := p.runOn(p.deregs, ctx, p.s.deregister, []any{nil, nil, "1", p.metaKeys.Get(key, metaKey), participantField + owner}).Err(); err != nil {
		return opError("deregister", ctx, err)
	}
	return nil
}

// Inspect implements locking.Inspector: the lease, its PTTL, the
// server time and the meta hash, in one script; calls made at once go in
// pipelined round trips.
func (p *Provider) Inspect(ctx context.Context, key string) (locking.ProviderKeyState, error) {
	var st locking.ProviderKeyState
	if err := p.ready(); err != nil {
		return st, err
	}
	if err := roundtrip.ContextErr(ctx); err != nil {
		return st, opError("inspect", ctx, err)
	}
	// Batched: reads made at once (a balance round reads every role it
	// leads) share pipelined round trips with each other and with the
	// acquisitions and renewals under way.
	r, err := p.runBatched(ctx, p.s.inspect, []any{nil, nil, "2", key, metaKey(key)}).Slice()
	if err != nil {
		return st, opError("inspect", ctx, err)
	}
	if len(r) < 3 || len(r)%2 == 0 {
		return st, fmt.Errorf("redislock: inspect %q: unexpected reply of %d elements", key, len(r))
	}
	pttl, ok1 := r[1].(int64)
	now, ok2 := r[2].(int64)
	if !ok1 || !ok2 {
		return st, fmt.Errorf("redislock: inspect %q: unexpected reply %v", key, r[:3])
	}
	if v, ok := r[0].(string); ok {
		st.Held, st.Value, st.TTL = true, v, time.Duration(max(pttl, 0))*time.Millisecond
	}
	var bad []error
	for i := 3; i+1 < len(r); i += 2 {
		field, _ := r[i].(string)
		value, _ := r[i+1].(string)
		switch {
		case field == fenceField:
			f, err := strconv.ParseUint(value, 10, 64)
			if err != nil {
				bad = append(bad, locking.NewRecordError(key, field, value))
				continue
			}
			st.Fence = f
		case strings.HasPrefix(field, participantField):
			since, expires, prio, ok := parseParticipant(value)
			if !ok {
				bad = append(bad, locking.NewRecordError(key, field, value))
				continue
			}
			if expires > now {
				st.Participants = append(st.Participants, locking.Participant{
					Owner:    field[len(participantField):],
					Since:    time.UnixMilli(since),
					Priority: prio,
				})
			}
		}
	}
	return st, errors.Join(bad...)
}

// parseParticipant parses "SINCE_MS:EXPIRES_MS[:PRIORITY]" (records
// without a priority, from before B2, have priority 0).
func parseParticipant(v string) (since, expires int64, priority int, ok bool) {
	a, rest, found := strings.Cut(v, ":")
	if !found {
		return 0, 0, 0, false
	}
	b, c, hasPrio := strings.Cut(rest, ":")
	s, err1 := strconv.ParseInt(a, 10, 64)
	e, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || s < 0 || e < s {
		return 0, 0, 0, false
	}
	if hasPrio {
		p, err := strconv.ParseInt(c, 10, 32)
		if err != nil {
			return 0, 0, 0, false
		}
		priority = int(p)
	}
	return s, e, priority, true
}

// scanCount is the COUNT hint of Keys' SCAN calls.
const scanCount = 1000

// Keys implements locking.Inspector with SCAN (on every master of a
// Cluster): lock keys that start with prefix, and the lock keys of meta
// hashes (whose lock key starts with prefix), deduplicated.
func (p *Provider) Keys(ctx context.Context, prefix string) ([]string, error) {
	if err := p.ready(); err != nil {
		return nil, err
	}
	if err := roundtrip.ContextErr(ctx); err != nil {
		return nil, opError("keys", ctx, err)
	}
	match := "*" + globEscape(prefix) + "*"
	var mu sync.Mutex
	seen := make(map[string]struct{})
	scan := func(ctx context.Context, c redis.Cmdable) error {
		it := c.Scan(ctx, 0, match, scanCount).Iterator()
		for it.Next(ctx) {
			k := it.Val()
			if isWaitKey(k) {
				continue
			}
			if !strings.HasPrefix(k, prefix) {
				lk, ok := lockKeyOf(k)
				if !ok || !strings.HasPrefix(lk, prefix) {
					continue
				}
				k = lk
			}
			mu.Lock()
			seen[k] = struct{}{}
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	if cc, ok := p.c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return scan(ctx, m) })
	} else {
		err = scan(ctx, p.c)
	}
	if err != nil {
		return nil, opError("keys", ctx, err)
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	return keys, nil
}

// globEscape quotes the characters Redis' glob patterns treat specially.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\', '^', '-':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
