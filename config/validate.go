package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/hostloom/hostloom/core/leadership"
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
	errs = append(errs, coreErrors(src, "locking", reflect.TypeFor[LockingConfig](), l.Options().Validate(), sectionKey)...)
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
	t := reflect.TypeFor[LeadershipConfig]()
	section := func(opt string) (string, string) { return "leadership." + opt, "leadership." + opt }
	errs := coreErrors(src, "leadership", t, l.Options("").Validate(), section)
	reported := map[string]bool{}
	for _, e := range errs {
		reported[e.Reason] = true
	}
	for _, r := range sortedKeys(l.Roles) {
		// reflect: whether the role overrides an option is whether its
		// pointer field is set; the option is known by its config name
		// (from a core message), and a configuration built in code has
		// no source record to ask instead.
		o := reflect.ValueOf(l.Roles[r])
		// The role's own key is checked when its elector is built (K4, K5);
		// here its timing, policy and format.
		role := func(opt string) (string, string) {
			key := "leadership.roles." + r + "." + opt
			if f, ok := fieldByKey(o.Type(), opt); ok && !o.FieldByIndex(f.Index).IsNil() {
				return key, key
			}
			return key, "leadership." + opt
		}
		for _, e := range coreErrors(src, "leadership.roles."+r, t, l.Options(r).Validate(), role) {
			if !reported[e.Reason] {
				errs = append(errs, e)
			}
		}
	}
	return errs
}

// coreErrors turns the joined errors of a core Validate ("pkg: option
// value …", options in config spelling) into FieldErrors. keys maps an
// option named in a message to the key to report it under and the key its
// value came from (a role's override, or the section-wide key the role
// inherits). The error names the first option whose value the scope sets
// itself, and the sources of every option the message names.
//
// reflect: t is the section's type; a word of a core message is an option
// when it is one of t's koanf tags (fieldByKey). The core packages do not
// know config's key names, and koanf only knows the keys a source set.
func coreErrors(src sources, scope string, t reflect.Type, err error, keys func(opt string) (name, from string)) []*FieldError {
	if err == nil {
		return nil
	}
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	out := make([]*FieldError, 0, len(parts))
	for _, p := range parts {
		msg := p.Error()
		if pre, rest, ok := strings.Cut(msg, ": "); ok && !strings.Contains(pre, " ") {
			msg = rest
		}
		msg = strings.TrimPrefix(msg, "invalid options: ")
		msg = configSpelling(msg, t)
		var opts []string
		for _, w := range strings.Fields(msg) {
			w = strings.TrimRight(w, ":,;")
			if _, ok := fieldByKey(t, w); ok && !slices.Contains(opts, w) {
				opts = append(opts, w)
			}
		}
		if len(opts) == 0 {
			out = append(out, &FieldError{Key: scope, Source: src.of(scope), Reason: msg})
			continue
		}
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
		out = append(out, &FieldError{Key: name, Source: src.describe(from), Reason: msg})
	}
	return out
}

// goField matches a Go field of a core Options type as core errors name
// it (Options.RenewInterval).
var goField = regexp.MustCompile(`\bOptions\.([A-Z][A-Za-z0-9]*)`)

// configSpelling rewrites the Go field names in a core error message
// (Options.MaxLease) as the keys of t that hold them (max_lease), so the
// message speaks the configuration's words. A field t does not have is
// left as it is.
func configSpelling(msg string, t reflect.Type) string {
	return goField.ReplaceAllStringFunc(msg, func(m string) string {
		f, ok := t.FieldByName(m[len("Options."):])
		if !ok {
			return m
		}
		if key := f.Tag.Get("koanf"); key != "" {
			return key
		}
		return m
	})
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
