package redislock_test

import (
	"context"
	"testing"

	"github.com/hostloom/hostloom/core/locking/lockingtest"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// TestSentinel_Conformance runs the conformance suite through a Sentinel
// failover client (redis.NewFailoverClient) monitoring a harness master.
func TestSentinel_Conformance(t *testing.T) {
	master := redistest.Start(t)
	sentinel := redistest.StartSentinel(t, master)
	c := redistest.FailoverClient(t, sentinel)
	lockingtest.Run(t, lockingtest.Config{
		Short: redisShort,
		New: func(t *testing.T) lockingtest.Backend {
			if err := c.FlushAll(context.Background()).Err(); err != nil {
				t.Fatalf("FLUSHALL: %v", err)
			}
			// The restricted runs (L9) are the standalone suite's: the
			// provider code they exercise is the same here.
			return fullOnly{backend{c}}
		},
	})
}
