package leadership_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hostloom/hostloom/core/leadership"
)

// fuzzCleanKey is the oracle for K4: nonempty, valid UTF-8, no whitespace
// or control characters.
func fuzzCleanKey(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// fuzzNamesOne reports whether msg quotes at least one of names.
func fuzzNamesOne(msg string, names ...string) bool {
	for _, n := range names {
		if strings.Contains(msg, fmt.Sprintf("%q", n)) {
			return true
		}
	}
	return false
}

// FuzzResolveLockKey: ResolveLockKey never panics; a resolved key follows
// K1 (LockKey literally), K2 (every {role} replaced, the rest literal), K4
// and K5; ValidateFor agrees with it; every error quotes the offending
// role, format, exact key or resolved key.
func FuzzResolveLockKey(f *testing.F) {
	roles := []string{"scheduler", "", "a b", "x\x00", "é", "{role}", "{", "\xff", strings.Repeat("r", 600)}
	formats := []string{"leader:{role}", "{elections}:{role}", "election:eu:{role}", "{role}{role}", "{Role}", "{ROLE}",
		"no-placeholder", "", "{role", "role}", "{{role}}", "a b:{role}", "\t{role}", "{role}\n", "{role}\x7f", "\xff{role}"}
	exact := []string{"", "billing-leader", "{role}", "a b", "\x00", strings.Repeat("k", 513)}
	for _, r := range roles {
		for _, fm := range formats {
			f.Add(r, fm, "", 512)
		}
		for _, k := range exact {
			f.Add(r, "leader:{role}", k, 512)
		}
	}
	f.Add("scheduler", "leader:{role}", "", 16) // 16 bytes exactly
	f.Add("scheduler", "leader:{role}", "", 15)
	f.Add("scheduler", "leader:{role}", "", 0)
	f.Add("scheduler", "leader:{role}", "", -1)
	f.Fuzz(func(t *testing.T, role, format, lockKey string, maxKeyLength int) {
		o := leadership.DefaultOptions()
		o.LockKeyFormat, o.LockKey = format, lockKey
		if format == "" {
			format = leadership.DefaultLockKeyFormat // L10: empty is the default
		}
		key, err := o.ResolveLockKey(role, maxKeyLength)
		verr := o.ValidateFor(role, maxKeyLength)
		if (err == nil) != (verr == nil) {
			t.Fatalf("ResolveLockKey err %v but ValidateFor err %v", err, verr)
		}
		resolved := lockKey
		if lockKey == "" {
			resolved = strings.ReplaceAll(format, leadership.RolePlaceholder, role)
		}
		if err != nil {
			if !fuzzNamesOne(err.Error(), role, format, lockKey, resolved) {
				t.Fatalf("error %q quotes none of role %q, format %q, lock key %q, resolved %q", err, role, format, lockKey, resolved)
			}
			return
		}
		if key != resolved {
			t.Fatalf("ResolveLockKey(%q) with format %q, key %q = %q, want %q", role, format, lockKey, key, resolved)
		}
		if lockKey == "" && !strings.Contains(format, leadership.RolePlaceholder) {
			t.Fatalf("format %q without %s resolved to %q", format, leadership.RolePlaceholder, key)
		}
		if !fuzzCleanKey(key) || !fuzzCleanKey(role) {
			t.Fatalf("role %q resolved to unclean key %q", role, key)
		}
		if maxKeyLength > 0 && len(key) > maxKeyLength {
			t.Fatalf("key %q of %d bytes passed max_key_length %d", key, len(key), maxKeyLength)
		}
	})
}

// FuzzOptionsValidate: Validate never panics, accepts exactly the timing
// T1 and T3 allow (with a valid policy and key syntax), and every error
// names the offending option with its value.
func FuzzOptionsValidate(f *testing.F) {
	d := leadership.DefaultOptions()
	f.Add(int64(d.Lease), int64(d.RenewInterval), int64(d.RetryInterval), int(d.WhenUncoordinated), d.LockKeyFormat, "")
	f.Add(int64(time.Second), int64(500*time.Millisecond), int64(time.Millisecond), 2, "{role}", "")
	f.Add(int64(time.Second), int64(500*time.Millisecond+1), int64(1), 1, "x{role}", "")
	f.Add(int64(0), int64(0), int64(0), 0, "", "")
	f.Add(int64(-1), int64(-1), int64(-1), 3, "no-role", "exact key")
	f.Add(int64(leadership.MaxWait+1), int64(leadership.MaxWait), int64(leadership.MaxWait+1), -1, "{role}", "exact")
	f.Add(int64(1<<63-1), int64(-1<<63), int64(1), 1, "{role}\x00", "")
	f.Add(int64(3), int64(1), int64(1), 1, "{role}", "")
	f.Fuzz(func(t *testing.T, lease, renew, retry int64, when int, format, lockKey string) {
		o := leadership.Options{Lease: time.Duration(lease), RenewInterval: time.Duration(renew), RetryInterval: time.Duration(retry),
			WhenUncoordinated: leadership.WhenUncoordinated(when), LockKeyFormat: format, LockKey: lockKey}
		err := o.Validate()
		if err != nil && !errors.Is(err, leadership.ErrInvalidOptions) {
			t.Fatalf("Validate(%+v) = %v, does not match ErrInvalidOptions", o, err)
		}
		// Zero fields take their defaults (L10); check what Validate sees.
		if o.Lease == 0 {
			o.Lease = leadership.DefaultLease
		}
		if o.RenewInterval == 0 {
			o.RenewInterval = leadership.DefaultRenewInterval
			if o.Lease > 0 && o.Lease/3 < o.RenewInterval {
				o.RenewInterval = max(o.Lease/3, time.Nanosecond)
			}
		}
		if o.RetryInterval == 0 {
			o.RetryInterval = leadership.DefaultRetryInterval
		}
		if o.WhenUncoordinated == 0 {
			o.WhenUncoordinated = leadership.Follow
		}
		if format == "" {
			format = leadership.DefaultLockKeyFormat
		}
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		expect := func(bad bool, what string) {
			t.Helper()
			if bad && !strings.Contains(msg, what) {
				t.Fatalf("Validate(%+v) = %q, want an error naming %s", o, msg, what)
			}
		}
		cadenceOK := func(name string, v time.Duration) bool {
			bad := v <= 0 || v > leadership.MaxWait
			expect(bad, fmt.Sprintf("%s %v", name, v))
			return !bad
		}
		leaseOK := cadenceOK("Options.Lease", o.Lease)
		renewOK := cadenceOK("Options.RenewInterval", o.RenewInterval)
		retryOK := cadenceOK("Options.RetryInterval", o.RetryInterval)
		t1 := !leaseOK || !renewOK || o.RenewInterval <= o.Lease/2
		expect(!t1, fmt.Sprintf("Options.RenewInterval %v", o.RenewInterval))
		policyOK := o.WhenUncoordinated == leadership.Follow || o.WhenUncoordinated == leadership.Lead
		expect(!policyOK, fmt.Sprintf("Options.WhenUncoordinated %d", when))
		var keyOK bool
		if lockKey != "" {
			keyOK = fuzzCleanKey(lockKey)
			expect(!keyOK, fmt.Sprintf("%q", lockKey))
		} else {
			keyOK = strings.Contains(format, leadership.RolePlaceholder) && fuzzCleanKey(format)
			expect(!keyOK, "Options.LockKeyFormat")
		}
		valid := leaseOK && renewOK && retryOK && t1 && policyOK && keyOK
		if valid != (err == nil) {
			t.Fatalf("Validate(%+v) = %v, want valid=%v", o, err, valid)
		}
	})
}
