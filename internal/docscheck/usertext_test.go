package docscheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// userDocs are the documents written for users, as opposed to
// docs/rules.md, which explains the rule ids.
var userDocs = []string{"README.md", "docs/quickstart.md", "docs/operations.md", "docs/configuration.md", "docs/telemetry.md"}

// idWordRE finds words shaped like rule ids; ruleEntries decides which are.
var idWordRE = regexp.MustCompile(`\b[A-Z][0-9]{1,2}\b`)

// TestUserText_NoRuleIDs: rule ids belong in docs/rules.md, test names and
// godoc cross-references. The prose of the user documents and every string
// literal of the programs and libraries (errors, log messages and fields,
// CLI output and help) carry none: a user reading them has not read
// docs/rules.md.
func TestUserText_NoRuleIDs(t *testing.T) {
	root := repoRoot(t)
	ids := ruleEntries(t, root)
	found := 0
	report := func(where string, line int, text string) {
		for _, w := range idWordRE.FindAllString(text, -1) {
			if ids[w] {
				found++
				t.Errorf("%s:%d: rule id %s in text a user reads: say what the rule means instead (%q)", where, line, w, strings.TrimSpace(text))
			}
		}
	}
	for _, rel := range userDocs {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			report(rel, i+1, line)
		}
	}
	for _, rel := range repoFiles(t, root) {
		// bench/ is the maintainers' harness: its report cites the rules whose
		// targets it measures.
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, "bench/") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(rel)), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		skip := map[*ast.BasicLit]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				if n.Tag != nil {
					skip[n.Tag] = true // struct tags are not shown to users
				}
			case *ast.ImportSpec:
				skip[n.Path] = true
			case *ast.BasicLit:
				if n.Kind != token.STRING || skip[n] {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err != nil {
					s = n.Value
				}
				report(rel, fset.Position(n.Pos()).Line, s)
			}
			return true
		})
	}
	t.Logf("%d rule ids in user-facing text", found)
}

// TestUserText_Scanner pins what the scan above counts as a rule id.
func TestUserText_Scanner(t *testing.T) {
	for text, want := range map[string][]string{
		"fails start (T2)":          {"T2"},
		"rules G1-G3":               {"G1", "G3"},
		"color #E6E6E6, 0xE6":       nil,
		"p99 and P99 latency":       {"P99"}, // shaped like an id; ruleEntries has no P99
		"hostloom.leadership.fence": nil,
	} {
		got := idWordRE.FindAllString(text, -1)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%q: %v, want %v", text, got, want)
		}
	}
}
