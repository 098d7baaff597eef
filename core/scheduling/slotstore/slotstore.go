package slotstore

import "github.com/hostloom/hostloom/core/jobrecord"

// The names below are those of package jobrecord, which holds the job
// records, their rules and the store interfaces since the records are
// decided in one place (V1); they stay here so code written against
// slotstore keeps compiling.

// JobHistoryLen is how many run records a job store keeps per job (S11).
// It is jobrecord.JobHistoryLen, under its earlier name.
const JobHistoryLen = jobrecord.JobHistoryLen

// MaxJobAttempts bounds SlotClaim.Attempt (S9).
// It is jobrecord.MaxJobAttempts, under its earlier name.
const MaxJobAttempts = jobrecord.MaxJobAttempts

// ClaimStatus is what a SlotClaim achieved.
// It is jobrecord.ClaimStatus, under its earlier name.
type ClaimStatus = jobrecord.ClaimStatus

// Claim statuses; see jobrecord.
const (
	ClaimGranted     = jobrecord.ClaimGranted
	ClaimStarted     = jobrecord.ClaimStarted
	ClaimPaused      = jobrecord.ClaimPaused
	ClaimRecoverable = jobrecord.ClaimRecoverable
	ClaimWait        = jobrecord.ClaimWait
	ClaimRefused     = jobrecord.ClaimRefused
)

// SlotClaim asks a job store to record that a run of a slot starts.
// It is jobrecord.SlotClaim, under its earlier name.
type SlotClaim = jobrecord.SlotClaim

// SlotClaimResult is the outcome of a ClaimSlot.
// It is jobrecord.SlotClaimResult, under its earlier name.
type SlotClaimResult = jobrecord.SlotClaimResult

// SlotCompletion reports the end of a run granted by ClaimSlot.
// It is jobrecord.SlotCompletion, under its earlier name.
type SlotCompletion = jobrecord.SlotCompletion

// JobStatus is a job's stored state.
// It is jobrecord.JobStatus, under its earlier name.
type JobStatus = jobrecord.JobStatus

// State is the small state API the scheduler uses for its slots (L8).
// It is jobrecord.State, under its earlier name.
type State = jobrecord.State

// Jobs is the job slots capability (S9–S11).
// It is jobrecord.Jobs, under its earlier name.
type Jobs = jobrecord.Jobs
