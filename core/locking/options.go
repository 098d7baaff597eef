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

// Options configure a DistributedLock. The zero value is a valid
// configuration: every field left zero takes the default its comment
// names (L10), so Options{} is a coordinating lock with no namespace. A
// field that is set to an invalid value is an error naming the field and
// the value, matching ErrInvalidOptions.
type Options struct {
	// Disabled turns coordination off (L4): a disabled lock grants every
	// caller a placeholder lease, sends nothing to the provider, and
	// Coordinated reports false. It is the one field that says so; its
	// zero value coordinates, so a zero Options never silently grants
	// everyone (L10). Default false.
	Disabled bool

	// Enabled is the earlier spelling of !Disabled, read only on Options
	// that start from DefaultOptions (which sets it to true): setting it
	// to false there disables the lock. A literal's zero value means "not
	// set". The lock's own Options report Enabled == !Disabled.
	//
	// Deprecated: set Disabled. Enabled stays so that code written
	// against it keeps compiling and meaning what it meant.
	Enabled bool

	// Namespace prefixes every provider key: {namespace}:lock:{key}. Replicas
	// that must exclude each other need the same namespace. Default "".
	Namespace string

	// UseHashTags wraps the namespace in braces ({namespace}:lock:{key}) so
	// Redis Cluster hashes every key of the namespace to one slot. Requires
	// a nonempty namespace without braces. Default false.
	UseHashTags bool

	// MaxKeyLength bounds consumer keys, in bytes. Zero means
	// DefaultMaxKeyLength (512); negative is invalid.
	MaxKeyLength int

	// MaxLease caps every lease and extension (L5): longer requests are
	// granted MaxLease, not refused. Zero means DefaultMaxLease (5m);
	// negative is invalid.
	MaxLease time.Duration

	// MaxHold bounds automatic extension by Acquire (L6): a Held lock stops
	// extending once it has been held this long. The elector does not use
	// automatic extension. Zero means DefaultMaxHold (1h); negative is
	// invalid.
	MaxHold time.Duration

	// fromDefaults marks Options made by DefaultOptions, whose Enabled is
	// read as written (see Enabled).
	fromDefaults bool
}

// DefaultOptions returns the documented defaults, with every field
// spelled out (Enabled true); a lock built from it behaves as one built
// from the zero Options.
func DefaultOptions() Options {
	return Options{
		Enabled:      true,
		fromDefaults: true,
		MaxKeyLength: DefaultMaxKeyLength,
		MaxLease:     DefaultMaxLease,
		MaxHold:      DefaultMaxHold,
	}
}

// withDefaults returns o with its zero fields set to their defaults, and
// Enabled and Disabled resolved to one answer (see Enabled).
func (o Options) withDefaults() Options {
	o.Disabled = o.Disabled || (o.fromDefaults && !o.Enabled)
	o.Enabled = !o.Disabled
	o.fromDefaults = true
	if o.MaxKeyLength == 0 {
		o.MaxKeyLength = DefaultMaxKeyLength
	}
	if o.MaxLease == 0 {
		o.MaxLease = DefaultMaxLease
	}
	if o.MaxHold == 0 {
		o.MaxHold = DefaultMaxHold
	}
	return o
}

// Validate reports every problem with o at once, each an *OptionError
// naming the Go field and its value and matching ErrInvalidOptions. Zero fields are valid
// (they take their defaults).
func (o Options) Validate() error {
	var errs []error
	bad := func(field string, value any, related []string, format string, a ...any) {
		errs = append(errs, NewOptionError(ErrInvalidOptions, field, value, related, format, a...))
	}
	if o.MaxKeyLength < 0 {
		bad("MaxKeyLength", o.MaxKeyLength, nil, "%d must not be negative", o.MaxKeyLength)
	}
	if o.MaxLease < 0 {
		bad("MaxLease", o.MaxLease, nil, "%v must not be negative", o.MaxLease)
	}
	if o.MaxHold < 0 {
		bad("MaxHold", o.MaxHold, nil, "%v must not be negative", o.MaxHold)
	}
	if reason := badChars(o.Namespace); reason != "" {
		bad("Namespace", o.Namespace, nil, "%q %s", o.Namespace, reason)
	}
	if o.UseHashTags {
		if o.Namespace == "" {
			bad("UseHashTags", o.UseHashTags, []string{"Namespace"}, `requires a namespace, Options.Namespace is ""`)
		} else if strings.ContainsAny(o.Namespace, "{}") {
			bad("Namespace", o.Namespace, []string{"UseHashTags"}, "%q must not contain braces with Options.UseHashTags", o.Namespace)
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
