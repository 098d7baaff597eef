// Package redisproc starts a private redis-server on loopback for the
// benchmark harness and reads its statistics. Starting goes through the
// main module's test launcher (core/testing/redistest), so the benchmarks, the
// unit tests and the chaos harness run their servers the same way.
package redisproc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/testing/redistest"
)

// Server is a private redis-server process on 127.0.0.1; Stop ends it and
// removes its directory.
type Server = redistest.Server

// maxClients is the server's client limit: the scale benchmarks open
// thousands of connections, more than redis-server's default 10000.
const maxClients = "20000"

// Start launches bin on a free loopback port with persistence off, and
// waits until it answers PING. bin is a path or a name on PATH; empty means
// the launcher's default (HOSTLOOM_REDIS_SERVER, else redis-server, else
// valkey-server).
func Start(bin string) (*Server, error) {
	s, err := redistest.Launch(redistest.Options{Bin: bin, Args: []string{"--maxclients", maxClients}})
	if err != nil {
		return nil, fmt.Errorf("redisproc: %w", err)
	}
	return s, nil
}

// Version returns the server's redis_version.
func Version(ctx context.Context, c *redis.Client) (string, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v, nil
		}
	}
	return "", errors.New("redisproc: no redis_version in INFO")
}

// CommandStats returns the calls per command from INFO commandstats, without
// the INFO and CONFIG commands the harness itself sends.
func CommandStats(ctx context.Context, c *redis.Client) (map[string]int64, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, fields, ok := strings.Cut(rest, ":")
		if !ok || name == "info" || strings.HasPrefix(name, "config") {
			continue
		}
		for _, f := range strings.Split(fields, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("redisproc: commandstats %q: %w", line, err)
				}
				out[name] = n
			}
		}
	}
	return out, nil
}

// Delta returns after-before per command and the total.
func Delta(before, after map[string]int64) (map[string]int64, int64) {
	d := map[string]int64{}
	var total int64
	for k, v := range after {
		if n := v - before[k]; n != 0 {
			d[k] = n
			total += n
		}
	}
	return d, total
}
