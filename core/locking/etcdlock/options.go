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
