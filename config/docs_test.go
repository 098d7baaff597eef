package config_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hostloom/hostloom/config"
)

// docRow matches a reference table row whose first cell is a `key`.
var docRow = regexp.MustCompile("^\\|\\s*`([a-z_.<>]+)`\\s*\\|")

// splitRow splits a Markdown table row on unescaped pipes and unescapes
// "\|" inside cells.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// TestDocs_ConfigurationReferenceMatchesKeys keeps docs/configuration.md in
// sync with the code: every key config.Keys lists has exactly one row with
// its type, default and environment variable, every row names a key that
// exists, and every row has a description.
func TestDocs_ConfigurationReferenceMatchesKeys(t *testing.T) {
	b, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	// The keys of this module, with its own backend's (locking.redis.*);
	// a row of another module's backend (locking.<name>.*, such as
	// locking.postgres.*, whose section this module does not know) is
	// checked by that module's own test.
	linked := config.Keys()
	keys := map[string]config.Key{}
	sections := map[string]bool{} // locking.<name> of this module
	for _, k := range linked {
		keys[k.Name] = k
		if parts := strings.Split(k.Name, "."); len(parts) > 2 && parts[0] == "locking" {
			sections[parts[1]] = true
		}
	}
	otherBackend := func(name string) bool {
		parts := strings.Split(name, ".")
		return len(parts) > 2 && parts[0] == "locking" && !sections[parts[1]]
	}
	seen := map[string]bool{}
	for n, line := range strings.Split(string(b), "\n") {
		if !docRow.MatchString(line) {
			continue
		}
		cells := splitRow(line)
		if len(cells) != 5 {
			t.Errorf("line %d: %d cells, want key, type, default, environment variable, meaning: %s", n+1, len(cells), line)
			continue
		}
		name := strings.Trim(cells[0], "`")
		if otherBackend(name) {
			continue
		}
		k, ok := keys[name]
		if !ok {
			t.Errorf("line %d: %q is documented but is not a configuration key", n+1, name)
			continue
		}
		if seen[name] {
			t.Errorf("line %d: %q is documented twice", n+1, name)
		}
		seen[name] = true
		if cells[1] != k.Type {
			t.Errorf("line %d: %s: type %q in the doc, %q in the code", n+1, name, cells[1], k.Type)
		}
		if got := strings.Trim(cells[2], "`"); got != k.Default {
			t.Errorf("line %d: %s: default %q in the doc, %q in the code", n+1, name, got, k.Default)
		}
		if got := strings.Trim(cells[3], "`"); got != k.Env {
			t.Errorf("line %d: %s: variable %q in the doc, %q in the code", n+1, name, got, k.Env)
		}
		if cells[4] == "" {
			t.Errorf("line %d: %s has no description", n+1, name)
		}
	}
	for _, k := range linked {
		if !seen[k.Name] {
			t.Errorf("%s (%s, default %s, %s) is missing from docs/configuration.md", k.Name, k.Type, k.Default, k.Env)
		}
	}
}
