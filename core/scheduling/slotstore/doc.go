// Package slotstore defines what the scheduler (package core/scheduling)
// stores about its jobs and the interfaces a store implements: State, the
// monotonic slot value (L8), and Jobs, the job records behind recovery,
// pause and history (S9–S11). It imports nothing but the standard library,
// so lock providers (memlock, redislock, a backend of your own) implement
// it without depending on the scheduler or its cron parser.
//
// Rule ids (L8, S9–S11) are explained in docs/rules.md.
package slotstore
