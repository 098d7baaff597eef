package config

// redacted replaces a secret wherever one would be printed.
const redacted = "[redacted]"

// Secret is a string that never prints itself: String, GoString, Format
// verbs through those, MarshalText, MarshalJSON and zap all show
// "[redacted]" (or "" when it is empty). Value returns the secret.
type Secret string

// Value returns the secret itself, for the code that must use it.
func (s Secret) Value() string { return string(s) }

// IsSet reports whether the secret is nonempty.
func (s Secret) IsSet() bool { return s != "" }

// String returns "[redacted]", or "" for an empty secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString keeps %#v from printing the secret.
func (s Secret) GoString() string { return `"` + s.String() + `"` }

// MarshalText keeps encoders (YAML, JSON map keys) from writing the secret.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalJSON keeps encoding/json (and zap.Any) from writing the secret.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + s.String() + `"`), nil }
