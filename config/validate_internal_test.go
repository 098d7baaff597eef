package config

import (
	"slices"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
)

// TestOptionKeys_L10_EveryFieldHasItsKey: the Go fields a core
// *locking.OptionError may name map to keys Load knows, and a role's
// overrides report each key they set.
func TestOptionKeys_L10_EveryFieldHasItsKey(t *testing.T) {
	var names []string
	for _, k := range Keys() {
		names = append(names, k.Name)
	}
	for field, key := range lockingKeys {
		if !slices.Contains(names, "locking."+key) {
			t.Errorf("locking.Options.%s maps to locking.%s, which is no key", field, key)
		}
	}
	d, s, b, i := time.Second, "x:{role}", true, 1
	w := leadership.Lead
	all := RoleOverrides{Lease: &d, RenewInterval: &d, RetryInterval: &d, SafetyMargin: &d,
		WhenUncoordinated: &w, LockKeyFormat: &s, LockKey: &s, Balance: &b, Priority: &i}
	for field, key := range leadershipKeys {
		if !slices.Contains(names, "leadership.roles.<role>."+key) {
			t.Errorf("leadership.Options.%s maps to leadership.roles.<role>.%s, which is no key", field, key)
		}
		if !all.sets(key) || (RoleOverrides{}).sets(key) {
			t.Errorf("RoleOverrides.sets(%q) does not follow the field", key)
		}
	}
}
