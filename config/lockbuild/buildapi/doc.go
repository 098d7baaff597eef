// Package buildapi holds Provided, what a backend's Build returns, apart
// from lockbuild, so that lockbuild can link the library module's own
// backend (backends/redis/redislockbuild) by default without an import
// cycle. Use it as lockbuild.Provided, an alias of this type; a backend
// outside this module needs nothing from this package.
//
// Rule ids are explained in docs/rules.md.
package buildapi
