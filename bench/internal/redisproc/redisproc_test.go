package redisproc_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/bench/internal/redisproc"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

func TestStart_StatsCountCommands(t *testing.T) {
	s, err := redisproc.Start("")
	if errors.Is(err, redistest.ErrNoServer) && !redistest.Required() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	v, err := redisproc.Version(ctx, c)
	if err != nil || v == "" {
		t.Fatalf("Version = %q, %v", v, err)
	}
	before, err := redisproc.CommandStats(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	after, err := redisproc.CommandStats(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	delta, total := redisproc.Delta(before, after)
	if delta["set"] != 3 || total != 3 {
		t.Fatalf("Delta = %v, total %d; want set=3, total 3 (INFO and CONFIG not counted)", delta, total)
	}
}

func TestStart_MissingBinaryNamed(t *testing.T) {
	_, err := redisproc.Start("/nonexistent/redis-server")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/redis-server") {
		t.Fatalf("Start = %v, want an error naming the binary", err)
	}
}
