package config

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// Backend is a lock backend as configuration sees it: the locking.provider
// name that selects it and its section of keys, locking.<name>.*. A
// backend's own package implements it (with the builder lockbuild needs,
// lockbuild.Backend); a program passes the backends it links to Load with
// WithBackends, and locking.provider then accepts their names besides
// memory, disabled and redis (the library module's own backend, always
// linked). Nothing is registered globally: what a program can select is
// redis and what it passes.
type Backend interface {
	// Provider is the locking.provider value that selects the backend,
	// and the name of its section: lower-case letters, digits and
	// underscores, starting with a letter; not memory or disabled, nor a
	// key of the locking section.
	Provider() ProviderName
	// Section returns a new section holding the backend's defaults,
	// which Load decodes locking.<name>.* into; nil when the backend has
	// no keys.
	Section() Section
}

// Section is a backend's configuration section: a pointer to a struct
// whose exported fields carry koanf tags, one per key below
// locking.<name>. Load decodes it with the rules of config's own sections:
// unknown keys, values that do not parse and keys written without a value
// are errors naming the key, the value (never a Secret's) and its source;
// durations need a unit; lists also take a comma-separated string; a
// field of type Secret never prints itself.
type Section interface {
	// Validate checks the section's values when its backend is the
	// locking.provider in use; keys names the keys and their sources.
	// It returns one *FieldError per problem (keys.Errorf builds them).
	Validate(keys SectionKeys) []*FieldError
}

// ConfigChecker is a Section that also checks its values against the rest
// of the configuration (a timeout that must stay below every role's
// lease, say). Config.Validate calls it, after Validate, when the
// section's backend is the provider in use.
type ConfigChecker interface {
	CheckConfig(keys SectionKeys, c *Config) []*FieldError
}

// SectionKeys names the keys of one backend's section in errors: Key("addrs")
// is "locking.redis.addrs", Source where its value came from.
type SectionKeys struct {
	prefix string
	src    sources
}

// Key returns the dotted key of the section's key name ("" names the
// section itself).
func (s SectionKeys) Key(name string) string {
	if name == "" {
		return s.prefix
	}
	return s.prefix + "." + name
}

// Source names where the value of the section's key name came from, as
// Config.Source does: "" for a configuration built in code.
func (s SectionKeys) Source(name string) string { return s.src.of(s.Key(name)) }

// Errorf returns a *FieldError for the section's key name, with its
// source and the reason format makes. The reason must not show a secret.
func (s SectionKeys) Errorf(name, format string, a ...any) *FieldError {
	return s.src.fieldError(s.Key(name), format, a...)
}

// WithBackends makes Load accept the locking.provider names of backends
// and decode their sections (locking.<name>.*). Several calls add up; a
// nil backend is skipped. A name that is invalid, reserved (memory,
// disabled, a key of the locking section) or given twice fails Load.
// Default: none; locking.provider then accepts memory, redis (the library
// module's own backend, whose section is RedisConfig) and disabled. A
// backend named redis (redislockbuild.Backend) takes the place of the
// built-in one; it is not registered twice.
func WithBackends(backends ...Backend) LoadOption {
	return optionFunc(func(s *loadSettings) {
		for _, b := range backends {
			if b != nil {
				s.backends = append(s.backends, b)
			}
		}
	})
}

// backendName is what a backend's name may be.
var backendName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// checkBackends reports backends that cannot be registered.
func checkBackends(backends []Backend) error {
	seen := map[ProviderName]bool{}
	for _, b := range backends {
		name := b.Provider()
		// reflect: whether the name is a key of the locking section is
		// whether a field carries it as its koanf tag (fieldByKey).
		_, isKey := fieldByKey(reflect.TypeFor[LockingConfig](), string(name))
		switch {
		case !backendName.MatchString(string(name)):
			return fmt.Errorf("config: backend %q (%T): want lower-case letters, digits and underscores, starting with a letter", name, b)
		case name == ProviderMemory || name == ProviderDisabled || isKey:
			return fmt.Errorf("config: backend %q (%T): the name is reserved by the locking section", name, b)
		case !isSectionPointer(b.Section()):
			return fmt.Errorf("config: backend %q: Section returns %T, want a pointer to a struct or nil", name, b.Section())
		case seen[name]:
			return fmt.Errorf("config: backend %q given twice", name)
		}
		seen[name] = true
	}
	return nil
}

// WithBackends returns a copy of the section that accepts the providers
// of backends too, for a configuration built in code (lockbuild.Build
// calls it with the backends it is given). A backend already registered
// keeps its section; a new one gets its defaults. Invalid backends are
// reported by Validate.
func (l LockingConfig) WithBackends(backends ...Backend) LockingConfig {
	sections := maps.Clone(l.sections)
	if sections == nil {
		sections = map[ProviderName]Section{}
	}
	out := slices.Clone(l.backends)
	for _, b := range backends {
		if b == nil || slices.ContainsFunc(out, func(o Backend) bool { return o.Provider() == b.Provider() }) {
			continue
		}
		out = append(out, b)
		if s := b.Section(); s != nil {
			sections[b.Provider()] = s
		}
	}
	l.backends, l.sections = out, sections
	return l
}

// WithSection returns a copy of the section in which provider's backend
// section is s (the receiver's section is left alone): for a configuration
// changed in code.
func (l LockingConfig) WithSection(provider ProviderName, s Section) LockingConfig {
	sections := maps.Clone(l.sections)
	if sections == nil {
		sections = map[ProviderName]Section{}
	}
	sections[provider] = s
	l.sections = sections
	return l
}

// Section returns the section of provider's backend as loaded (with the
// backend's defaults for keys no source set), or nil when no registered
// backend has that name or it has no keys. The caller type-asserts it to
// the backend's section type; the backend's package has a typed accessor.
func (l LockingConfig) Section(provider ProviderName) Section {
	return l.sections[provider]
}

// SectionKeys names the keys of provider's section in errors.
func (l LockingConfig) SectionKeys(provider ProviderName) SectionKeys {
	return SectionKeys{prefix: "locking." + string(provider), src: l.src}
}

// Providers lists the values locking.provider accepts: memory, redis
// (the library module's own backend, unless a backend of that name was
// registered in its place), the names of the other registered backends in
// the order given, and disabled.
func (l LockingConfig) Providers() []ProviderName {
	out := []ProviderName{ProviderMemory}
	for _, b := range withDefaultBackends(l.backends) {
		out = append(out, b.Provider())
	}
	return append(out, ProviderDisabled)
}

// providerList is Providers as text for an error.
func (l LockingConfig) providerList() string {
	names := l.Providers()
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

// isSectionPointer reports whether s is nil or a pointer to a struct, what
// Load can decode keys into.
//
// reflect: mapstructure decodes into any value; which one a backend gave
// is only known at run time.
func isSectionPointer(s Section) bool {
	if s == nil {
		return true
	}
	t := reflect.TypeOf(s)
	return t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct && !reflect.ValueOf(s).IsNil()
}
