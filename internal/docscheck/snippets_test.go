package docscheck

import (
	"bufio"
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// snippet is one ```go block of a Markdown file.
type snippet struct {
	file     string // slash-separated, relative to the repository root
	line     int    // line of the block's first code line
	code     string
	fragment bool // marked ```go fragment: not compiled
}

// goBlocks returns the ```go blocks of a Markdown file.
func goBlocks(rel string, src []byte) ([]snippet, error) {
	var out []snippet
	var cur *snippet
	var code strings.Builder
	fence := ""
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if fence == "" {
			if !strings.HasPrefix(trimmed, "```") && !strings.HasPrefix(trimmed, "~~~") {
				continue
			}
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, trimmed[:1]))]
			info := strings.Fields(trimmed[len(fence):])
			if len(info) > 0 && info[0] == "go" {
				cur = &snippet{file: rel, line: n + 1, fragment: len(info) > 1 && info[1] == "fragment"}
				code.Reset()
			}
			continue
		}
		// A closing fence is a run of the same character, at least as long.
		if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
			if cur != nil {
				cur.code = code.String()
				out = append(out, *cur)
				cur = nil
			}
			fence = ""
			continue
		}
		if cur != nil {
			code.WriteString(line)
			code.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if fence != "" {
		return out, fmt.Errorf("%s: a code block is not closed", rel)
	}
	return out, nil
}

// docFiles returns README.md and docs/*.md, relative to root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		files = append(files, "docs/"+filepath.Base(d))
	}
	return files
}

// TestDocs_GoSnippetsCompile compiles every ```go block of README.md and
// docs/*.md with one go build inside this module. A block must be a
// complete file; ```go fragment marks the rare block that is not.
func TestDocs_GoSnippetsCompile(t *testing.T) {
	root := repoRoot(t)
	var snippets []snippet
	fragments := 0
	for _, rel := range docFiles(t, root) {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := goBlocks(rel, src)
		if err != nil {
			t.Error(err)
		}
		for _, b := range blocks {
			if b.fragment {
				fragments++
				continue
			}
			if _, err := parser.ParseFile(token.NewFileSet(), "", b.code, parser.PackageClauseOnly); err != nil {
				t.Errorf("%s:%d: this Go block is not a complete file (it must start with a package clause so readers can copy it as is): %v; complete it, or mark it ```go fragment if it must stay a fragment", b.file, b.line, err)
				continue
			}
			snippets = append(snippets, b)
		}
	}
	t.Logf("%d Go snippets to compile, %d marked as fragments", len(snippets), fragments)
	if len(snippets) == 0 {
		return
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to compile the snippets: %v", err)
	}
	// A directory under this package, inside the module, so the snippets
	// build against this checkout with the module's go.sum and no network.
	// The leading underscore keeps ./... from seeing it.
	tmp, err := os.MkdirTemp(".", "_snippets")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	args := []string{"build"}
	for i, s := range snippets {
		dir := filepath.Join(tmp, fmt.Sprintf("s%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// The line directive makes compiler errors name the Markdown file
		// and line.
		src := fmt.Sprintf("//line %s:%d\n%s", filepath.Join(root, filepath.FromSlash(s.file)), s.line, s.code)
		if err := os.WriteFile(filepath.Join(dir, "snippet.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "./"+filepath.ToSlash(dir))
	}
	cmd := exec.Command(goCmd, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.ReplaceAll(string(out), root+string(filepath.Separator), "")
		t.Errorf("Go snippets in the docs do not compile (%v):\n%s", err, msg)
	}
}

// TestDocs_GoBlocks checks the block extraction: fences, info strings and
// the first code line's number.
func TestDocs_GoBlocks(t *testing.T) {
	md := "# T\n\n```go\npackage main\n```\n\n```sh\ngo run .\n```\n\n```go fragment\nx := 1\n```\n\n````go\n```\n````\n"
	got, err := goBlocks("a.md", []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	want := []snippet{
		{file: "a.md", line: 4, code: "package main\n"},
		{file: "a.md", line: 12, code: "x := 1\n", fragment: true},
		{file: "a.md", line: 16, code: "```\n"},
	}
	if len(got) != len(want) {
		t.Fatalf("goBlocks = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := goBlocks("b.md", []byte("```go\npackage main\n")); err == nil {
		t.Error("an unclosed block: no error")
	}
}
