package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/v2"
)

// Reflection in this file: mapstructure's decode hooks receive and return
// reflect.Types, and its errors name a field by its path and carry the raw
// value but not the target type; typeAt resolves the path against
// Config's koanf tags to say what was expected (a duration with a unit, an
// enum's names) and to keep a secret's value out of the message. Neither
// koanf nor mapstructure offers a lookup from a path to a field.
var (
	durationType = reflect.TypeFor[time.Duration]()
	secretType   = reflect.TypeFor[Secret]()
	stringsType  = reflect.TypeFor[[]string]()
)

// decode unmarshals the merged sources in k into cfg: first the section
// of each registered backend (locking.<name>, cut from k and decoded
// into the backend's own Section), then the rest into Config. Both go
// through decoder.decode, so a backend's keys follow config's rules.
func decode(k *koanf.Koanf, cfg *Config, src sources) []*FieldError {
	errs := removedKeys(k, src)
	for _, b := range cfg.Locking.backends {
		prefix := "locking." + string(b.Provider())
		sec := cfg.Locking.sections[b.Provider()]
		if sec == nil || !k.Exists(prefix) {
			continue // a backend without keys: locking.<name>.* are unknown
		}
		switch raw := k.Get(prefix); raw.(type) {
		case nil: // `redis:` with nothing below: an empty section
		case map[string]any:
			// reflect: a backend's section type is known only at run
			// time; the decoder resolves its keys to fields like Config's.
			d := decoder{root: reflect.TypeOf(sec).Elem(), prefix: prefix, src: src}
			errs = append(errs, d.decode(k.Cut(prefix), sec)...)
		default:
			errs = append(errs, &FieldError{Key: prefix, Source: src.of(prefix), Reason: "is a section, not a value: got " + describe(raw, false)})
		}
		k.Delete(prefix)
	}
	d := decoder{root: reflect.TypeFor[Config](), src: src}
	errs = append(errs, d.decode(k, cfg)...)
	// A provider no backend serves is a value outside the names the
	// program linked: reported with the other values that did not decode.
	if p := cfg.Locking.Provider; p != "" && !slices.Contains(cfg.Locking.Providers(), p) {
		errs = append(errs, cfg.Locking.unknownProvider(src))
	}
	return errs
}

// removed are the keys that said what another key says, with what to
// write instead: there is one way to say each thing.
var removed = []struct{ key, reason string }{
	{"locking.enabled", "is no longer a key: write locking.provider: disabled for a lock that grants everyone, or remove it"},
	{"leadership.lock_key", "is no longer a section-wide key, since one exact key cannot serve several roles: set leadership.roles.<role>.lock_key for the role, or leadership.lock_key_format"},
}

// removedKeys reports each removed key a source set, and takes it out of
// k so that it is not also reported as unknown.
func removedKeys(k *koanf.Koanf, src sources) []*FieldError {
	var errs []*FieldError
	for _, r := range removed {
		if k.Exists(r.key) {
			errs = append(errs, &FieldError{Key: r.key, Source: src.of(r.key), Reason: r.reason})
			k.Delete(r.key)
		}
	}
	return errs
}

// decoder decodes keys into a struct of type root, whose keys sit below
// the dotted key prefix ("" for Config, "locking.redis" for a backend's
// section), and names them in errors with their sources.
type decoder struct {
	root   reflect.Type
	prefix string
	src    sources
}

// full is the dotted key of key, a key relative to the decoder's root.
func (d decoder) full(key string) string {
	switch {
	case d.prefix == "":
		return key
	case key == "":
		return d.prefix
	}
	return d.prefix + "." + key
}

// decode unmarshals k into target (a pointer to a d.root) with koanf's
// Unmarshal (mapstructure): durations through
// StringToTimeDurationHookFunc, enums and time zones through
// TextUnmarshallerHookFunc, unknown keys from mapstructure's
// Metadata.Unused (see unusedKeys), names matched exactly (mapstructure
// matches case-insensitively by default, which would accept Lease for
// lease). It returns one *FieldError per problem, each naming its source.
func (d decoder) decode(k *koanf.Koanf, target any) []*FieldError {
	dc := &mapstructure.DecoderConfig{
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			strictScalars,
			mapstructure.StringToTimeDurationHookFunc(),
			mapstructure.TextUnmarshallerHookFunc(),
		),
		IgnoreUntaggedFields: true,
		MatchName:            exactName,
	}
	errs := d.nullLeaves(k)
	for _, u := range d.unusedKeys(k) {
		key, _ := d.splitName(u)
		errs = append(errs, d.unknownKeys(k, key)...)
	}
	err := k.UnmarshalWithConf("", target, koanf.UnmarshalConf{Tag: "koanf", DecoderConfig: dc})
	walkDecodeErrors(err, func(name string, inner error) {
		errs = append(errs, d.fieldErrors(k, name, inner))
	})
	return errs
}

// exactName matches a key to a field's koanf tag exactly.
func exactName(mapKey, fieldName string) bool { return mapKey == fieldName }

// unusedKeys returns the keys of k that name no field of d.root, as
// mapstructure's decoder metadata lists them (leadership.roles[billing].leese).
// mapstructure records a struct's unused keys only when every field of
// that struct decoded, so this pass decodes into a throwaway root with
// every value replaced by its type's zero value: no value can fail, and
// the list is complete even where a bad value sits beside an unknown key.
func (d decoder) unusedKeys(k *koanf.Koanf) []string {
	md := &mapstructure.Metadata{}
	dc := &mapstructure.DecoderConfig{
		DecodeHook: func(_, to reflect.Type, data any) (any, error) {
			// reflect: mapstructure hands hooks reflect.Types; a
			// section (struct, map) or pointer is decoded further, any
			// other target takes its zero value.
			if to.Kind() == reflect.Pointer || isSection(to) {
				return data, nil
			}
			return reflect.Zero(to).Interface(), nil
		},
		IgnoreUntaggedFields: true,
		MatchName:            exactName,
		Metadata:             md,
	}
	// Every value decodes (zero), so the error can only be a section
	// written as a value, which the real decode reports.
	_ = k.UnmarshalWithConf("", reflect.New(d.root).Interface(), koanf.UnmarshalConf{Tag: "koanf", DecoderConfig: dc})
	slices.Sort(md.Unused)
	return md.Unused
}

// nullLeaves reports the keys written with no value (`namespace:`).
// mapstructure skips a nil input silently, so the default would apply to
// a key the user meant to set; an empty section (`roles:`) is fine.
func (d decoder) nullLeaves(k *koanf.Koanf) []*FieldError {
	var errs []*FieldError
	for key, v := range k.All() {
		if v != nil {
			continue
		}
		if t, ok := d.typeAt(key); ok && !isSection(t) {
			errs = append(errs, &FieldError{Key: d.full(key), Source: d.src.of(d.full(key)), Reason: `has no value (write "" for an empty string)`})
		}
	}
	return errs
}

// walkDecodeErrors calls fn for each *mapstructure.DecodeError in the
// tree err (errors.Join of field errors, nested, under the wrapper Decode
// adds) with the field name and the error it wraps.
func walkDecodeErrors(err error, fn func(name string, inner error)) {
	switch e := err.(type) {
	case nil:
	case *mapstructure.DecodeError:
		inner := e.Unwrap()
		if _, nested := inner.(interface{ Unwrap() []error }); nested {
			walkDecodeErrors(inner, fn)
		} else if de, ok := inner.(*mapstructure.DecodeError); ok {
			walkDecodeErrors(de, fn)
		} else {
			fn(e.Name(), inner)
		}
	case interface{ Unwrap() []error }:
		for _, p := range e.Unwrap() {
			walkDecodeErrors(p, fn)
		}
	case interface{ Unwrap() error }:
		walkDecodeErrors(e.Unwrap(), fn)
	default:
		fn("", err)
	}
}

// fieldErrors turns one mapstructure error at field name into
// a FieldError: the dotted key, what is wrong with the value (never a
// secret's value) and its source.
func (d decoder) fieldErrors(k *koanf.Koanf, name string, inner error) *FieldError {
	key, item := d.splitName(name)
	t, _ := d.typeAt(key)
	raw := k.Get(key)
	prefix := ""
	if item >= 0 {
		prefix = fmt.Sprintf("item %d: ", item)
		if l, ok := raw.([]any); ok && item < len(l) {
			raw = l[item]
		}
		if t != nil {
			t = t.Elem()
		}
	}
	return &FieldError{Key: d.full(key), Source: d.src.of(d.full(key)), Reason: prefix + reason(t, raw, inner)}
}

// unknownKeys reports key, which names nothing in Config, as the leaf
// keys the sources set under it (lockin.provider rather than lockin), each
// with its own source.
func (d decoder) unknownKeys(k *koanf.Koanf, key string) []*FieldError {
	if key == "" {
		// A YAML key that is empty or not a string ("? !00") decodes to
		// "": name it so the error still says where it is.
		return []*FieldError{{Key: d.full(`""`), Source: d.src.of(d.full(key)), Reason: "unknown key: an empty or non-string key"}}
	}
	var errs []*FieldError
	for flat := range k.All() {
		if flat == key || strings.HasPrefix(flat, key+".") {
			errs = append(errs, &FieldError{Key: d.full(flat), Source: d.src.of(d.full(flat)), Reason: "unknown key"})
		}
	}
	if len(errs) == 0 {
		errs = append(errs, &FieldError{Key: d.full(key), Source: d.src.of(d.full(key)), Reason: "unknown key"})
	}
	return errs
}

// reason says what is wrong with raw as a value of type t (reflect: the
// target type typeAt found, which mapstructure's errors lack).
func reason(t reflect.Type, raw any, err error) string {
	secret := t == secretType
	var pe *mapstructure.ParseError
	var ue *mapstructure.UnconvertibleTypeError
	switch {
	case t != nil && isSection(t):
		return "is a section, not a value: got " + describe(raw, false)
	case t == durationType && isString(raw):
		return fmt.Sprintf("invalid duration %q (use a unit, e.g. 15s, 500ms, 1m30s)", raw)
	case errors.As(err, &pe), errors.As(err, &ue):
		return fmt.Sprintf("expected %s, got %s", expected(t), describe(raw, secret))
	}
	return err.Error()
}

func isString(v any) bool { _, ok := v.(string); return ok }

// expected names what a value of type t is written as (reflect: t is
// mapstructure's target type or typeAt's).
func expected(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch {
	case t == durationType:
		return "a duration with a unit such as 15s"
	case t == stringsType:
		return "a list or a comma-separated string"
	case enumNames(t) != nil:
		return "one of " + strings.Join(enumNames(t), ", ")
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int:
		return "an integer"
	case reflect.String:
		return "a string"
	}
	return "a " + t.String()
}

// strictScalars is the one decode hook of our own (its reflect.Types are
// mapstructure's DecodeHookFuncType signature). It does what
// mapstructure does too loosely, or not at all, for values read from YAML
// and from environment variables (always strings); WeaklyTypedInput would
// cover the strings but also turn true into 1, "" into 0 and 1.5 into 1,
// so it stays off:
//   - a duration must be a string with a unit (mapstructure reads a YAML
//     number as nanoseconds);
//   - an int parses from a decimal string; a YAML float is refused
//     (mapstructure truncates it);
//   - a bool parses from a string;
//   - a string also takes a YAML integer or boolean (identity: 42);
//   - a list also takes a comma-separated string, items trimmed and blank
//     ones dropped (StringToSliceHookFunc keeps the spaces of "a, b");
//   - an enum must be one of its names in config spelling (the core
//     parsers also accept DropOldest or drop-oldest).
func strictScalars(from, to reflect.Type, data any) (any, error) {
	switch {
	case to.Kind() == reflect.Pointer:
		return data, nil // the element is decoded next, through this hook again
	case to == durationType:
		if from.Kind() != reflect.String {
			return nil, fmt.Errorf("expected %s, got %s", expected(to), describe(data, false))
		}
	case enumNames(to) != nil:
		s, ok := data.(string)
		if !ok {
			return nil, fmt.Errorf("expected %s, got %s", expected(to), describe(data, false))
		}
		if !slices.Contains(enumNames(to), s) {
			return nil, notOneOf(s, to)
		}
	case to.Kind() == reflect.Int:
		switch x := data.(type) {
		case string:
			n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 0)
			if err != nil {
				return nil, fmt.Errorf("invalid integer %q", x)
			}
			return int(n), nil
		case float32, float64, bool:
			return nil, fmt.Errorf("expected an integer, got %s", describe(x, false))
		}
	case to.Kind() == reflect.Bool:
		if s, ok := data.(string); ok {
			b, err := strconv.ParseBool(strings.TrimSpace(s))
			if err != nil {
				return nil, fmt.Errorf("invalid boolean %q (use true or false)", s)
			}
			return b, nil
		}
	case to.Kind() == reflect.String:
		switch data.(type) {
		case int, int64, uint64, bool:
			return fmt.Sprint(data), nil
		}
	case to == stringsType:
		if s, ok := data.(string); ok {
			out := []string{}
			for _, item := range strings.Split(s, ",") {
				if item = strings.TrimSpace(item); item != "" {
					out = append(out, item)
				}
			}
			return out, nil
		}
	}
	return data, nil
}

// notOneOf is the error for a value outside an enum.
func notOneOf(s string, t reflect.Type) error { return notOneOfNames(s, enumNames(t)) }

// notOneOfNames is the error for a value outside names.
func notOneOfNames(s string, names []string) error {
	return fmt.Errorf("%q is not one of %s", s, strings.Join(names, ", "))
}

// splitName turns mapstructure's field name into the dotted key (reflect:
// typeAt tells a list index from a map key, which mapstructure writes
// alike):
// leadership.roles[billing].lease is leadership.roles.billing.lease; for
// an item of a list (locking.redis.addrs[1]) it also returns the index,
// else -1.
func (d decoder) splitName(name string) (key string, item int) {
	var b strings.Builder
	for {
		i := strings.IndexByte(name, '[')
		j := strings.IndexByte(name, ']')
		if i < 0 || j < i {
			b.WriteString(name)
			return b.String(), -1
		}
		b.WriteString(name[:i])
		inside, rest := name[i+1:j], name[j+1:]
		if t, ok := d.typeAt(b.String()); ok && t.Kind() == reflect.Slice && rest == "" {
			if n, err := strconv.Atoi(inside); err == nil {
				return b.String(), n
			}
		}
		b.WriteString("." + inside)
		name = rest
	}
}

// typeAt returns the type of the field of d.root at the dotted key (a
// map level takes any name), pointers removed.
//
// reflect: see the comment on durationType; mapstructure's errors carry
// no target type.
func (d decoder) typeAt(key string) (reflect.Type, bool) {
	t := d.root
	if key == "" {
		return t, true
	}
	for _, seg := range strings.Split(key, ".") {
		switch t.Kind() {
		case reflect.Struct:
			f, ok := fieldByKey(t, seg)
			if !ok {
				return nil, false
			}
			t = f.Type
		case reflect.Map:
			t = t.Elem()
		default:
			return nil, false
		}
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
	}
	return t, true
}

// fieldByKey finds the struct field whose koanf tag is key.
//
// reflect: koanf and mapstructure match keys to tags while decoding but
// offer no lookup of a tag's field for a key they were not given.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && f.Tag.Get("koanf") == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// isSection reports whether t holds keys rather than a value.
//
// reflect: t comes from mapstructure's hooks or from typeAt.
func isSection(t reflect.Type) bool {
	return t.Kind() == reflect.Struct || t.Kind() == reflect.Map
}

// describe names a value for an error: its kind, and the value itself
// unless it may be a secret.
func describe(raw any, secret bool) string {
	switch x := raw.(type) {
	case nil:
		return "nothing"
	case map[string]any:
		return "a section"
	case []any:
		return "a list"
	case string:
		if secret {
			return "a string"
		}
		return strconv.Quote(truncate(x))
	default:
		if secret {
			return fmt.Sprintf("a %T", raw)
		}
		return truncate(fmt.Sprint(x))
	}
}

func truncate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// sources maps each leaf key a source set to that source's name ("file
// app.yaml", "env HOSTLOOM_LEADERSHIP__LEASE"), the last source winning.
// It is nil for a configuration built in code.
type sources map[string]string

// of names where key's value came from: its source, the sources of the
// keys below it for a section, "default" when no source set it, and ""
// without sources.
func (s sources) of(key string) string {
	if s == nil {
		return ""
	}
	if src, ok := s[key]; ok {
		return src
	}
	var found []string
	for k, src := range s {
		if strings.HasPrefix(k, key+".") && !slices.Contains(found, src) {
			found = append(found, src)
		}
	}
	if len(found) == 0 {
		return "default"
	}
	slices.Sort(found)
	return strings.Join(found, ", ")
}
