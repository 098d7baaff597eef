package config

import (
	"fmt"
	"reflect"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/scheduling/policy"
)

// ProviderName selects the lock backend: locking.provider.
type ProviderName string

// The providers config knows itself; every other locking.provider value
// names a backend the program registers with WithBackends.
const (
	// ProviderMemory is an in-process lock: it coordinates the electors of
	// one process only. For development, tests and single instances; it is
	// used only when chosen (G6).
	ProviderMemory ProviderName = "memory"
	// ProviderDisabled grants every caller a placeholder lease: nothing is
	// coordinated and leadership.when_uncoordinated applies.
	ProviderDisabled ProviderName = "disabled"
)

// String returns the name.
func (p ProviderName) String() string { return string(p) }

// enumNames lists the values of an enum setting in config spelling, for
// Keys and for errors; nil when t is not an enum. The core enums accept
// other spellings too (DropOldest, Lead); config accepts exactly these.
//
// reflect: it is keyed by type because mapstructure hands decode hooks a
// reflect.Type, and typeAt resolves a key to one; the core enums are types
// of other packages, which cannot gain a method for config's spelling.
func enumNames(t reflect.Type) []string {
	switch t {
	case reflect.TypeFor[leadership.WhenUncoordinated]():
		return []string{leadership.Follow.String(), leadership.Lead.String()}
	case reflect.TypeFor[leadership.FullMode]():
		return []string{leadership.Wait.String(), leadership.DropWrite.String(), leadership.DropNewest.String(), leadership.DropOldest.String()}
	case reflect.TypeFor[policy.OverlapPolicy]():
		return []string{policy.OverlapSkip.String(), policy.OverlapBufferOne.String(), policy.OverlapCancelPrevious.String()}
	case reflect.TypeFor[policy.CatchUpPolicy]():
		return []string{policy.CatchUpLatest.String(), policy.CatchUpAll.String(), policy.CatchUpNone.String()}
	}
	return nil
}

// TimeZone is a time zone name for policy.location: "UTC", "Local",
// or an IANA name such as "Europe/Paris". It is checked when loaded; ""
// means UTC.
type TimeZone string

// UnmarshalText accepts a name time.LoadLocation knows.
func (z *TimeZone) UnmarshalText(text []byte) error {
	if _, err := time.LoadLocation(string(text)); err != nil || len(text) == 0 {
		return fmt.Errorf("%q is not a known time zone (UTC, Local, or an IANA name such as Europe/Paris)", string(text))
	}
	*z = TimeZone(text)
	return nil
}

// Load returns the time zone.
func (z TimeZone) Load() (*time.Location, error) {
	if z == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(string(z))
	if err != nil {
		return nil, fmt.Errorf("config: policy.location %q: %w", string(z), err)
	}
	return loc, nil
}
