package leadershipfx

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
)

// check is the role's composition check (F1: K5, and T2 strictly), its
// error naming the role and, when the role was built from config, the
// dotted keys and sources of the values at fault (O4).
func (ro *Handle) check() error {
	err := leadership.CheckComposition(ro.name, *ro.opts, ro.lock)
	if err == nil {
		return nil
	}
	if f, limit := ro.fieldError(err); f != nil {
		err = &configErr{field: f, limit: limit, cause: err}
	}
	return roleError(ro.name, err)
}

// fieldError names the config key behind err, and the lock's limit it
// broke with its source; nil when err is not about a configured value or
// the role has no config.
func (ro *Handle) fieldError(err error) (*config.FieldError, string) {
	if reflect.ValueOf(ro.in.cfg).IsZero() {
		return nil, ""
	}
	var lim *leadership.LeaseLimitError
	if errors.As(err, &lim) {
		key := ro.setKey("lease")
		return &config.FieldError{Key: key, Source: ro.in.cfg.Source(key),
			Reason: fmt.Sprintf("%v exceeds locking.max_lease %v", lim.Lease, lim.MaxLease)}, ro.lockingSource("max_lease")
	}
	var ke *locking.KeyError
	if errors.As(err, &ke) && strings.Contains(ke.Reason, "max_key_length") {
		key := ro.setKey("lock_key")
		if ro.in.cfg.Source(key) == "default" {
			key = ro.setKey("lock_key_format")
		}
		return &config.FieldError{Key: key, Source: ro.in.cfg.Source(key),
			Reason: fmt.Sprintf("key %q for role %s: %s", ke.Key, quoteRole(ro.name), ke.Reason)}, ro.lockingSource("max_key_length")
	}
	return nil, ""
}

// setKey is the dotted key that set field for the role: its override
// when one was set, else the section's own.
func (ro *Handle) setKey(field string) string {
	override := "leadership.roles." + ro.name + "." + field
	if src := ro.in.cfg.Source(override); src != "" && src != "default" {
		return override
	}
	return "leadership." + field
}

// lockingSource says where locking.<field> was set, when known.
func (ro *Handle) lockingSource(field string) string {
	if reflect.ValueOf(ro.in.lcfg).IsZero() {
		return ""
	}
	return fmt.Sprintf("locking.%s from %s", field, ro.in.lcfg.Source("locking."+field))
}

// configErr is a composition error with the config keys behind it: the
// error, then where the values came from; both the FieldError and the
// cause match errors.As.
type configErr struct {
	field *config.FieldError
	limit string // the lock's limit and its source, if known
	cause error
}

func (e *configErr) Error() string {
	where := e.field.Key + " from " + e.field.Source
	if e.limit != "" {
		where += "; " + e.limit
	}
	return e.cause.Error() + " (" + where + ")"
}

func (e *configErr) Unwrap() []error { return []error{e.field, e.cause} }
