package redislock

import (
	"context"
	_ "embed" // the Lua scripts
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hostloom/hostloom/core/jobrecord"
)

// The job records (locking.RecordStore). A job's record is the fields of
// one hash, the job's key, and its history ring is fields h0…h99 of the
// same hash, so the ring expires with the record and a call is one round
// trip routed by that key on Cluster. The field names are the ones these
// hashes have always had, so existing keys read as they are. Two scripts
// do the storing; package jobrecord decides what to store.
var (
	//go:embed record_load.lua
	recordLoadLua string
	//go:embed record_swap.lua
	recordSwapLua string

	recordLoad = newScript(recordLoadLua)
	recordSwap = newScript(recordSwapLua)
)

// ringField is the hash field of ring index i.
func ringField(i int) string { return "h" + strconv.Itoa(i) }

// load runs record_load.lua on key, with the ring when ring is true.
func (p *Provider) load(ctx context.Context, op, key string, ring bool) (jobrecord.Stored, map[int]string, error) {
	if err := p.ready(); err != nil {
		return jobrecord.Stored{}, nil, err
	}
	flag := "0"
	if ring {
		flag = "1"
	}
	r, err := p.run(ctx, recordLoad, []any{nil, nil, "1", key, flag}).Slice()
	if err != nil {
		return jobrecord.Stored{}, nil, opError(op, ctx, err)
	}
	bad := func() (jobrecord.Stored, map[int]string, error) {
		return jobrecord.Stored{}, nil, fmt.Errorf("redislock: %s %q: unexpected reply %v", op, key, r)
	}
	if len(r) != 4 {
		return bad()
	}
	fields, ok1 := pairs(r[0])
	entries, ok2 := pairs(r[1])
	now, ok3 := r[2].(int64)
	pttl, ok4 := r[3].(int64)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return bad()
	}
	st := jobrecord.Stored{Found: pttl != -2, Fields: fields, Now: time.UnixMilli(now), TTL: time.Duration(max(pttl, 0)) * time.Millisecond}
	if !ring {
		return st, nil, nil
	}
	out := make(map[int]string, len(entries))
	for name, v := range entries {
		if i, err := strconv.Atoi(strings.TrimPrefix(name, "h")); err == nil {
			out[i] = v
		}
	}
	return st, out, nil
}

// pairs reads a flat name, value list.
func pairs(v any) (map[string]string, bool) {
	l, ok := v.([]any)
	if !ok || len(l)%2 != 0 {
		return nil, false
	}
	m := make(map[string]string, len(l)/2)
	for i := 0; i < len(l); i += 2 {
		name, ok1 := l[i].(string)
		value, ok2 := l[i+1].(string)
		if !ok1 || !ok2 {
			return nil, false
		}
		m[name] = value
	}
	return m, true
}

// LoadRecord implements locking.RecordStore with one script
// (record_load.lua), on the server's clock (TIME), so replicas' clocks do
// not matter to when a recovery may start.
func (p *Provider) LoadRecord(ctx context.Context, key string) (jobrecord.Stored, error) {
	st, _, err := p.load(ctx, "load record", key, false)
	return st, err
}

// LoadHistory implements locking.RecordStore with one script
// (record_load.lua).
func (p *Provider) LoadHistory(ctx context.Context, key string) (jobrecord.Stored, map[int]string, error) {
	return p.load(ctx, "history", key, true)
}

// SwapRecord implements locking.RecordStore with one script
// (record_swap.lua). It compares the record's fields with from.Fields
// rather than a version, so a write by a process of an earlier release
// (its own scripts, on the same fields) is never overwritten unseen.
func (p *Provider) SwapRecord(ctx context.Context, key string, from jobrecord.Stored, w jobrecord.Write) (bool, error) {
	if err := p.ready(); err != nil {
		return false, err
	}
	ttl, err := millis(w.TTL)
	if err != nil {
		return false, err
	}
	args := make([]any, 0, 10+2*len(from.Fields)+2*len(w.Fields))
	args = append(args, nil, nil, "1", key, ttl)
	args = appendFields(args, from.Fields)
	args = appendFields(args, w.Fields)
	if w.HasEntry {
		args = append(args, ringField(w.Index), w.Entry)
	} else {
		args = append(args, "", "")
	}
	n, err := p.run(ctx, recordSwap, args).Int64()
	if err != nil {
		return false, opError("swap record", ctx, err)
	}
	return n == 1, nil
}

// appendFields appends the count of fields and their name, value pairs,
// in name order.
func appendFields(args []any, fields map[string]string) []any {
	args = append(args, len(fields))
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		args = append(args, name, fields[name])
	}
	return args
}
