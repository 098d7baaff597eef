package config

import (
	"errors"
	"slices"
)

// checkDeclared reports every override of overrides (the map under the
// dotted prefix, such as "leadership.roles.") whose name is none of
// declared: one *FieldError per such key, naming the key and its source,
// with the reason why(name, known), known being declared sorted without
// repeats. The errors are joined, in the order of the names.
func checkDeclared[V any](overrides map[string]V, prefix string, src sources, declared []string, why func(name string, known []string) string) error {
	known := slices.Clone(declared)
	slices.Sort(known)
	known = slices.Compact(known)
	var errs []error
	for _, name := range sortedKeys(overrides) {
		if slices.Contains(known, name) {
			continue
		}
		key := prefix + name
		errs = append(errs, &FieldError{Key: key, Source: src.of(key), Reason: why(name, known)})
	}
	return errors.Join(errs...)
}
