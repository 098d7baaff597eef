package locking

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Default limits.
const (
	// DefaultMaxKeyLength is the default Options.MaxKeyLength, in bytes.
	DefaultMaxKeyLength = 512
	// DefaultMaxLease is the default Options.MaxLease.
	DefaultMaxLease = 5 * time.Minute
	// DefaultMaxHold is the default Options.MaxHold.
	DefaultMaxHold = time.Hour
)

// Options configure a DistributedLock. Start from DefaultOptions: the zero
// value is disabled and has no limits, which Validate rejects.
type Options struct {
	// Enabled turns coordination on. When false every caller is granted a
	// placeholder lease, nothing reaches the provider, and Coordinated
	// reports false (L4). Default true.
	Enabled bool

	// Namespace prefixes every provider key: {namespace}:lock:{key}. Replicas
	// that must exclude each other need the same namespace. Default "".
	Namespace string

	// UseHashTags wraps the namespace in braces ({namespace}:lock:{key}) so
	// Redis Cluster hashes every key of the namespace to one slot. Requires
	// a nonempty namespace without braces. Default false.
	UseHashTags bool

	// MaxKeyLength bounds consumer keys, in bytes. Default 512.
	MaxKeyLength int

	// MaxLease caps every lease and extension (L5): longer requests are
	// granted MaxLease, not refused. Default 5m.
	MaxLease time.Duration

	// MaxHold bounds automatic extension by Acquire (L6): a Held lock stops
	// extending once it has been held this long. The elector does not use
	// automatic extension. Default 1h.
	MaxHold time.Duration
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{
		Enabled:      true,
		MaxKeyLength: DefaultMaxKeyLength,
		MaxLease:     DefaultMaxLease,
		MaxHold:      DefaultMaxHold,
	}
}

// Validate reports every problem with o at once, each naming the option
// and its value.
func (o Options) Validate() error {
	var errs []error
	if o.MaxKeyLength <= 0 {
		errs = append(errs, fmt.Errorf("locking: max_key_length %d must be positive", o.MaxKeyLength))
	}
	if o.MaxLease <= 0 {
		errs = append(errs, fmt.Errorf("locking: max_lease %v must be positive", o.MaxLease))
	}
	if o.MaxHold <= 0 {
		errs = append(errs, fmt.Errorf("locking: max_hold %v must be positive", o.MaxHold))
	}
	if reason := badChars(o.Namespace); reason != "" {
		errs = append(errs, fmt.Errorf("locking: namespace %q %s", o.Namespace, reason))
	}
	if o.UseHashTags {
		if o.Namespace == "" {
			errs = append(errs, errors.New(`locking: use_hash_tags requires a namespace, namespace is ""`))
		} else if strings.ContainsAny(o.Namespace, "{}") {
			errs = append(errs, fmt.Errorf("locking: namespace %q must not contain braces with use_hash_tags", o.Namespace))
		}
	}
	return errors.Join(errs...)
}

// badChars returns why s is not usable in a key ("" when it is).
func badChars(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			return fmt.Sprintf("contains whitespace %q", r)
		case unicode.IsControl(r):
			return fmt.Sprintf("contains control character %q", r)
		}
	}
	return ""
}

// CheckKey validates a consumer key: nonempty, no whitespace or control
// characters, at most maxKeyLength bytes (when maxKeyLength > 0). The error
// is a *KeyError.
func CheckKey(key string, maxKeyLength int) error {
	if key == "" {
		return &KeyError{Key: key, Reason: "empty"}
	}
	if maxKeyLength > 0 && len(key) > maxKeyLength {
		return &KeyError{Key: key, Reason: fmt.Sprintf("%d bytes exceeds max_key_length %d", len(key), maxKeyLength)}
	}
	if reason := badChars(key); reason != "" {
		return &KeyError{Key: key, Reason: reason}
	}
	return nil
}
