// Package policy holds the scheduler's policy types, OverlapPolicy and
// CatchUpPolicy, with their text forms, in a package of their own so that
// package config can decode them without linking the scheduler and its
// cron parser. Package scheduling re-exports every name (type aliases and
// constants): use them from there. Errors keep the "scheduling:" prefix
// of the package users see.
//
// Rule ids (S2, S7, S8, …) are explained in docs/rules.md.
package policy
