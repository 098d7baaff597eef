package config

import (
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
)

// Field is one key of a section as Fields describes it.
type Field struct {
	// Key is the key's name in the section ("addrs").
	Key string
	// Value is the key's value: a string, a Secret (shown redacted), a
	// []string, a bool, an int or a time.Duration; any other type prints
	// with %v.
	Value any
	// Brief leaves the key out of String when Value is its zero value;
	// the log keeps it.
	Brief bool
}

// Fields describes a backend's section for String and logs, in the
// order given, a Secret always redacted: a section declares its keys once
// and gets both forms, so that a new secret cannot reach one of them
// unredacted.
//
//	func (c Config) fields() config.Fields {
//		return config.Fields{{Key: "addrs", Value: c.Addrs}, {Key: "password", Value: c.Password}}
//	}
//	func (c Config) String() string { return c.fields().String() }
//	func (c Config) MarshalLogObject(enc zapcore.ObjectEncoder) error { return c.fields().MarshalLogObject(enc) }
type Fields []Field

// String writes key=value pairs separated by spaces: strings quoted,
// secrets redacted ("[redacted]", or nothing when unset), lists as [a b].
func (fs Fields) String() string {
	var b strings.Builder
	for _, f := range fs {
		if f.Brief && isZero(f.Value) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f.Key)
		b.WriteByte('=')
		switch v := f.Value.(type) {
		case string:
			fmt.Fprintf(&b, "%q", v)
		case Secret:
			b.WriteString(v.String())
		default:
			fmt.Fprintf(&b, "%v", v)
		}
	}
	return b.String()
}

// MarshalLogObject adds every field, secrets redacted.
func (fs Fields) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	for _, f := range fs {
		switch v := f.Value.(type) {
		case string:
			enc.AddString(f.Key, v)
		case Secret:
			enc.AddString(f.Key, v.String())
		case []string:
			if err := enc.AddArray(f.Key, zapcore.ArrayMarshalerFunc(func(a zapcore.ArrayEncoder) error {
				for _, s := range v {
					a.AppendString(s)
				}
				return nil
			})); err != nil {
				return err
			}
		case bool:
			enc.AddBool(f.Key, v)
		case int:
			enc.AddInt(f.Key, v)
		case time.Duration:
			enc.AddDuration(f.Key, v)
		default:
			enc.AddString(f.Key, fmt.Sprint(v))
		}
	}
	return nil
}

// isZero reports whether v is its type's zero value (an empty list too).
func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case Secret:
		return x == ""
	case []string:
		return len(x) == 0
	case bool:
		return !x
	case int:
		return x == 0
	case time.Duration:
		return x == 0
	}
	return false
}
