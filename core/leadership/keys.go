package leadership

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hostloom/hostloom/core/locking"
)

// ResolveLockKey resolves the consumer key for role and validates it
// without starting an election (K7): LockKey literally when set (K1),
// otherwise LockKeyFormat with every "{role}" replaced by role (K2). The
// key must be nonempty, without whitespace or control characters (K4), and
// at most maxKeyLength bytes when maxKeyLength > 0 (K5). Errors wrap a
// *locking.KeyError where the key is at fault, so errors.Is(err,
// locking.ErrInvalidKey) holds.
func (o Options) ResolveLockKey(role string, maxKeyLength int) (string, error) {
	o = o.withDefaults()
	var errs []error
	if err := checkRole(role); err != nil {
		errs = append(errs, err)
	}
	syntax := o.keySyntaxErrors()
	errs = append(errs, syntax...)
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	key := o.LockKey
	if key == "" {
		key = strings.ReplaceAll(o.LockKeyFormat, RolePlaceholder, role)
	}
	if err := locking.CheckKey(key, maxKeyLength); err != nil {
		return "", fmt.Errorf("leadership: lock key for role %q: %w", role, err)
	}
	return key, nil
}

// keySyntaxErrors checks what can be checked without a role: an exact
// LockKey's characters, or the format's placeholder and characters.
func (o Options) keySyntaxErrors() []error {
	if o.LockKey != "" {
		if err := locking.CheckKey(o.LockKey, 0); err != nil {
			return []error{invalid("LockKey", o.LockKey, nil, ": %v", err)}
		}
		return nil
	}
	var errs []error
	if !strings.Contains(o.LockKeyFormat, RolePlaceholder) {
		errs = append(errs, invalid("LockKeyFormat", o.LockKeyFormat, nil, "%q must contain %s", o.LockKeyFormat, RolePlaceholder))
	}
	if o.LockKeyFormat != "" {
		if err := locking.CheckKey(o.LockKeyFormat, 0); err != nil {
			errs = append(errs, invalid("LockKeyFormat", o.LockKeyFormat, nil, ": %v", err))
		}
	}
	return errs
}

// checkRole rejects an empty role and one with whitespace or control
// characters: the role names metrics, logs and (through the format) keys.
func checkRole(role string) error {
	if role == "" {
		return errors.New(`leadership: role "" must be nonempty`)
	}
	if err := locking.CheckKey(role, 0); err != nil {
		var ke *locking.KeyError
		if errors.As(err, &ke) {
			return fmt.Errorf("leadership: role %q %s", role, ke.Reason)
		}
		return fmt.Errorf("leadership: role %q: %w", role, err)
	}
	return nil
}
