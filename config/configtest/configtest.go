// Package configtest holds checks a backend's module runs in its own
// tests against the configuration package: today, that the reference
// table of its section in docs/configuration.md matches the keys the
// section declares (type, default, environment variable, a description).
// The config package checks every other row and leaves a backend's rows to
// the backend, so that adding a backend touches no file of config.
package configtest

import (
	"os"
	"regexp"
	"strings"

	"github.com/hostloom/hostloom/config"
)

// TB is the part of testing.TB the checks report to.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatal(args ...any)
}

// CheckReference reports to t every row of the reference at path (a
// Markdown file of tables whose rows are `key` | type | default |
// variable | description) for a key under locking.<backend's name> that is
// not a key of the backend's section, is documented twice, or disagrees
// with the section on its type, default or variable, or has no
// description; and every key of the section the reference lacks.
func CheckReference(t TB, path string, b config.Backend) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "locking." + string(b.Provider()) + "."
	row := regexp.MustCompile("^\\|\\s*`(" + regexp.QuoteMeta(prefix) + "[a-z_.]+)`\\s*\\|\\s*([^|]+?)\\s*\\|\\s*`?([^|`]*)`?\\s*\\|\\s*`?([^|`]*)`?\\s*\\|\\s*(.*)\\|\\s*$")
	keys := map[string]config.Key{}
	for _, k := range config.Keys(b) {
		if strings.HasPrefix(k.Name, prefix) {
			keys[k.Name] = k
		}
	}
	if len(keys) == 0 {
		t.Fatal("config.Keys lists no " + prefix + "* key")
	}
	seen := map[string]bool{}
	for n, line := range strings.Split(string(data), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		k, ok := keys[m[1]]
		switch {
		case !ok:
			t.Errorf("%s:%d: %q is documented but is not a key of the section", path, n+1, m[1])
		case seen[k.Name]:
			t.Errorf("%s:%d: %q is documented twice", path, n+1, m[1])
		case m[2] != k.Type || m[3] != k.Default || m[4] != k.Env || strings.TrimSpace(m[5]) == "":
			t.Errorf("%s:%d: %s: doc %q/%q/%q, code %q/%q/%q, or no description", path, n+1, k.Name, m[2], m[3], m[4], k.Type, k.Default, k.Env)
		}
		seen[m[1]] = true
	}
	for name, k := range keys {
		if !seen[name] {
			t.Errorf("%s (%s, default %s, %s) is missing from %s", name, k.Type, k.Default, k.Env, path)
		}
	}
}
