package locking_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// validKey is the oracle for CheckKey: nonempty, valid UTF-8, no whitespace
// or control characters, at most maxKeyLength bytes when maxKeyLength > 0.
func validKey(key string, maxKeyLength int) bool {
	if key == "" || !utf8.ValidString(key) {
		return false
	}
	if maxKeyLength > 0 && len(key) > maxKeyLength {
		return false
	}
	for _, r := range key {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// keySeeds are keys that have broken key handling elsewhere: empty,
// whitespace of every kind, control characters, invalid UTF-8, braces
// (Redis Cluster hash tags), placeholders, separators, very long keys.
var keySeeds = []string{
	"", "a", "leader:scheduler", "{elections}:scheduler", "{billing}:lock:x",
	" ", "a b", "tab\tkey", "new\nline", "cr\r", "nul\x00", "del\x7f",
	"\u00a0nbsp", "\u2028sep", "\u3000ideo", "\u200bzero-width", "é", "日本",
	"\xff\xfe", "a\xc3", "{role}", "{{}}", "}{", "::", "*", "?", "[a]",
	strings.Repeat("k", 512), strings.Repeat("k", 513), strings.Repeat("é", 300),
}

// FuzzCheckKey: CheckKey never panics, agrees with the oracle, and every
// error is a *KeyError that names the key.
func FuzzCheckKey(f *testing.F) {
	for _, k := range keySeeds {
		for _, n := range []int{0, 1, 8, 512, -1} {
			f.Add(k, n)
		}
	}
	f.Fuzz(func(t *testing.T, key string, maxKeyLength int) {
		err := locking.CheckKey(key, maxKeyLength)
		if want := validKey(key, maxKeyLength); (err == nil) != want {
			t.Fatalf("CheckKey(%q, %d) = %v, want valid=%v", key, maxKeyLength, err, want)
		}
		if err == nil {
			return
		}
		var ke *locking.KeyError
		if !errors.As(err, &ke) || ke.Key != key || !errors.Is(err, locking.ErrInvalidKey) {
			t.Fatalf("CheckKey(%q) error %v is not a *KeyError for that key", key, err)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("%q", key)) {
			t.Fatalf("CheckKey error %q does not name the key %q", err, key)
		}
	})
}

// FuzzProviderKey: for any namespace, hash-tag setting and key, New and
// ProviderKey never panic; an invalid namespace is an error naming it; a
// valid key maps to {namespace}:lock:{key} ({{namespace}}:lock:{key} with
// hash tags, lock:{key} without a namespace) (L2); an invalid key is an
// ErrInvalidKey error naming the key.
func FuzzProviderKey(f *testing.F) {
	for _, ns := range []string{"", "billing", "b{x}", "a b", "\x00", "{", "é"} {
		for _, k := range keySeeds {
			f.Add(ns, true, k)
			f.Add(ns, false, k)
		}
	}
	f.Fuzz(func(t *testing.T, namespace string, hashTags bool, key string) {
		o := locking.DefaultOptions()
		o.Namespace, o.UseHashTags = namespace, hashTags
		l, err := locking.New(memlock.New(), o)
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, fmt.Sprintf("%q", namespace)) && !strings.Contains(msg, "use_hash_tags") {
				t.Fatalf("New with namespace %q: error %q names neither the namespace nor use_hash_tags", namespace, msg)
			}
			if validKey(namespace, 0) && !(hashTags && (namespace == "" || strings.ContainsAny(namespace, "{}"))) {
				t.Fatalf("New rejected a valid namespace %q (hash tags %v): %v", namespace, hashTags, err)
			}
			return
		}
		pk, err := l.ProviderKey(key)
		if err != nil {
			if !errors.Is(err, locking.ErrInvalidKey) || !strings.Contains(err.Error(), fmt.Sprintf("%q", key)) {
				t.Fatalf("ProviderKey(%q) error %v: want ErrInvalidKey naming the key", key, err)
			}
			if validKey(key, o.MaxKeyLength) {
				t.Fatalf("ProviderKey rejected valid key %q: %v", key, err)
			}
			return
		}
		if !validKey(key, o.MaxKeyLength) {
			t.Fatalf("ProviderKey accepted invalid key %q as %q", key, pk)
		}
		want := "lock:" + key
		switch {
		case hashTags:
			want = "{" + namespace + "}:" + want
		case namespace != "":
			want = namespace + ":" + want
		}
		if pk != want {
			t.Fatalf("ProviderKey(%q) with namespace %q, hash tags %v = %q, want %q", key, namespace, hashTags, pk, want)
		}
	})
}

// FuzzOptionsValidate: Validate never panics, accepts exactly the valid
// limits, and every error names the offending option.
func FuzzOptionsValidate(f *testing.F) {
	f.Add(true, "", false, 512, int64(5*time.Minute), int64(time.Hour))
	f.Add(true, "billing", true, 512, int64(5*time.Minute), int64(time.Hour))
	f.Add(true, "", true, 0, int64(0), int64(0))
	f.Add(false, "a b", true, -1, int64(-1), int64(-time.Hour))
	f.Add(true, "{x}", true, 1, int64(1), int64(1))
	f.Add(true, "\x00", false, 1<<62, int64(1<<62), int64(-1<<63))
	f.Fuzz(func(t *testing.T, disabled bool, namespace string, hashTags bool, maxKeyLength int, maxLease, maxHold int64) {
		o := locking.Options{Disabled: disabled, Namespace: namespace, UseHashTags: hashTags,
			MaxKeyLength: maxKeyLength, MaxLease: time.Duration(maxLease), MaxHold: time.Duration(maxHold)}
		err := o.Validate()
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		expect := func(bad bool, name string) {
			t.Helper()
			if bad && !strings.Contains(msg, name) {
				t.Fatalf("Validate(%+v) = %q, want an error naming %s", o, msg, name)
			}
		}
		expect(maxKeyLength < 0, fmt.Sprintf("Options.MaxKeyLength %d", maxKeyLength))
		expect(maxLease < 0, fmt.Sprintf("Options.MaxLease %v", o.MaxLease))
		expect(maxHold < 0, fmt.Sprintf("Options.MaxHold %v", o.MaxHold))
		badNS := namespace != "" && !validKey(namespace, 0)
		expect(badNS, fmt.Sprintf("Options.Namespace %q", namespace))
		badTags := hashTags && (namespace == "" || strings.ContainsAny(namespace, "{}"))
		expect(badTags && namespace == "", "Options.UseHashTags")
		expect(badTags && namespace != "", fmt.Sprintf("Options.Namespace %q", namespace))
		valid := maxKeyLength >= 0 && maxLease >= 0 && maxHold >= 0 && !badNS && !badTags
		if err != nil && !errors.Is(err, locking.ErrInvalidOptions) {
			t.Fatalf("Validate(%+v) = %v, does not match ErrInvalidOptions", o, err)
		}
		if valid != (err == nil) {
			t.Fatalf("Validate(%+v) = %v, want valid=%v", o, err, valid)
		}
	})
}
