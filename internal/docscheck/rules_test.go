package docscheck

import (
	"bufio"
	"errors"
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rulesDoc is where every rule id is explained, relative to the repository
// root.
const rulesDoc = "docs/rules.md"

// families are the rule families' letters.
const families = "LKTECSFGPBOAQDHWXN"

// idRE matches a candidate rule id: a family letter and a number, standing
// alone as a word.
var idRE = regexp.MustCompile(`\b[` + families + `][0-9]+\b`)

// segmentRE matches one underscore-separated part of a test name that is a
// rule id.
var segmentRE = regexp.MustCompile(`^[` + families + `][0-9]+$`)

// anchorRE matches an entry's anchor in docs/rules.md.
var anchorRE = regexp.MustCompile(`<a id="([^"]+)"></a>`)

// citation is one cited rule id and where it was cited.
type citation struct {
	id   string
	file string // slash-separated, relative to the repository root
	line int
}

func (c citation) String() string { return fmt.Sprintf("%s:%d: %s", c.file, c.line, c.id) }

// repoRoot returns the main module's directory (the one with go.mod for
// github.com/hostloom/hostloom).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/hostloom/hostloom\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("docscheck: no go.mod of github.com/hostloom/hostloom above the working directory")
		}
		dir = parent
	}
}

// isPercentile reports whether id is a percentile (P50, P99, P999), which
// is never a rule id.
func isPercentile(id string) bool { return id[0] == 'P' && len(id) > 2 }

// textCitations returns the ids that text cites. text starts at line
// first of file; isString marks a string literal's contents, whose opening
// id (a table test's case name) counts too.
func textCitations(file string, first int, text string, isString bool) []citation {
	var out []citation
	locs := idRE.FindAllStringIndex(text, -1)
	cited := make([]bool, len(locs))
	for i, loc := range locs {
		id := text[loc[0]:loc[1]]
		if isPercentile(id) {
			continue
		}
		before, after := text[:loc[0]], text[loc[1]:]
		switch {
		case strings.HasSuffix(before, "("):
			cited[i] = true
		case after != "" && strings.ContainsRune("):,;", rune(after[0])):
			cited[i] = true
		case isString && loc[0] == 0 && strings.HasPrefix(after, " "):
			cited[i] = true
		case hasRuleWord(before):
			cited[i] = true
		}
		// Two ids joined by a dash, "and", "or", a comma or a slash cite
		// each other; a dash between ids of one family is a range.
		if i > 0 && !isPercentile(text[locs[i-1][0]:locs[i-1][1]]) {
			if sep := text[locs[i-1][1]:loc[0]]; isJoin(sep) {
				cited[i-1], cited[i] = true, true
				prev := text[locs[i-1][0]:locs[i-1][1]]
				if isRange(sep) && prev[0] == id[0] {
					lo, _ := strconv.Atoi(prev[1:])
					hi, _ := strconv.Atoi(id[1:])
					for n := lo + 1; n < hi; n++ {
						out = append(out, citation{id: fmt.Sprintf("%c%d", id[0], n), file: file, line: first + strings.Count(before, "\n")})
					}
				}
			}
		}
	}
	for i, loc := range locs {
		if cited[i] {
			out = append(out, citation{id: text[loc[0]:loc[1]], file: file, line: first + strings.Count(text[:loc[0]], "\n")})
		}
	}
	return out
}

// hasRuleWord reports whether before ends with the word "rule" or "rules"
// and a space.
func hasRuleWord(before string) bool {
	b := strings.ToLower(before)
	return strings.HasSuffix(b, "rule ") || strings.HasSuffix(b, "rules ")
}

// isJoin reports whether sep, the text between two ids, joins them.
func isJoin(sep string) bool {
	switch strings.TrimSpace(sep) {
	case ",", "and", "or", "/", "–", "—", "-", "to":
		return true
	}
	return false
}

// isRange reports whether sep makes two ids a range.
func isRange(sep string) bool {
	switch strings.TrimSpace(sep) {
	case "–", "—", "-", "to":
		return true
	}
	return false
}

// goCitations returns the ids a Go file cites in test names, comments and
// string literals.
func goCitations(file string, src []byte) ([]citation, error) {
	fset := token.NewFileSet()
	f := fset.AddFile(file, -1, len(src))
	var s scanner.Scanner
	var scanErr error
	s.Init(f, src, func(pos token.Position, msg string) {
		scanErr = errors.Join(scanErr, fmt.Errorf("%s: %s", pos, msg))
	}, scanner.ScanComments)
	var out []citation
	prev := token.ILLEGAL
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		line := fset.Position(pos).Line
		switch tok {
		case token.COMMENT:
			out = append(out, textCitations(file, line, lit, false)...)
		case token.STRING:
			text, err := strconv.Unquote(lit)
			if err != nil {
				text = lit
			}
			out = append(out, textCitations(file, line, text, true)...)
		case token.IDENT:
			if prev == token.FUNC && isTestName(lit) {
				for _, seg := range strings.Split(lit, "_")[1:] {
					if segmentRE.MatchString(seg) && !isPercentile(seg) {
						out = append(out, citation{id: seg, file: file, line: line})
					}
				}
			}
		}
		prev = tok
	}
	return out, scanErr
}

// isTestName reports whether name is a test, benchmark, fuzz target or
// example.
func isTestName(name string) bool {
	for _, p := range []string{"Test", "Benchmark", "Fuzz", "Example"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// repoFiles returns the repository's Go, Markdown and Lua files, relative
// to root, skipping hidden and underscore directories, testdata and vendor.
func repoFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(name) {
		case ".go", ".md", ".lua":
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// ruleEntries returns the ids docs/rules.md explains, checking that each
// has a heading and a paragraph and appears once.
func ruleEntries(t *testing.T, root string) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(root, rulesDoc))
	if err != nil {
		t.Fatalf("%s: %v", rulesDoc, err)
	}
	defer f.Close()
	ids := map[string]bool{}
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for i, l := range lines {
		m := anchorRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		id := m[1]
		if !strings.HasPrefix(l, "### ") || !strings.HasPrefix(strings.TrimPrefix(l, "### "+m[0]), id+" ") {
			t.Errorf("%s:%d: anchor %q must open a heading \"### <a id=%q></a>%s — title\"", rulesDoc, i+1, id, id, id)
		}
		if ids[id] {
			t.Errorf("%s:%d: %s has a second entry", rulesDoc, i+1, id)
		}
		ids[id] = true
		words := 0
		for _, body := range lines[i+1:] {
			if strings.HasPrefix(body, "#") {
				break
			}
			words += len(strings.Fields(body))
		}
		if words < 10 {
			t.Errorf("%s:%d: %s has no explanation (%d words under its heading)", rulesDoc, i+1, id, words)
		}
	}
	return ids
}

// TestRules_EveryCitedIDIsExplained fails for a rule id cited anywhere in
// the repository that docs/rules.md does not explain, and for a doc.go
// that cites ids without pointing to docs/rules.md.
func TestRules_EveryCitedIDIsExplained(t *testing.T) {
	root := repoRoot(t)
	entries := ruleEntries(t, root)
	if len(entries) == 0 {
		t.Fatalf("%s explains no rule id", rulesDoc)
	}
	var missing []citation
	cited := map[string]bool{}
	for _, rel := range repoFiles(t, root) {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		var cs []citation
		if strings.HasSuffix(rel, ".go") {
			if cs, err = goCitations(rel, src); err != nil {
				t.Errorf("%s: %v", rel, err)
			}
		} else {
			cs = textCitations(rel, 1, string(src), false)
		}
		for _, c := range cs {
			cited[c.id] = true
			if !entries[c.id] {
				missing = append(missing, c)
			}
		}
		if filepath.Base(rel) == "doc.go" && len(cs) > 0 && !strings.Contains(string(src), rulesDoc) {
			t.Errorf("%s cites rule ids (%s, …) but does not mention %s: end its package comment with\n\t// Rule ids (E6, K5, …) are explained in docs/rules.md.", rel, cs[0].id, rulesDoc)
		}
	}
	for _, c := range missing {
		t.Errorf("%s is cited but %s has no entry for it: add one (or, if it is not a rule id, reword the text)", c, rulesDoc)
	}
	if len(cited) < 20 {
		// The repository cites dozens of ids; finding few means the
		// scanner is broken, not that the code stopped citing rules.
		t.Errorf("found only %d distinct cited ids: the scanner misses citations", len(cited))
	}
	t.Logf("%d distinct rule ids cited, %d explained in %s", len(cited), len(entries), rulesDoc)
}

// TestRules_CitationForms pins which texts count as citing an id, so that
// the repository-wide test neither misses citations nor trips over
// unrelated words.
func TestRules_CitationForms(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		isString bool
		want     []string
	}{
		{name: "parenthesised", text: "checks the key (K5) first", want: []string{"K5"}},
		{name: "parenthesised list", text: "validates options and key (K5, T2) in OnStart", want: []string{"K5", "T2"}},
		{name: "colon", text: "E9: never leads", want: []string{"E9"}},
		{name: "closing parenthesis", text: "discarded as a follower's, C4)", want: []string{"C4"}},
		{name: "and", text: "timingErrors checks T1 and T3 and the policy", want: []string{"T1", "T3"}},
		{name: "range", text: "S1–S6 still hold", want: []string{"S2", "S3", "S4", "S5", "S1", "S6"}},
		{name: "ascii range", text: "rules G1-G3 here", want: []string{"G2", "G1", "G3"}},
		{name: "rule word", text: "see rule E6 for why", want: []string{"E6"}},
		{name: "string case name", text: "T1 renew over half", isString: true, want: []string{"T1"}},
		{name: "bare mention in prose", text: "the strict T2 check", want: nil},
		{name: "percentiles", text: "p50 and P99: (P50, P99)", want: nil},
		{name: "hex", text: "color #E6E6E6 (0xE6)", want: nil},
		{name: "unrelated word", text: "an S3 bucket and an L2 cache", want: nil},
		{name: "case name only at the start", text: "x T1 renew", isString: true, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range textCitations("f", 1, tt.text, tt.isString) {
				got = append(got, c.id)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("textCitations(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

// TestRules_TestNameSegments checks that ids in test names are found, and
// only in test names.
func TestRules_TestNameSegments(t *testing.T) {
	src := []byte(`package x

func TestChannel_C1_C4_C6_OverElector(t *testing.T) {}
func BenchmarkRedis_E8_Stop(b *testing.B) {}
func helper_E7_notATest() {}
func TestLatency_P99_Budget(t *testing.T) {}
`)
	cs, err := goCitations("x_test.go", src)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.String())
	}
	want := []string{"x_test.go:3: C1", "x_test.go:3: C4", "x_test.go:3: C6", "x_test.go:4: E8"}
	if !slices.Equal(got, want) {
		t.Errorf("goCitations = %v, want %v", got, want)
	}
}
