package leadership

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

// Defaults of Options.
const (
	// DefaultLease is the default Options.Lease.
	DefaultLease = 15 * time.Second
	// DefaultRenewInterval is the default Options.RenewInterval.
	DefaultRenewInterval = 5 * time.Second
	// DefaultRetryInterval is the default Options.RetryInterval.
	DefaultRetryInterval = 2 * time.Second
	// DefaultLockKeyFormat is the default Options.LockKeyFormat.
	DefaultLockKeyFormat = "leader:" + RolePlaceholder
)

// RolePlaceholder is the placeholder a LockKeyFormat must contain (K2). It
// is case-sensitive; every occurrence is replaced by the role.
const RolePlaceholder = "{role}"

// MaxWait is the longest wait the election loop ever schedules (T3): every
// cadence (Lease, RenewInterval, RetryInterval) must be at most MaxWait.
const MaxWait = 24 * time.Hour

// RenewRetryFloor is the shortest gap between two renewal attempts after a
// renewal failed at the provider (E6): retries are never closer than this.
const RenewRetryFloor = 10 * time.Millisecond

// Options configure an Elector. The zero value is a valid configuration:
// every field left zero takes the default its comment names (L10), so
// Options{} is DefaultOptions(). A field set to an invalid value is an
// error naming the field and the value, matching ErrInvalidOptions. An
// Elector copies its Options at construction: changing the value
// afterwards changes nothing (K6).
type Options struct {
	// Lease is how long an acquisition or a renewal holds the role. A
	// crashed leader is replaced at most this long after its last renewal.
	// It must be at most the lock's MaxLease; a container-free elector is
	// capped by the lock (T2). Zero means DefaultLease (15s).
	Lease time.Duration

	// RenewInterval is the leader's renewal cadence; at most Lease/2 (T1).
	// Zero means DefaultRenewInterval (5s), or Lease/3 when that is
	// shorter (so a short Lease alone is valid).
	RenewInterval time.Duration

	// RetryInterval is a candidate's cadence between acquisition attempts
	// (E1) and the back-off after an unexpected fault (E10). A candidate
	// also wakes sooner on a release notification or when the holder's
	// remaining lease runs out. Zero means DefaultRetryInterval (2s).
	RetryInterval time.Duration

	// WhenUncoordinated is the policy over a lock that does not coordinate
	// (Coordinated() == false): Follow never leads, Lead leads without
	// coordination (E9). Zero means Follow.
	WhenUncoordinated WhenUncoordinated

	// LockKeyFormat names the lock key; it must contain RolePlaceholder,
	// "{role}", and every occurrence is replaced by the role; all other
	// characters are literal, braces included (K1, K2). Ignored when LockKey
	// is set. Empty means DefaultLockKeyFormat ("leader:{role}").
	LockKeyFormat string

	// LockKey, when set, is the exact consumer key, used literally (no
	// placeholder expansion); LockKeyFormat is then not validated (K1).
	// Default "".
	LockKey string

	// SafetyMargin shortens the local term: it ends at sent + granted −
	// SafetyMargin, so clock drift between this process and the backend
	// cannot make the term outlive the backend's lease (G4). 0 means the
	// default, Lease/100 + 2ms, clamped below RenewInterval/2; a positive
	// value is used as given and must be below RenewInterval. Default 0.
	SafetyMargin time.Duration

	// Balance makes this elector part of its process's balance group: the
	// group's instances spread the namespace's balanced roles evenly over
	// the live participants (B1). Default false.
	Balance bool

	// Priority ranks this instance among the role's participants: a higher
	// priority wins a free role and preempts a lower-priority leader
	// cooperatively (B2). It must fit in an int32. Default 0.
	Priority int
}

// EffectiveSafetyMargin is the margin the elector subtracts from each
// granted lease (G4): SafetyMargin when positive, else Lease/100 + 2ms
// clamped below RenewInterval/2.
func (o Options) EffectiveSafetyMargin() time.Duration {
	o = o.withDefaults()
	if o.SafetyMargin > 0 {
		return o.SafetyMargin
	}
	m := o.Lease/100 + 2*time.Millisecond
	if half := o.RenewInterval / 2; m >= half {
		m = max(half-1, 0)
	}
	return m
}

// withDefaults returns o with its zero fields set to their defaults
// (L10). Negative values are kept, for Validate to refuse.
func (o Options) withDefaults() Options {
	if o.Lease == 0 {
		o.Lease = DefaultLease
	}
	if o.RenewInterval == 0 {
		o.RenewInterval = DefaultRenewInterval
		if third := o.Lease / 3; o.Lease > 0 && third < o.RenewInterval {
			o.RenewInterval = max(third, time.Nanosecond)
		}
	}
	if o.RetryInterval == 0 {
		o.RetryInterval = DefaultRetryInterval
	}
	if o.WhenUncoordinated == 0 {
		o.WhenUncoordinated = Follow
	}
	if o.LockKeyFormat == "" {
		o.LockKeyFormat = DefaultLockKeyFormat
	}
	return o
}

// ErrInvalidOptions is matched by every error of Options.Validate (and of
// NewElector for its options) for a field set to an invalid value.
var ErrInvalidOptions = errors.New("leadership: invalid options")

// invalid returns the *locking.OptionError of field with value, matching
// ErrInvalidOptions; related are the other fields its reason names.
func invalid(field string, value any, related []string, format string, a ...any) error {
	return locking.NewOptionError(ErrInvalidOptions, field, value, related, format, a...)
}

// DefaultOptions returns the documented defaults, with every field spelled
// out; it equals the zero Options after defaults are applied.
func DefaultOptions() Options {
	return Options{
		Lease:             DefaultLease,
		RenewInterval:     DefaultRenewInterval,
		RetryInterval:     DefaultRetryInterval,
		WhenUncoordinated: Follow,
		LockKeyFormat:     DefaultLockKeyFormat,
	}
}

// Validate checks syntax and timing (K7, T1, T3) and reports every problem
// at once, each naming the Go field and its value and matching
// ErrInvalidOptions. Zero fields take their defaults first (L10). It does
// not know the role or the lock: ValidateFor also checks the resolved key,
// CheckLease the lock's lease cap.
func (o Options) Validate() error {
	o = o.withDefaults()
	errs := o.timingErrors()
	errs = append(errs, o.keySyntaxErrors()...)
	return errors.Join(errs...)
}

// ValidateFor is Validate plus the role and the resolved key: nonempty, no
// whitespace or control characters, at most maxKeyLength bytes when
// maxKeyLength > 0 (K4, K5, K7).
func (o Options) ValidateFor(role string, maxKeyLength int) error {
	o = o.withDefaults()
	errs := o.timingErrors()
	if _, err := o.ResolveLockKey(role, maxKeyLength); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// timingErrors checks T1 and T3 and the policy.
func (o Options) timingErrors() []error {
	var errs []error
	cadence := func(name string, d time.Duration) bool {
		switch {
		case d <= 0:
			errs = append(errs, invalid(name, d, nil, "%v must be positive", d))
		case d > MaxWait:
			errs = append(errs, invalid(name, d, nil, "%v exceeds the longest wait %v", d, MaxWait))
		default:
			return true
		}
		return false
	}
	leaseOK := cadence("Lease", o.Lease)
	renewOK := cadence("RenewInterval", o.RenewInterval)
	cadence("RetryInterval", o.RetryInterval)
	if leaseOK && renewOK && o.RenewInterval > o.Lease/2 {
		errs = append(errs, invalid("RenewInterval", o.RenewInterval, []string{"Lease"}, "%v exceeds half of Options.Lease %v", o.RenewInterval, o.Lease))
	}
	if o.SafetyMargin < 0 || (renewOK && o.SafetyMargin >= o.RenewInterval) {
		errs = append(errs, invalid("SafetyMargin", o.SafetyMargin, []string{"RenewInterval"}, "%v must be at least 0 and below Options.RenewInterval %v", o.SafetyMargin, o.RenewInterval))
	}
	if o.Priority < math.MinInt32 || o.Priority > math.MaxInt32 {
		errs = append(errs, invalid("Priority", o.Priority, nil, "%d is outside the int32 range", o.Priority))
	}
	if o.WhenUncoordinated != Follow && o.WhenUncoordinated != Lead {
		errs = append(errs, invalid("WhenUncoordinated", o.WhenUncoordinated, nil, "%d must be follow (%d) or lead (%d)", int(o.WhenUncoordinated), int(Follow), int(Lead)))
	}
	return errs
}

// CheckLease checks T2 strictly: the lease must be at most the lock's
// MaxLease when the lock reports limits (locking.Limits). The error names
// the role and both values. The fx composition calls it before starting;
// a container-free Elector instead caps its lease at MaxLease.
func CheckLease(role string, o Options, lock locking.Lock) error {
	o = o.withDefaults()
	maxLease := resolveCapabilities(lock).maxLease
	if maxLease > 0 && o.Lease > maxLease {
		return &LeaseLimitError{Role: role, Lease: o.Lease, MaxLease: maxLease}
	}
	return nil
}

// LeaseLimitError is CheckLease's error: a role's Lease above the lock's
// MaxLease (T2, strictly).
type LeaseLimitError struct {
	Role     string
	Lease    time.Duration
	MaxLease time.Duration
}

// Error names the role and both durations.
func (e *LeaseLimitError) Error() string {
	return fmt.Sprintf("leadership: role %q: lease %v exceeds locking max_lease %v", e.Role, e.Lease, e.MaxLease)
}

// CheckComposition checks everything a composition must check before
// starting an elector for role over lock: Options (T1, T3), the resolved
// key against the lock's MaxKeyLength (K4, K5) and the lease against the
// lock's MaxLease (T2, strictly). It reports every problem at once.
func CheckComposition(role string, o Options, lock locking.Lock) error {
	if lock == nil {
		return fmt.Errorf("leadership: role %q: nil lock", role)
	}
	return errors.Join(o.ValidateFor(role, resolveCapabilities(lock).maxKeyLength), CheckLease(role, o, lock))
}
