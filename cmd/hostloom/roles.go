package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
)

// roleKeys maps roles to their lock keys and back, by the configuration's
// leadership.lock_key_format and the per-role overrides, as the electors
// of the service resolve them (K1, K2).
type roleKeys struct {
	cfg       config.LeadershipConfig
	maxKeyLen int
	format    *regexp.Regexp    // the section-wide format, {role} captured; nil with a section-wide lock_key
	literal   map[string]string // key → role, for roles whose key the overrides fix
}

// errNoSuchRole is matched by the error for a role with nothing stored.
var errNoSuchRole = errors.New("no such role")

func newRoleKeys(cfg *config.Config) (*roleKeys, error) {
	r := &roleKeys{cfg: cfg.Leadership, maxKeyLen: cfg.Locking.MaxKeyLength, literal: map[string]string{}}
	if cfg.Leadership.LockKey == "" {
		parts := strings.Split(cfg.Leadership.LockKeyFormat, leadership.RolePlaceholder)
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		// Every {role} must expand to the same role; a backreference would
		// say so, but Go's regexp has none, so roleOf checks the groups.
		re, err := regexp.Compile("^" + strings.Join(parts, "(.+?)") + "$")
		if err != nil {
			return nil, fmt.Errorf("leadership.lock_key_format %q: %w", cfg.Leadership.LockKeyFormat, err)
		}
		r.format = re
	}
	for _, role := range slices.Sorted(maps.Keys(cfg.Leadership.Roles)) {
		if key, err := r.keyOf(role); err == nil {
			r.literal[key] = role
		}
	}
	return r, nil
}

// keyOf returns role's lock key.
func (r *roleKeys) keyOf(role string) (string, error) {
	return r.cfg.Options(role).ResolveLockKey(role, r.maxKeyLen)
}

// roleOf returns the role whose lock key is key.
func (r *roleKeys) roleOf(key string) (string, bool) {
	if role, ok := r.literal[key]; ok {
		return role, true
	}
	if r.format == nil {
		return "", false
	}
	m := r.format.FindStringSubmatch(key)
	if m == nil {
		return "", false
	}
	role := m[1]
	for _, other := range m[2:] {
		if other != role {
			return "", false
		}
	}
	// A role with its own key or format does not live under the
	// section-wide one.
	if k, err := r.keyOf(role); err != nil || k != key {
		return "", false
	}
	return role, true
}

// roleKey is one role of the namespace and its lock key.
type roleKey struct {
	role, key string
}

// list returns the roles of the namespace that the store keeps anything for
// (a lease, a fence or participants), sorted by role. With names, only
// those roles, in the order given; a name with nothing stored is an error
// matching errNoSuchRole.
func (e *env) list(ctx context.Context, names []string) ([]roleKey, error) {
	if len(names) > 0 {
		out := make([]roleKey, 0, len(names))
		for _, role := range names {
			rk, err := e.lookup(ctx, role)
			if err != nil {
				return nil, err
			}
			out = append(out, rk)
		}
		return out, nil
	}
	rctx, cancel := e.request(ctx)
	defer cancel()
	keys, err := e.lock.Keys(rctx, "")
	if err != nil {
		return nil, err
	}
	var out []roleKey
	for _, k := range keys {
		if role, ok := e.roles.roleOf(k); ok {
			out = append(out, roleKey{role: role, key: k})
		}
	}
	slices.SortFunc(out, func(a, b roleKey) int { return strings.Compare(a.role, b.role) })
	return out, nil
}

// lookup resolves role's key and checks that the namespace knows the
// role: a lease, a fence or a participant is stored for it.
func (e *env) lookup(ctx context.Context, role string) (roleKey, error) {
	key, err := e.roles.keyOf(role)
	if err != nil {
		return roleKey{}, fmt.Errorf("role %q: %w", role, err)
	}
	st, err := e.inspect(ctx, key)
	if err != nil {
		return roleKey{}, err
	}
	if !st.Held && st.Fence == 0 && len(st.Participants) == 0 {
		return roleKey{}, fmt.Errorf("%w %q in namespace %q", errNoSuchRole, role, e.namespace())
	}
	return roleKey{role: role, key: key}, nil
}

// inspect reads key's state. A participant record that does not parse is
// left out (the provider skipped it) with a warning naming the key; the
// rest is shown.
func (e *env) inspect(ctx context.Context, key string) (locking.KeyState, error) {
	rctx, cancel := e.request(ctx)
	defer cancel()
	st, err := e.lock.Inspect(rctx, key)
	if errors.Is(err, locking.ErrBadRecord) {
		fmt.Fprintf(e.stderr, "hostloom: warning: %v\n", err)
		err = nil
	}
	return st, err
}
