package etcdlockbuild_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hostloom/hostloom/backends/etcd/etcdlockbuild"
	"github.com/hostloom/hostloom/config"
)

// docRow matches a reference table row of docs/configuration.md whose
// first cell is a locking.etcd key; it captures the key, type,
// default and variable cells.
var docRow = regexp.MustCompile("^\\|\\s*`(locking\\.etcd\\.[a-z_.]+)`\\s*\\|\\s*([^|]+?)\\s*\\|\\s*`?([^|`]*)`?\\s*\\|\\s*`?([^|`]*)`?\\s*\\|\\s*(.*)\\|\\s*$")

// TestDocs_X1_N1_ReferenceMatchesSection keeps the locking.etcd rows of
// docs/configuration.md in sync with the section: config's own test
// checks every other row, and leaves these to the backend's module.
func TestDocs_X1_N1_ReferenceMatchesSection(t *testing.T) {
	b, err := os.ReadFile("../../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]config.Key{}
	for _, k := range config.Keys(etcdlockbuild.Backend{}) {
		if strings.HasPrefix(k.Name, "locking.etcd.") {
			keys[k.Name] = k
		}
	}
	seen := map[string]bool{}
	for n, line := range strings.Split(string(b), "\n") {
		m := docRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		k, ok := keys[m[1]]
		switch {
		case !ok:
			t.Errorf("line %d: %q is documented but is not a key of the section", n+1, m[1])
		case seen[k.Name]:
			t.Errorf("line %d: %q is documented twice", n+1, m[1])
		case m[2] != k.Type || m[3] != k.Default || m[4] != k.Env || strings.TrimSpace(m[5]) == "":
			t.Errorf("line %d: %s: doc %q/%q/%q, code %q/%q/%q, or no description", n+1, k.Name, m[2], m[3], m[4], k.Type, k.Default, k.Env)
		}
		seen[m[1]] = true
	}
	if len(keys) == 0 {
		t.Fatal("config.Keys lists no locking.etcd key")
	}
	for name, k := range keys {
		if !seen[name] {
			t.Errorf("%s (%s, default %s, %s) is missing from docs/configuration.md", name, k.Type, k.Default, k.Env)
		}
	}
}
