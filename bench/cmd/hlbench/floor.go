package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// floorRelease deletes the lease key and publishes the release in one
// script, as any notifying lock's release must.
const floorRelease = "redis.call('DEL', KEYS[1]); redis.call('PUBLISH', ARGV[1], 'released'); return 1"

// runHandoverFloor measures the physical floor of a graceful handover on
// this machine and server, with no library in the way: client A holds a
// key; at a random moment it runs a one-script release (DEL + PUBLISH);
// client B, subscribed to the channel, takes the key with SET NX PX on the
// message. Time from A's call to B's reply: the three loopback round trips
// (release, notification, acquisition) a notified handover needs, with
// the same idle time before each as the libraries get (settle).
func runHandoverFloor(ctx context.Context, addr string, n int, lease time.Duration, settle func() time.Duration) ([]time.Duration, error) {
	a := redis.NewClient(&redis.Options{Addr: addr})
	defer a.Close()
	b := redis.NewClient(&redis.Options{Addr: addr})
	defer b.Close()
	key := fmt.Sprintf("floor-handover-%d", time.Now().UnixNano())
	channel := key + ":released"
	ps := b.Subscribe(ctx, channel)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		return nil, fmt.Errorf("floor handover: subscribe: %w", err)
	}
	msgs := ps.Channel()
	sha, err := a.ScriptLoad(ctx, floorRelease).Result()
	if err != nil {
		return nil, fmt.Errorf("floor handover: load the release script: %w", err)
	}
	var out []time.Duration
	for range n {
		if err := a.Set(ctx, key, "a", lease).Err(); err != nil {
			return nil, fmt.Errorf("floor handover: hold: %w", err)
		}
		time.Sleep(settle())
		released := make(chan error, 1)
		t0 := time.Now()
		go func() { released <- a.EvalSha(ctx, sha, []string{key}, channel).Err() }()
		select {
		case <-msgs:
		case <-time.After(5 * time.Second):
			return nil, fmt.Errorf("floor handover: no release message within 5s")
		}
		ok, err := b.SetNX(ctx, key, "b", lease).Result()
		d := time.Since(t0)
		if err != nil || !ok {
			return nil, fmt.Errorf("floor handover: take: %v, %w", ok, err)
		}
		if err := <-released; err != nil {
			return nil, fmt.Errorf("floor handover: release: %w", err)
		}
		out = append(out, d)
	}
	return out, nil
}
