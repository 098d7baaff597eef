package redislock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestMayHaveRun_OnlyWhenTheOutcomeIsUnknown(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"reply lost to an ended context", fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{"read timeout", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, true},
		{"connection reset", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, true},
		{"dial refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, false},
		{"client closed", redis.ErrClosed, false},
		{"pool timeout", redis.ErrPoolTimeout, false},
		{"server error reply", serverError("ERR something"), false},
	} {
		if got := mayHaveRun(c.err); got != c.want {
			t.Errorf("%s: mayHaveRun(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// serverError is an error reply from Redis (go-redis' redis.Error).
type serverError string

func (e serverError) Error() string { return string(e) }
func (serverError) RedisError()     {}
