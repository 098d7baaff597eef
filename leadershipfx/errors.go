package leadershipfx

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// longRole is the length above which messages shorten a role name: a
// role name is also part of its lock key, so a long one would otherwise
// fill an error line several times over.
const longRole = 64

// quoteRole quotes name for a message, shortened when it is long.
func quoteRole(name string) string {
	if len(name) <= longRole {
		return strconv.Quote(name)
	}
	return fmt.Sprintf("%q (%d bytes)", shortRole(name), len(name))
}

// shortRole is the first bytes of a long role name, cut at a rune
// boundary, and an ellipsis.
func shortRole(name string) string {
	cut := longRole / 2
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut] + "…"
}

// roleErr is a HostLoom error about one role, as fx reports it: the
// error's own text, which names the role, with a long role name
// shortened; prefixed with the role when the text does not name it.
type roleErr struct {
	role string
	err  error
}

func roleError(role string, err error) error {
	if err == nil {
		return nil
	}
	return &roleErr{role: role, err: err}
}

func (e *roleErr) Error() string {
	msg := e.err.Error()
	if !strings.Contains(msg, e.role) {
		return "leadershipfx: role " + quoteRole(e.role) + ": " + msg
	}
	if len(e.role) <= longRole {
		return msg
	}
	return strings.ReplaceAll(msg, e.role, shortRole(e.role)) + fmt.Sprintf(" (role name of %d bytes shortened)", len(e.role))
}

func (e *roleErr) Unwrap() error { return e.err }
