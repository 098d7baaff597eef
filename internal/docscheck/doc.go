// Package docscheck holds tests that keep the repository's documentation
// honest. It has no API; its tests run with the rest of `go test ./...`.
//
// # Rule ids
//
// Comments, godoc, test names and Markdown cite rule ids such as E6 or K5
// (see docs/rules.md). The rule-id test fails when a cited id has no entry
// in docs/rules.md, and when a doc.go that cites ids does not point its
// reader to docs/rules.md. An id counts as cited where it is plainly used as
// one: an underscore-separated part of a test, benchmark, fuzz or example
// name (TestElector_E6_RenewRetryKeepsTerm); in a comment, string or
// Markdown text, an id in parentheses ("(E6)", "(K5, T2)"), followed by a
// colon, comma or closing parenthesis ("E9: never leads"), joined to
// another id ("T1 and T3", "S1–S6", a range that stands for every id in
// it), after the word "rule" or "rules", or opening a string literal (a
// table test's case name, "T1 renew over half"). Percentiles such as P50
// and P99 are never rule ids.
//
// # Go snippets in the docs
//
// The snippet test extracts every ```go block of README.md and docs/*.md
// and compiles them all with one `go build`, inside this module (in a
// temporary directory next to the test, so no network is needed). A block
// must be a complete file that starts with a package clause (comments may
// come first): copy it into a file and it builds. A block that is a
// fragment on purpose — a few lines that only make sense in a context the
// text describes — is marked with the info string `go fragment`:
//
//	```go fragment
//	elector.Resign(ctx)
//	```
//
// Keep fragments rare: readers copy snippets, and a fragment is not
// checked. Compiler errors name the Markdown file and line.
//
// Rule ids (E6, K5, …) are explained in docs/rules.md.
package docscheck
