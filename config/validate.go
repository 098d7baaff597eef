package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
)

// Validate reports every problem with c at once, one *FieldError per
// problem naming its dotted key: a missing locking.provider (G6), the
// checks of the core packages' options, and those of the Redis client.
// Load calls it; call it again after changing a Config in code.
func (c *Config) Validate() error {
	errs := c.validate()
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return errors.Join(out...)
}

func (c *Config) validate() []*FieldError {
	errs := c.Locking.validate(c.src)
	errs = append(errs, c.Leadership.validate(c.src)...)
	errs = append(errs, c.LeaderChannel.validate(c.src)...)
	errs = append(errs, c.backendErrors()...)
	if c.Scheduling.MisfireWindow < 0 {
		errs = append(errs, c.src.fieldError("scheduling.misfire_window", "%v must not be negative", c.Scheduling.MisfireWindow))
	}
	if _, err := c.Scheduling.Location.Load(); err != nil {
		errs = append(errs, c.src.fieldError("scheduling.location", "%q is not a known time zone", string(c.Scheduling.Location)))
	}
	return errs
}

// backendErrors are the checks of the backend in use against the whole
// configuration (ConfigChecker).
func (c *Config) backendErrors() []*FieldError {
	if !c.Locking.Coordinated() {
		return nil
	}
	if cc, ok := c.Locking.Section(c.Locking.Provider).(ConfigChecker); ok {
		return cc.CheckConfig(c.Locking.SectionKeys(c.Locking.Provider), c)
	}
	return nil
}

// Validate checks the section alone, as Config.Validate does: the
// provider is chosen (G6) and registered, the locking.Options checks,
// and the section of the backend in use (Section.Validate). Every problem is a *FieldError; they are
// joined. lockbuild.Build calls it.
func (l LockingConfig) Validate() error {
	errs := l.validate(l.src)
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return errors.Join(out...)
}

func (l LockingConfig) validate(src sources) []*FieldError {
	var errs []*FieldError
	if err := checkBackends(l.backends); err != nil {
		errs = append(errs, &FieldError{Key: "locking.provider", Reason: err.Error()})
	}
	switch p := l.Provider; {
	case p == "":
		errs = append(errs, &FieldError{Key: "locking.provider", Reason: fmt.Sprintf(
			"is not set: choose %s (memory coordinates this process only)", l.providerList())})
	case !slices.Contains(l.Providers(), p):
		errs = append(errs, l.unknownProvider(src))
	}
	sectionKey := func(opt string) (string, string) { return "locking." + opt, "locking." + opt }
	errs = append(errs, coreErrors(src, "locking", lockingKeys, l.Options().Validate(), sectionKey)...)
	if s := l.Section(l.Provider); s != nil && l.Coordinated() {
		sec := SectionKeys{prefix: "locking." + string(l.Provider), src: src}
		own := s.Validate(sec)
		slices.SortStableFunc(own, func(a, b *FieldError) int { return strings.Compare(a.Key, b.Key) })
		errs = append(errs, own...)
	}
	return errs
}

// unknownProvider is the error for a locking.provider that is neither
// memory, disabled nor a registered backend's name.
func (l LockingConfig) unknownProvider(src sources) *FieldError {
	return &FieldError{Key: "locking.provider", Source: src.of("locking.provider"),
		Reason: fmt.Sprintf("%q is not one of %s (the providers this program links)", string(l.Provider), l.providerList())}
}

// fieldError is a FieldError for key with the key's source.
func (s sources) fieldError(key, format string, a ...any) *FieldError {
	return &FieldError{Key: key, Source: s.of(key), Reason: fmt.Sprintf(format, a...)}
}

// validate checks the section-wide options, then each role's: a role's
// problem is reported under the role's key unless the section already
// reported it (the role inherits the values concerned).
func (l LeadershipConfig) validate(src sources) []*FieldError {
	section := func(opt string) (string, string) { return "leadership." + opt, "leadership." + opt }
	errs := coreErrors(src, "leadership", leadershipKeys, l.Options("").Validate(), section)
	reported := map[string]bool{}
	for _, e := range errs {
		reported[e.Reason] = true
	}
	for _, r := range sortedKeys(l.Roles) {
		o := l.Roles[r]
		// The role's own key is checked when its elector is built (K4, K5);
		// here its timing, policy and format.
		role := func(opt string) (string, string) {
			key := "leadership.roles." + r + "." + opt
			if o.sets(opt) {
				return key, key
			}
			return key, "leadership." + opt
		}
		for _, e := range coreErrors(src, "leadership.roles."+r, leadershipKeys, l.Options(r).Validate(), role) {
			if !reported[e.Reason] {
				errs = append(errs, e)
			}
		}
	}
	return errs
}

// lockingKeys are the keys of the locking section, by the locking.Options
// field each sets (for the Field of a *locking.OptionError).
var lockingKeys = map[string]string{
	"Namespace":    "namespace",
	"UseHashTags":  "use_hash_tags",
	"MaxKeyLength": "max_key_length",
	"MaxLease":     "max_lease",
	"MaxHold":      "max_hold",
}

// leadershipKeys are the keys of the leadership section (and of a role's
// overrides), by the leadership.Options field each sets.
var leadershipKeys = map[string]string{
	"Lease":             "lease",
	"RenewInterval":     "renew_interval",
	"RetryInterval":     "retry_interval",
	"SafetyMargin":      "safety_margin",
	"WhenUncoordinated": "when_uncoordinated",
	"LockKeyFormat":     "lock_key_format",
	"LockKey":           "lock_key",
	"Balance":           "balance",
	"Priority":          "priority",
}

// sets reports whether the overrides set the option of key (a key of
// leadershipKeys), rather than inheriting the section-wide value.
func (o RoleOverrides) sets(key string) bool {
	switch key {
	case "lease":
		return o.Lease != nil
	case "renew_interval":
		return o.RenewInterval != nil
	case "retry_interval":
		return o.RetryInterval != nil
	case "safety_margin":
		return o.SafetyMargin != nil
	case "when_uncoordinated":
		return o.WhenUncoordinated != nil
	case "lock_key_format":
		return o.LockKeyFormat != nil
	case "lock_key":
		return o.LockKey != nil
	case "balance":
		return o.Balance != nil
	case "priority":
		return o.Priority != nil
	}
	return false
}

// coreErrors turns the joined errors of a core Validate into FieldErrors.
// Each *locking.OptionError names its Go field and the fields its reason
// relates it to; keyOf gives their keys, and keys maps a key to the key
// to report it under and the key its value came from (a role's override,
// or the section-wide key the role inherits). The error names the first
// of the fields whose value the scope sets itself, the reason in the
// configuration's words (Options.RenewInterval is renew_interval), and
// the sources of every field it names. An error that is not an
// OptionError is reported under scope as it is.
func coreErrors(src sources, scope string, keyOf map[string]string, err error, keys func(opt string) (name, from string)) []*FieldError {
	if err == nil {
		return nil
	}
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	out := make([]*FieldError, 0, len(parts))
	for _, p := range parts {
		var oe *locking.OptionError
		if !errors.As(p, &oe) || keyOf[oe.Field] == "" {
			out = append(out, &FieldError{Key: scope, Source: src.of(scope), Reason: p.Error()})
			continue
		}
		opts := []string{keyOf[oe.Field]}
		reason := oe.Reason
		for _, f := range oe.Related {
			if k := keyOf[f]; k != "" {
				opts = append(opts, k)
				reason = strings.ReplaceAll(reason, "Options."+f, k)
			}
		}
		sep := " "
		if strings.HasPrefix(reason, ":") {
			sep = ""
		}
		reason = opts[0] + sep + reason
		primary := 0
		for i, o := range opts {
			if name, from := keys(o); name == from {
				primary = i
				break
			}
		}
		opts[0], opts[primary] = opts[primary], opts[0]
		name, _ := keys(opts[0])
		from := make([]string, len(opts))
		for i, o := range opts {
			_, from[i] = keys(o)
		}
		out = append(out, &FieldError{Key: name, Source: src.describe(from), Reason: reason})
	}
	return out
}

// describe names the sources of keys: the first key's source, then each
// other key whose source differs, as "key: source".
func (s sources) describe(keys []string) string {
	if s == nil || len(keys) == 0 {
		return ""
	}
	first := s.of(keys[0])
	parts := []string{first}
	for _, k := range keys[1:] {
		if other := s.of(k); other != first {
			parts = append(parts, k+": "+other)
		}
	}
	return strings.Join(parts, "; ")
}

func (c LeaderChannelConfig) validate(src sources) []*FieldError {
	var errs []*FieldError
	if c.Capacity <= 0 {
		errs = append(errs, src.fieldError("leader_channel.capacity", "%d must be positive", c.Capacity))
	}
	// reflect: enumNames is keyed by type (see there).
	if names := enumNames(reflect.TypeFor[leadership.FullMode]()); !slices.Contains(names, c.FullMode.String()) {
		errs = append(errs, src.fieldError("leader_channel.full_mode", "%d is not one of %s", int(c.FullMode), strings.Join(names, ", ")))
	}
	if c.DropReportInterval < 0 {
		errs = append(errs, src.fieldError("leader_channel.drop_report_interval", "%v must not be negative", c.DropReportInterval))
	}
	return errs
}
