package lockingtest_test

import (
	"fmt"

	"github.com/hostloom/hostloom/core/locking/lockingtest"
)

// The checks a backend must pass, cited by DESIGN.md rule. A backend's test
// runs them all with lockingtest.Run.
func ExampleChecks() {
	for _, name := range lockingtest.Checks() {
		fmt.Println(name)
	}
	// Output:
	// L3_Exclusivity
	// L3_ConcurrentTryAcquireOneWinner
	// L3_HeldErrorRemaining
	// L3_ExpiryFreesKey
	// L3_StaleTokenExtendAndReleaseRefused
	// L3_ExtendAfterExpiryRefused
	// L3_ReleaseTwiceRefused
	// L3_CancelledContextLeavesNoLease
	// L2_OddKeysStoredVerbatim
	// L1_InvalidKeysRefused
	// L1_KeyAtMaxKeyLengthAccepted
	// L5_LeaseCappedAtMaxLease
	// L5_ZeroOrNegativeLeaseRefused
	// L4_DisabledWritesNothing
	// L7_NotificationOnRelease
	// L7_HolderLookup
	// L8_AdvanceMonotonic
	// L6_AcquireWaitsAndWakesOnRelease
	// L6_AcquireCancelledLeavesHolder
	// L6_HeldExtendsAndStopsAtMaxHold
	// G1_FencesStrictlyIncreaseAcrossHolders
	// P2_RefusalNamesHolder
	// P2_EventsAcquiredReleasedResign
	// P1_ParticipantsRegisteredAndExpire
	// H2_ReleaseWithdrawsTheOwner
	// H2_ALateRenewalRegistersNobody
	// B1_HandoverHoldsTheKeyForItsSuccessor
	// O1_InspectAndKeys
	// L9_CapabilitiesReported
	// L9_ElectorTakeoverAfterStop
	// L9_ElectorStopAndRunReturnNil
	// L9_ElectorResignOrNotSupported
	// L9_ElectorStopDuringOutage
}

// The job store steps a lock with job slots must pass, in order on one
// key. A backend's test runs them with lockingtest.RunJobStore.
func ExampleJobStoreChecks() {
	for _, name := range lockingtest.JobStoreChecks() {
		fmt.Println(name)
	}
	// Output:
	// S9_FirstClaimGrantedOnce
	// S9_RecoveryWaitsForTheHold
	// S9_RecoveryAfterTheRunReturned
	// S10_PauseRecordsTheSlotAsPassed
	// S9_AttemptsBounded
	// S11_HistoryKeepsTheNewest
}
