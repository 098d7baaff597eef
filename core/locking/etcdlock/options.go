package etcdlock

import (
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"
)

// DefaultPrefix is the key prefix when Options.Prefix is "".
const DefaultPrefix = "hostloom/"

// MaxPrefixLength is the longest Options.Prefix accepted, in bytes.
const MaxPrefixLength = 256

// ErrInvalidOptions is matched by the error of New for an invalid Options
// field; the message names the field and the value.
var ErrInvalidOptions = errors.New("etcdlock: invalid options")

// Options configures a Provider. The zero value is valid: every zero field
// takes the default its documentation states.
type Options struct {
	// Prefix is prepended to every key the provider stores (default
	// DefaultPrefix, "hostloom/"). Two applications that must not see each
	// other's roles use two prefixes; an etcd user whose role grants a
	// key range (etcdctl role grant-permission --prefix) needs the range
	// to cover Prefix. It must be valid UTF-8 without control characters
	// (etcd stores any bytes, but such a key cannot be typed in etcdctl,
	// and a NUL byte separates the provider's records), at most
	// MaxPrefixLength bytes.
	Prefix string

	// ReconnectMax bounds the backoff between attempts to restore a lost
	// watch (default 1s; the first retry waits 10ms, then the wait
	// doubles).
	ReconnectMax time.Duration

	// ExpiryQuarantine makes a key freed by the end of its lease (it ran
	// out, or etcd revoked it), rather than by a release, wait one lease
	// before any acquisition takes it: the longer of the caller's TTL and
	// the last holder's granted TTL this provider saw, from when this
	// provider first found the key so. A holder whose lease etcd revoked
	// while it still counted on it (the defect the README describes: a
	// raft leader stopped for longer than a lease revokes leases the new
	// leader kept alive) has then stopped leading before anyone else
	// starts, even when it could hear nothing. The cost: a takeover after
	// a crash waits one more lease. Default false: candidates take an
	// expired key 50 ms after hearing of the expiry, the holder's head
	// start to find its lease gone.
	ExpiryQuarantine bool
}

// Validate reports the first invalid field, naming it and its value; the
// error matches ErrInvalidOptions.
func (o Options) Validate() error {
	if len(o.Prefix) > MaxPrefixLength {
		return fmt.Errorf("%w: Prefix %q: %d bytes, at most %d", ErrInvalidOptions, o.Prefix, len(o.Prefix), MaxPrefixLength)
	}
	for i, r := range o.Prefix {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(o.Prefix[i:]); n <= 1 {
				return fmt.Errorf("%w: Prefix %q: invalid UTF-8 at byte %d", ErrInvalidOptions, o.Prefix, i)
			}
		}
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: Prefix %q: control character %q at byte %d: want printable characters", ErrInvalidOptions, o.Prefix, r, i)
		}
	}
	if o.ReconnectMax < 0 {
		return fmt.Errorf("%w: ReconnectMax %v must not be negative", ErrInvalidOptions, o.ReconnectMax)
	}
	return nil
}

// withDefaults fills the zero fields.
func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.ReconnectMax == 0 {
		o.ReconnectMax = time.Second
	}
	return o
}
