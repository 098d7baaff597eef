// Package jobrecord holds the scheduler's job records and the rules that
// decide them, once, in Go (V1): what a claim of a slot achieves (S9,
// S10), what a run's completion changes, pausing and resuming, and which
// run records the history returns (S11).
//
// # Records and rules
//
// A Record is one job's slot state. Claim, Complete and Pause are pure
// functions from a record (and, for a claim, the store's clock) to a
// result and a Change; Status and History read a record. They are tested
// once, from tables.
//
// # Stores
//
// A provider keeps the records through RecordStore (also named
// locking.RecordStore): one record per key as named fields, read with a
// version and written back only if unchanged, with a time to live, and a
// ring of JobHistoryLen history entries that expires with it. It decides
// nothing. Store implements Jobs over a RecordStore: it reads, decides and
// swaps, and reads again when another writer came first. The field names
// are those the Redis provider has always stored in a job's hash, so the
// records written before this package existed read unchanged (V2).
//
// The package imports only the standard library, so lock providers and
// the scheduler share it without the lock layer depending on the
// scheduler. Package core/scheduling/slotstore keeps the earlier names
// of its types as aliases.
//
// Rule ids (S9–S11, V1, V2) are explained in docs/rules.md.
package jobrecord
