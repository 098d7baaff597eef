// Package slotstore names what the scheduler (package core/scheduling)
// stores about its jobs: State, the monotonic slot value (L8), and Jobs,
// the job records behind recovery, pause and history (S9–S11). Every name
// here is an alias of the same name in package core/jobrecord, which holds
// the records, the rules that decide them (V1) and the RecordStore a
// provider implements; code written against slotstore keeps compiling.
//
// Rule ids (L8, S9–S11, V1) are explained in docs/rules.md.
package slotstore
