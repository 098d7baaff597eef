package leadership_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

func TestOptions_Defaults(t *testing.T) {
	o := leadership.DefaultOptions()
	want := leadership.Options{
		Lease:             15 * time.Second,
		RenewInterval:     5 * time.Second,
		RetryInterval:     2 * time.Second,
		WhenUncoordinated: leadership.Follow,
		LockKeyFormat:     "leader:{role}",
	}
	if o != want {
		t.Fatalf("DefaultOptions() = %+v, want %+v", o, want)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
}

func TestOptions_T1_T3_Validate(t *testing.T) {
	tests := []struct {
		name string
		mut  func(*leadership.Options)
		want []string // substrings, each must appear; empty: valid
	}{
		{"defaults", func(*leadership.Options) {}, nil},
		{"T1 renew exactly half", func(o *leadership.Options) { o.Lease, o.RenewInterval = 10*time.Second, 5*time.Second }, nil},
		{"T1 renew over half", func(o *leadership.Options) { o.RenewInterval = 9 * time.Second },
			[]string{"leadership: invalid options: Options.RenewInterval 9s exceeds half of Options.Lease 15s"}},
		{"L10 zero lease is the default", func(o *leadership.Options) { o.Lease = 0 }, nil},
		{"L10 a short lease alone gets a renewal within it", func(o *leadership.Options) { o.Lease, o.RenewInterval = time.Second, 0 }, nil},
		{"T3 negative lease", func(o *leadership.Options) { o.Lease = -time.Second },
			[]string{"leadership: invalid options: Options.Lease -1s must be positive"}},
		{"T3 negative renew", func(o *leadership.Options) { o.RenewInterval = -time.Second },
			[]string{"leadership: invalid options: Options.RenewInterval -1s must be positive"}},
		{"L10 zero retry is the default", func(o *leadership.Options) { o.RetryInterval = 0 }, nil},
		{"T3 retry over max wait", func(o *leadership.Options) { o.RetryInterval = 25 * time.Hour },
			[]string{"leadership: invalid options: Options.RetryInterval 25h0m0s exceeds the longest wait 24h0m0s"}},
		{"T3 lease over max wait", func(o *leadership.Options) { o.Lease = 49 * time.Hour },
			[]string{"leadership: invalid options: Options.Lease 49h0m0s exceeds the longest wait 24h0m0s"}},
		{"sub-second", func(o *leadership.Options) {
			o.Lease, o.RenewInterval, o.RetryInterval = time.Second, 250*time.Millisecond, 100*time.Millisecond
		}, nil},
		{"L10 zero policy is Follow", func(o *leadership.Options) { o.WhenUncoordinated = 0 }, nil},
		{"bad policy", func(o *leadership.Options) { o.WhenUncoordinated = 7 },
			[]string{"leadership: invalid options: Options.WhenUncoordinated 7 must be follow (1) or lead (2)"}},
		{"K2 format without placeholder", func(o *leadership.Options) { o.LockKeyFormat = "leader:{Role}" },
			[]string{`leadership: invalid options: Options.LockKeyFormat "leader:{Role}" must contain {role}`}},
		{"L10 empty format is the default", func(o *leadership.Options) { o.LockKeyFormat = "" }, nil},
		{"K4 format whitespace", func(o *leadership.Options) { o.LockKeyFormat = "leader {role}" },
			[]string{`leadership: invalid options: Options.LockKeyFormat: locking: invalid key "leader {role}": contains whitespace ' '`}},
		{"K1 exact key wins, format not validated", func(o *leadership.Options) { o.LockKey, o.LockKeyFormat = "exact", "no placeholder" }, nil},
		{"K4 exact key control char", func(o *leadership.Options) { o.LockKey = "a\x01b" },
			[]string{`leadership: invalid options: Options.LockKey: locking: invalid key "a\x01b": contains control character '\x01'`}},
		{"all problems at once", func(o *leadership.Options) { o.Lease, o.RetryInterval, o.LockKeyFormat = -1, -2, "x" },
			[]string{"Options.Lease -1ns", "Options.RetryInterval -2ns", `Options.LockKeyFormat "x"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := leadership.DefaultOptions()
			tt.mut(&o)
			err := o.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestOptions_K1_K2_K4_K5_ResolveLockKey(t *testing.T) {
	tests := []struct {
		name    string
		role    string
		format  string
		key     string
		maxLen  int
		want    string
		wantErr string
	}{
		{name: "K1 default format", role: "billing", want: "leader:billing"},
		{name: "K2 spec example", role: "scheduler", format: "election:eu:{role}", want: "election:eu:scheduler"},
		{name: "K2 literal braces", role: "scheduler", format: "{elections}:{role}", want: "{elections}:scheduler"},
		{name: "K2 every occurrence", role: "r", format: "{role}/{role}:{role}", want: "r/r:r"},
		{name: "K2 case-sensitive placeholder", role: "r", format: "{ROLE}:{role}", want: "{ROLE}:r"},
		{name: "K1 exact key literal", role: "r", key: "fixed:{role}", want: "fixed:{role}"},
		{name: "K1 exact key ignores bad format", role: "r", format: "bad", key: "fixed", want: "fixed"},
		{name: "K5 at limit", role: "abcd", maxLen: len("leader:abcd"), want: "leader:abcd"},
		{name: "K5 over limit", role: "abcde", maxLen: len("leader:abcd"),
			wantErr: `leadership: lock key for role "abcde": locking: invalid key "leader:abcde": 12 bytes exceeds max_key_length 11`},
		{name: "K5 exact key over limit", role: "r", key: "0123456789", maxLen: 5,
			wantErr: `locking: invalid key "0123456789": 10 bytes exceeds max_key_length 5`},
		{name: "K4 role with whitespace", role: "bill ing",
			wantErr: `leadership: role "bill ing" contains whitespace ' '`},
		{name: "K4 role with control char", role: "a\x7fb",
			wantErr: `leadership: role "a\x7fb" contains control character '\x7f'`},
		{name: "empty role", role: "", wantErr: `leadership: role "" must be nonempty`},
		{name: "K2 missing placeholder", role: "r", format: "leader",
			wantErr: `leadership: invalid options: Options.LockKeyFormat "leader" must contain {role}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := leadership.DefaultOptions()
			if tt.format != "" {
				o.LockKeyFormat = tt.format
			}
			o.LockKey = tt.key
			got, err := o.ResolveLockKey(tt.role, tt.maxLen)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ResolveLockKey() = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				vErr := o.ValidateFor(tt.role, tt.maxLen)
				if vErr == nil || !strings.Contains(vErr.Error(), tt.wantErr) {
					t.Fatalf("ValidateFor() = %v; want error containing %q", vErr, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ResolveLockKey() = %q, %v; want %q", got, err, tt.want)
			}
			if err := o.ValidateFor(tt.role, tt.maxLen); err != nil {
				t.Fatalf("ValidateFor() = %v", err)
			}
		})
	}
}

func TestOptions_K5_KeyErrorIsInvalidKey(t *testing.T) {
	o := leadership.DefaultOptions()
	_, err := o.ResolveLockKey(strings.Repeat("r", 600), locking.DefaultMaxKeyLength)
	if !errors.Is(err, locking.ErrInvalidKey) {
		t.Fatalf("err = %v, want errors.Is ErrInvalidKey", err)
	}
	var ke *locking.KeyError
	if !errors.As(err, &ke) || !strings.HasPrefix(ke.Key, "leader:rrr") {
		t.Fatalf("errors.As KeyError = %v", ke)
	}
}

func TestOptions_K7_ValidateForAlsoChecksTiming(t *testing.T) {
	o := leadership.DefaultOptions()
	o.RenewInterval = 9 * time.Second
	err := o.ValidateFor("", 0)
	for _, w := range []string{"Options.RenewInterval 9s exceeds half of Options.Lease 15s", `role "" must be nonempty`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("ValidateFor() = %v, want it to contain %q", err, w)
		}
	}
}

func TestOptions_K3_ProviderKey(t *testing.T) {
	tests := []struct {
		name     string
		lockOpts func(*locking.Options)
		format   string
		want     string
	}{
		{"namespace and format", func(o *locking.Options) { o.Namespace = "billing" }, "election:eu:{role}", "billing:lock:election:eu:scheduler"},
		{"hash tags", func(o *locking.Options) { o.Namespace, o.UseHashTags = "billing", true }, "{elections}:{role}", "{billing}:lock:{elections}:scheduler"},
		{"no namespace", func(*locking.Options) {}, "leader:{role}", "lock:leader:scheduler"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo := locking.DefaultOptions()
			tt.lockOpts(&lo)
			lock, err := locking.New(memlock.New(), lo)
			if err != nil {
				t.Fatal(err)
			}
			o := leadership.DefaultOptions()
			o.LockKeyFormat = tt.format
			e, err := leadership.NewElector("scheduler", lock, o)
			if err != nil {
				t.Fatal(err)
			}
			d := leadership.Describe(e)
			if d.ProviderKey != tt.want {
				t.Errorf("ProviderKey = %q, want %q", d.ProviderKey, tt.want)
			}
			pk, err := lock.ProviderKey(e.LockKey())
			if err != nil || pk != tt.want {
				t.Errorf("lock.ProviderKey(%q) = %q, %v; want %q", e.LockKey(), pk, err, tt.want)
			}
		})
	}
}

func TestCheckLease_T2(t *testing.T) {
	lo := locking.DefaultOptions()
	lo.MaxLease = time.Minute
	lock, err := locking.New(memlock.New(), lo)
	if err != nil {
		t.Fatal(err)
	}
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval = 10*time.Minute, time.Minute
	err = leadership.CheckLease("billing", o, lock)
	want := `leadership: role "billing": lease 10m0s exceeds locking max_lease 1m0s`
	if err == nil || err.Error() != want {
		t.Fatalf("CheckLease() = %v, want %q", err, want)
	}
	o.Lease = time.Minute
	o.RenewInterval = 30 * time.Second
	if err := leadership.CheckLease("billing", o, lock); err != nil {
		t.Fatalf("lease equal to max_lease: %v", err)
	}
	// A custom lock without Limits is responsible for its own cap.
	o.Lease = 10 * time.Minute
	if err := leadership.CheckLease("billing", o, bareLock{lock}); err != nil {
		t.Fatalf("lock without limits: %v", err)
	}
}

func TestCheckComposition_K5_T2(t *testing.T) {
	lo := locking.DefaultOptions()
	lo.MaxLease, lo.MaxKeyLength = time.Minute, 10
	lock, err := locking.New(memlock.New(), lo)
	if err != nil {
		t.Fatal(err)
	}
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval = 2*time.Minute, time.Minute
	err = leadership.CheckComposition("billing", o, lock)
	for _, w := range []string{
		`role "billing": lease 2m0s exceeds locking max_lease 1m0s`,
		`"leader:billing": 14 bytes exceeds max_key_length 10`,
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("CheckComposition() = %v, want it to contain %q", err, w)
		}
	}
	if err := leadership.CheckComposition("billing", o, nil); err == nil || !strings.Contains(err.Error(), "nil lock") {
		t.Errorf("nil lock: %v", err)
	}
	o = leadership.DefaultOptions()
	o.LockKey = "ok"
	if err := leadership.CheckComposition("billing", o, lock); err != nil {
		t.Errorf("valid composition: %v", err)
	}
}

// TestOptions_L10_ErrorsAreStructured: a relation between two fields is
// one *locking.OptionError naming the field, its value and the related
// field; an invalid exact key keeps its *locking.KeyError as the cause.
func TestOptions_L10_ErrorsAreStructured(t *testing.T) {
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval = 10*time.Second, 6*time.Second
	var oe *locking.OptionError
	if err := o.Validate(); !errors.As(err, &oe) || !errors.Is(err, leadership.ErrInvalidOptions) ||
		oe.Field != "RenewInterval" || oe.Value != 6*time.Second || len(oe.Related) != 1 || oe.Related[0] != "Lease" {
		t.Fatalf("Validate() = %v (%+v)", err, oe)
	}
	o = leadership.DefaultOptions()
	o.LockKey = "two words"
	var ke *locking.KeyError
	if err := o.Validate(); !errors.As(err, &oe) || oe.Field != "LockKey" || oe.Value != "two words" || !errors.As(err, &ke) {
		t.Fatalf("Validate() = %v, want an OptionError for LockKey caused by a KeyError", err)
	}
}
