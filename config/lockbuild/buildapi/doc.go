// Package buildapi holds Provided, what a backend's Build returns, and
// the types and helpers of an Opener's Open (OpenOptions, Opened, Target,
// Notes, UnreachableError, Bound, Unreachable), apart from lockbuild, so that lockbuild can link the library module's own
// backend (backends/redis/redislockbuild) by default without an import
// cycle. Use them through lockbuild, whose names are aliases of these; a
// backend outside this module needs nothing from this package.
//
// Rule ids are explained in docs/rules.md.
package buildapi
