package locking

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrNotAcquired is returned by TryAcquire when another owner holds the
	// key. Use errors.As with *HeldError for the holder's remaining TTL.
	ErrNotAcquired = errors.New("locking: not acquired")

	// ErrLeaseLost is returned by Extend and Release when the backend no
	// longer stores this lease: it expired, or someone else holds the key.
	ErrLeaseLost = errors.New("locking: lease lost")

	// ErrInvalidKey is returned for a key that is empty, has whitespace or
	// control characters, or is longer than MaxKeyLength. Use errors.As with
	// *KeyError for the key and the reason.
	ErrInvalidKey = errors.New("locking: invalid key")

	// ErrInvalidLease is returned for a zero or negative lease duration.
	ErrInvalidLease = errors.New("locking: invalid lease")

	// ErrUnauthorized is matched by errors of a backend that refused the
	// credentials or the command's permission (Redis WRONGPASS, NOAUTH,
	// NOPERM): a configuration error, not an outage (O4).
	ErrUnauthorized = errors.New("locking: the backend refused the credentials")

	// ErrNotSupported is returned when the lock's provider lacks an
	// optional capability (see Capabilities), or the lock is disabled.
	ErrNotSupported = errors.New("locking: not supported by this lock")

	// ErrInvalidOptions is matched by every error of Options.Validate and
	// New for an option that is set to an invalid value.
	ErrInvalidOptions = errors.New("locking: invalid options")

	// ErrNotAcknowledged is matched by errors of a backend that asks
	// replicas to acknowledge each acquisition and extension (Redis with
	// locking.redis.min_replicas, Q2) when too few did: the acquisition
	// did not happen, the extension does not count. Use errors.As with
	// *AckError for the numbers.
	ErrNotAcknowledged = errors.New("locking: not acknowledged by enough replicas")

	// ErrNotSent is matched by errors of a call the client never sent to
	// the backend although the backend answered other calls meanwhile: it
	// waited in the client's own queue until its context ended, because
	// the process had more calls due than its connections carry in that
	// time. The backend never saw the call, so nothing is left to undo. It
	// is a sign of a saturated process, not of an unreachable backend (a
	// call queued behind one the backend does not answer fails as an
	// outage): an elector whose attempt was not sent waits longer before
	// the next one instead of adding to the queue at once.
	ErrNotSent = errors.New("locking: not sent: the call waited in the client's queue past its deadline")
)

// AckError reports an acquisition or extension that fewer replicas than
// the backend requires acknowledged within its timeout (Q2).
// errors.Is(err, ErrNotAcknowledged) holds for it.
type AckError struct {
	// Op is "acquire" or "extend".
	Op string
	// Key is the provider key.
	Key string
	// Want is the replicas required, Got those that acknowledged.
	Want, Got int
	// Timeout is how long the backend waited for them.
	Timeout time.Duration
}

func (e *AckError) Error() string {
	return fmt.Sprintf("locking: %s %q: %d of %d replicas acknowledged within %v", e.Op, e.Key, e.Got, e.Want, e.Timeout)
}

// Is makes errors.Is(err, ErrNotAcknowledged) hold.
func (e *AckError) Is(target error) bool { return target == ErrNotAcknowledged }

// HeldError is the error of a refused acquisition: Key is held by another
// owner for Remaining more (0 when the backend did not say).
// errors.Is(err, ErrNotAcquired) holds for it.
type HeldError struct {
	Key       string
	Remaining time.Duration
	// Owner is the holder's identity when the backend reported it (P2).
	Owner string
	// TopPriority is the highest priority among the key's live
	// participants, when the backend reported it (B2); 0 otherwise.
	TopPriority int
}

func (e *HeldError) Error() string {
	by := ""
	if e.Owner != "" {
		by = fmt.Sprintf(" by %q", e.Owner)
	}
	if e.Remaining > 0 {
		return fmt.Sprintf("locking: not acquired: %q is held%s for %v more", e.Key, by, e.Remaining)
	}
	return fmt.Sprintf("locking: not acquired: %q is held%s", e.Key, by)
}

// Is makes errors.Is(err, ErrNotAcquired) hold.
func (e *HeldError) Is(target error) bool { return target == ErrNotAcquired }

// KeyError is the error for an invalid key; errors.Is(err, ErrInvalidKey)
// holds for it. Key is quoted in the message so control characters show.
type KeyError struct {
	Key    string
	Reason string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("locking: invalid key %q: %s", e.Key, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidKey) hold.
func (e *KeyError) Is(target error) bool { return target == ErrInvalidKey }

// ErrBadRecord is matched by errors reporting a stored record that does not
// parse (a participant record or a fence written by a foreign writer or an
// incompatible version). Use errors.As with *RecordError for the details.
var ErrBadRecord = errors.New("locking: stored record does not parse")

// RecordError reports a stored record that does not parse: Key is the
// provider key it belongs to, Record names the record (for example the
// participant's field), Value is what is stored (truncated to 64 bytes).
// errors.Is(err, ErrBadRecord) holds for it.
type RecordError struct {
	// Key is the provider key the record belongs to.
	Key string
	// Record names the record within the key (a field name).
	Record string
	// Value is what is stored, at most 64 bytes of it.
	Value string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("locking: key %q: record %q does not parse: %q", e.Key, e.Record, e.Value)
}

// Is makes errors.Is(err, ErrBadRecord) hold.
func (e *RecordError) Is(target error) bool { return target == ErrBadRecord }

// NewRecordError returns a *RecordError, truncating value to 64 bytes.
func NewRecordError(key, record, value string) *RecordError {
	if len(value) > 64 {
		value = value[:64] + "..."
	}
	return &RecordError{Key: key, Record: record, Value: value}
}

// OptionError is one invalid field of an options value (L10): Field is
// the Go field (MaxLease), Value its value, Reason what is wrong with it
// (starting with the value as written, or with ": " and an inner error).
// A reason that relates the field to others names each as
// Options.<Field>, and lists them in Related, so that a layer with its own
// names for the fields (the configuration's keys) can say the same in its
// words without parsing the message. Err is the sentinel of the package
// that reports it (locking.ErrInvalidOptions, leadership.ErrInvalidOptions)
// and Cause an inner error (a *KeyError), both matched by errors.Is and
// errors.As.
type OptionError struct {
	Field   string
	Value   any
	Reason  string
	Related []string
	Err     error
	Cause   error
}

// NewOptionError returns the OptionError of field with value, its reason
// made from format and a (an inner error among a is also its Cause), the
// related fields it names, and the sentinel err.
func NewOptionError(err error, field string, value any, related []string, format string, a ...any) *OptionError {
	e := &OptionError{Field: field, Value: value, Related: related, Err: err, Reason: fmt.Sprintf(format, a...)}
	for _, x := range a {
		if inner, ok := x.(error); ok {
			e.Cause = inner
		}
	}
	return e
}

// Error returns "<package>: invalid options: Options.<Field> <Reason>".
func (e *OptionError) Error() string {
	sep := " "
	if strings.HasPrefix(e.Reason, ":") {
		sep = ""
	}
	prefix := "invalid options"
	if e.Err != nil {
		prefix = e.Err.Error()
	}
	return prefix + ": Options." + e.Field + sep + e.Reason
}

// Unwrap returns Err and Cause, those that are set.
func (e *OptionError) Unwrap() []error {
	var out []error
	for _, x := range []error{e.Err, e.Cause} {
		if x != nil {
			out = append(out, x)
		}
	}
	return out
}
