package config

import (
	"fmt"
	"slices"
	"strings"
)

// CheckRoles reports every leadership.roles.<name> override that names
// none of the declared roles, so a misspelt role (biling for billing)
// fails start instead of being ignored (O4). The fx composition calls it
// with every role it runs. Each problem is a *FieldError naming the key,
// its source and the declared roles; the errors are joined.
func (l LeadershipConfig) CheckRoles(declared ...string) error {
	return checkDeclared(l.Roles, "leadership.roles.", l.src, declared, func(name string, known []string) string {
		reason := fmt.Sprintf("names no declared role; declared: %s", list(known))
		for _, d := range known {
			if strings.EqualFold(d, name) {
				reason += fmt.Sprintf(" (role names set through the environment are lower case: override %q in YAML)", d)
				break
			}
		}
		return reason
	})
}

// list quotes names for an error; "none" when there are none.
func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
