package buildapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

// DefaultOpenTimeout bounds Open's first contact when neither
// OpenOptions.Timeout nor the backend names a bound.
const DefaultOpenTimeout = 5 * time.Second

// OpenOptions configure an Opener's Open (lockbuild.OpenOptions).
type OpenOptions struct {
	// Timeout bounds the first contact; 0 leaves the bound to the backend
	// (its connect timeout, else DefaultOpenTimeout).
	Timeout time.Duration
	// TimeoutFrom names where Timeout came from in an error ("--timeout").
	// Default "": the error names the backend's own key.
	TimeoutFrom string
}

// Bound is the timeout an Opener uses for its first contact, and how an
// error names it: o.Timeout when set (named by o.TimeoutFrom), else own,
// the backend's connect timeout (named by ownKey, such as
// "locking.redis.dial_timeout"), else DefaultOpenTimeout.
func Bound(o OpenOptions, own time.Duration, ownKey string) (time.Duration, string) {
	switch {
	case o.Timeout > 0:
		from := o.TimeoutFrom
		if from == "" {
			from = "the timeout given"
		}
		return o.Timeout, from
	case own > 0:
		return own, ownKey
	}
	return DefaultOpenTimeout, "the default"
}

// Opened is what an Opener returns (lockbuild.Opened).
type Opened struct {
	// Provided is what Build would have returned; its Check is not run
	// again (Open contacted the server).
	Provided
	// Timeout is the bound the first contact had: a command bounds each
	// of its requests by it too.
	Timeout time.Duration
	// Target is where the lock lives, as a command shows it.
	Target Target
	// JobKeys, when not nil, lists the provider keys starting with prefix
	// (as locking.DistributedLock.JobKey returns them) that hold job
	// records: the scheduler's store has no listing of its own. For
	// operators' tools, not hot paths.
	JobKeys func(ctx context.Context, prefix string) ([]string, error)
	// Notes, when not nil, keeps short notes beside the lock's keys for a
	// limited time: the hostloom CLI marks a lease it deletes by force,
	// so that a watch can tell the delete from a release.
	Notes Notes
}

// Notes keeps short-lived notes under keys of its own (provider keys with
// a suffix no lock key has).
type Notes interface {
	// SetNote stores value under key for ttl.
	SetNote(ctx context.Context, key, value string, ttl time.Duration) error
	// Note reads key's note; ok is false when there is none.
	Note(ctx context.Context, key string) (value string, ok bool, err error)
	// DeleteNote removes key's note.
	DeleteNote(ctx context.Context, key string) error
}

// Target describes where a lock lives, without a secret.
type Target struct {
	// Addrs are the server addresses (host:port or URLs).
	Addrs []string
	// Username is the user the backend authenticates as; "" when none.
	Username string
	// PasswordSet reports whether a password (or a DSN's) is configured.
	PasswordSet bool
	// Database and Table, for a database backend.
	Database, Table string
}

// UnreachableError is a first contact that failed for a cause other than
// the configuration: where, and why, in one line.
type UnreachableError struct {
	// Where names the server: the provider and its addresses ("redis
	// 127.0.0.1:6379"), never a secret.
	Where string
	// Reason is the cause in words: "connection refused", "no answer
	// within 2s (locking.redis.dial_timeout)".
	Reason string
	// Err is the error the backend's client returned.
	Err error
}

func (e *UnreachableError) Error() string {
	if e.Reason == "interrupted" {
		return e.Where + ": interrupted"
	}
	return e.Where + " unreachable: " + e.Reason
}

// Unwrap returns Err.
func (e *UnreachableError) Unwrap() error { return e.Err }

// Unreachable words a failed first contact with the server where names:
// no answer within timeout (named after bound), interrupted, connection
// refused, or the first line of err.
func Unreachable(where string, timeout time.Duration, bound string, err error) *UnreachableError {
	u := &UnreachableError{Where: where, Err: err}
	msg := err.Error()
	switch {
	case errors.Is(err, context.Canceled):
		u.Reason = "interrupted"
	case errors.Is(err, syscall.ECONNREFUSED), strings.Contains(msg, "connection refused"):
		u.Reason = "connection refused"
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		u.Reason = fmt.Sprintf("no answer within %v (%s)", timeout, bound)
	default:
		line, _, _ := strings.Cut(msg, "\n")
		u.Reason = line
	}
	return u
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}
