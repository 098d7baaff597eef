package config

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

var (
	durationType = reflect.TypeFor[time.Duration]()
	secretType   = reflect.TypeFor[Secret]()
	stringsType  = reflect.TypeFor[[]string]()
	textType     = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// errUnknown marks a key that names nothing in Config.
var errUnknown = errors.New("unknown key")

// set assigns raw to the field named by the dotted key parts under v (an
// addressable struct), creating map entries on the way.
func set(v reflect.Value, parts []string, raw any) error {
	for i, p := range parts {
		switch {
		case isLeaf(v.Type()):
			return errUnknown
		case v.Kind() == reflect.Struct:
			f, ok := fieldByKey(v.Type(), p)
			if !ok {
				return errUnknown
			}
			v = v.Field(f)
		case v.Kind() == reflect.Map:
			if p == "" {
				return errUnknown
			}
			if v.IsNil() {
				v.Set(reflect.MakeMap(v.Type()))
			}
			key := reflect.ValueOf(p)
			elem := reflect.New(v.Type().Elem()).Elem()
			if old := v.MapIndex(key); old.IsValid() {
				elem.Set(old)
			}
			err := set(elem, parts[i+1:], raw)
			v.SetMapIndex(key, elem)
			return err
		default:
			return errUnknown
		}
	}
	if !isLeaf(v.Type()) {
		// A section may be written empty (`roles:` or `roles: {}`).
		if m, ok := raw.(map[string]any); raw == nil || ok && len(m) == 0 {
			return nil
		}
		return fmt.Errorf("is a section, not a value: got %s", describe(raw, false))
	}
	return setLeaf(v, raw)
}

// fieldByKey finds the struct field whose koanf tag is key.
func fieldByKey(t reflect.Type, key string) (int, bool) {
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("koanf") == key {
			return i, true
		}
	}
	return 0, false
}

// isLeaf reports whether t holds a value rather than a section.
func isLeaf(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == durationType || t == stringsType || reflect.PointerTo(t).Implements(textType) {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int:
		return true
	}
	return false
}

// setLeaf parses raw (a YAML value or an environment string) into v.
func setLeaf(v reflect.Value, raw any) error {
	secret := v.Type() == secretType
	if v.Kind() == reflect.Pointer {
		p := reflect.New(v.Type().Elem())
		if err := setLeaf(p.Elem(), raw); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}
	if raw == nil {
		return errors.New(`has no value (write "" for an empty string)`)
	}
	t := v.Type()
	switch {
	case reflect.PointerTo(t).Implements(textType):
		s, ok := scalar(raw)
		if !ok {
			return fmt.Errorf("expected a string, got %s", describe(raw, false))
		}
		n := reflect.New(t)
		if err := n.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			return err
		}
		v.Set(n.Elem())
	case t == durationType:
		s, ok := raw.(string)
		if !ok {
			return fmt.Errorf("expected a duration with a unit such as 15s, got %s", describe(raw, false))
		}
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("invalid duration %q (use a unit, e.g. 15s, 500ms, 1m30s)", s)
		}
		v.SetInt(int64(d))
	case t == stringsType:
		list, err := stringList(raw)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(list))
	case t.Kind() == reflect.String:
		s, ok := scalar(raw)
		if !ok {
			return fmt.Errorf("expected a string, got %s", describe(raw, secret))
		}
		v.SetString(s)
	case t.Kind() == reflect.Bool:
		switch b := raw.(type) {
		case bool:
			v.SetBool(b)
		case string:
			parsed, err := strconv.ParseBool(strings.TrimSpace(b))
			if err != nil {
				return fmt.Errorf("invalid boolean %q (use true or false)", b)
			}
			v.SetBool(parsed)
		default:
			return fmt.Errorf("expected true or false, got %s", describe(raw, false))
		}
	case t.Kind() == reflect.Int:
		n, err := toInt(raw)
		if err != nil {
			return err
		}
		v.SetInt(n)
	default:
		return fmt.Errorf("unsupported field type %v", t)
	}
	return nil
}

// scalar returns a string, integer or boolean YAML value as text.
func scalar(raw any) (string, bool) {
	switch x := raw.(type) {
	case string:
		return x, true
	case int, int64, uint64, bool:
		return fmt.Sprint(x), true
	}
	return "", false
}

func toInt(raw any) (int64, error) {
	const maxInt = int64(^uint(0) >> 1)
	switch x := raw.(type) {
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case uint64:
		if x > uint64(maxInt) {
			return 0, fmt.Errorf("integer %d is out of range", x)
		}
		return int64(x), nil
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 0)
		if err != nil {
			return 0, fmt.Errorf("invalid integer %q", x)
		}
		return n, nil
	}
	return 0, fmt.Errorf("expected an integer, got %s", describe(raw, false))
}

// stringList accepts a YAML list of scalars, or a comma-separated string
// (the form environment variables use). Blank entries are dropped.
func stringList(raw any) ([]string, error) {
	var items []string
	switch x := raw.(type) {
	case string:
		items = strings.Split(x, ",")
	case []any:
		for i, e := range x {
			s, ok := scalar(e)
			if !ok {
				return nil, fmt.Errorf("item %d: expected a string, got %s", i, describe(e, false))
			}
			items = append(items, s)
		}
	default:
		return nil, fmt.Errorf("expected a list or a comma-separated string, got %s", describe(raw, false))
	}
	out := []string{}
	for _, s := range items {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out, nil
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
