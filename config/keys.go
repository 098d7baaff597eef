package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Key describes one configuration key, for documentation and tooling.
type Key struct {
	// Name is the dotted koanf key; a map level shows as <role>.
	Name string
	// Type is duration, string, secret, bool, int, list, or the allowed
	// values of an enum separated by " | ".
	Type string
	// Default is the default value as written in YAML; for a per-role
	// override, the key it defaults to; for a per-job setting, "code" (the
	// job's own setting); "required" for a key every configuration must
	// set (locking.provider).
	Default string
	// Env is the environment variable that sets the key.
	Env string
}

// Keys lists every configuration key in declaration order, with its type,
// default and environment variable; the keys of provider redis (the
// library module's own backend) and of each backend given
// (locking.<name>.*, from its Section's defaults) follow the locking
// section's own.
func Keys(backends ...Backend) []Key {
	var out []Key
	walkKeys(reflect.ValueOf(*Defaults()), nil, "", &out)
	var own []Key
	for _, b := range withDefaultBackends(backends) {
		if b == nil || b.Section() == nil {
			continue
		}
		walkKeys(reflect.ValueOf(b.Section()).Elem(), []string{"locking", string(b.Provider())}, "", &own)
	}
	at := 0
	for i, k := range out {
		if strings.HasPrefix(k.Name, "locking.") {
			at = i + 1
		}
	}
	return slices.Concat(out[:at], own, out[at:])
}

// walkKeys appends the keys of the struct v to out.
//
// reflect: Keys documents every key, with its type and default, from the
// Config type's koanf tags and the values of Defaults. koanf lists only
// the keys a source set (Keys, All) and mapstructure decodes into structs
// without describing them, so neither can list a key nobody set.
func walkKeys(v reflect.Value, path []string, inherit string, out *[]Key) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Tag.Get("koanf")
		if name == "-" {
			continue // a field no key sets (LeadershipConfig.LockKey)
		}
		p := append(path[:len(path):len(path)], name)
		fv := v.Field(i)
		switch {
		case !isSection(deref(f.Type)):
			def := yamlValue(fv)
			switch {
			case f.Tag.Get("default") != "":
				def = f.Tag.Get("default")
			case inherit != "":
				def = inherit + "." + name
			case f.Tag.Get("required") == "true":
				def = "required"
			}
			*out = append(*out, Key{
				Name:    strings.Join(p, "."),
				Type:    typeName(f.Type),
				Default: def,
				Env:     envName(p),
			})
		case f.Type.Kind() == reflect.Struct:
			walkKeys(fv, p, inherit, out)
		case f.Type.Kind() == reflect.Map:
			mp := append(p, "<"+f.Tag.Get("mapkey")+">")
			walkKeys(reflect.New(f.Type.Elem()).Elem(), mp, strings.Join(path, "."), out)
		}
	}
}

// envName is the environment variable of a key path.
func envName(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = strings.ToUpper(p)
	}
	return EnvPrefix + strings.Join(parts, envSeparator)
}

// deref is t without a pointer (reflect: see walkKeys).
func deref(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

// typeName is the Type column of a key (reflect: see walkKeys).
func typeName(t reflect.Type) string {
	t = deref(t)
	if names := enumNames(t); names != nil {
		return strings.Join(names, " | ")
	}
	switch {
	case t == durationType:
		return "duration"
	case t == secretType:
		return "secret"
	case t == stringsType:
		return "list"
	case t == reflect.TypeFor[TimeZone]():
		return "time zone"
	case t == reflect.TypeFor[ProviderName]():
		return "provider name"
	}
	return t.Kind().String()
}

// yamlValue formats a default as it would be written in YAML (reflect:
// the value comes from Defaults through walkKeys).
func yamlValue(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case time.Duration:
		return shortDuration(x)
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	}
	if v.Kind() == reflect.String {
		if v.String() == "" {
			return `""`
		}
		return v.String()
	}
	return fmt.Sprint(v.Interface())
}

// shortDuration is d.String() without zero trailing units: 5m, 1h, 1m30s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
