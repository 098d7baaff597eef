package locking

import (
	"context"
	"time"

	"github.com/hostloom/hostloom/core/jobrecord"
)

// Features are a lock's optional capabilities as values (X3), found once
// when the lock is built: a field is nil (false for Durable) exactly when
// the lock lacks the capability. A consumer reads them once, keeps the
// values it needs and never calls a method that answers ErrNotSupported:
// an elector without Events polls, one without Participants does not
// deregister, a scheduler without Jobs keeps no job records, the CLI
// without Resign says so.
//
// The values work on consumer keys (namespaced by the lock), like the
// lock's own methods. For a *DistributedLock they are the lock itself,
// seen through the capability's interface; its methods of a capability
// its provider lacks still answer ErrNotSupported, for code written
// against its method set.
type Features struct {
	// Events delivers a key's releases, acquisitions and resign requests
	// (L7, P2, O1).
	Events Subscriber
	// Resign asks a key's holder to step down (O1). It is set only with
	// Events: a holder that cannot subscribe never hears the request.
	// On a *DistributedLock it also implements
	// RequestHandOver(ctx, key, owner, target) (H4).
	Resign ResignRequester
	// Participants lists and deregisters a key's participants (P1).
	Participants ParticipantRegistry
	// Probe tells whether one owner is a participant of a key, from the
	// nearest copy of the backend's data (H4). It is set only with
	// Participants.
	Probe ParticipantProbe
	// Holders reports who holds a key (L7).
	Holders HolderLookup
	// Inspect reports a key's holder, fence and participants in one step,
	// and lists the keys of the lock's namespace (O1).
	Inspect KeyInspector
	// Jobs keeps the scheduler's job records (S9–S11).
	Jobs jobrecord.Jobs
	// Durable: the backend keeps its leases across a restart of its
	// server, so a leader need not be given the first chance to verify its
	// lease after one (Q1).
	Durable bool
}

// KeyInspector is the inspection capability on consumer keys (O1), as
// *DistributedLock implements it over a provider's Inspector.
type KeyInspector interface {
	// Inspect reports key's holder, last fence and participants in one
	// step.
	Inspect(ctx context.Context, key string) (KeyState, error)
	// Keys lists the keys of the lock's namespace that the backend stores
	// anything for, filtered by match (path.Match syntax; "" for all).
	Keys(ctx context.Context, match string) ([]string, error)
}

// Capabilities summarises f as booleans, for display and for tests.
// Inspect is set when the lock can look holders up or inspect keys.
func (f Features) Capabilities() Capabilities {
	return Capabilities{
		Events:       f.Events != nil,
		Participants: f.Participants != nil,
		Inspect:      f.Holders != nil || f.Inspect != nil,
		Resign:       f.Resign != nil,
		JobSlots:     f.Jobs != nil,
		Durable:      f.Durable,
	}
}

// FeaturesOf returns lock's optional capabilities as values. Consumers
// call it once, when they are built.
//
// A lock that reports its own (a *DistributedLock, or a wrapper with a
// Features() Features method) is believed about which capabilities it
// has. The values are lock's own methods wherever lock implements the
// capability's interface, so a wrapper that embeds a *DistributedLock and
// overrides Subscribe (to count, to filter, to inject faults) is called
// through its override; the reported value is used only where lock's
// method set lacks the interface. Any other lock has the capabilities its
// method set implements.
func FeaturesOf(lock Lock) Features {
	var own Features
	own.Events, _ = lock.(Subscriber)
	own.Resign, _ = lock.(ResignRequester)
	own.Participants, _ = lock.(ParticipantRegistry)
	own.Probe, _ = lock.(ParticipantProbe)
	own.Holders, _ = lock.(HolderLookup)
	own.Inspect, _ = lock.(KeyInspector)
	own.Jobs, _ = lock.(jobrecord.Jobs)
	if d, ok := lock.(Durable); ok {
		own.Durable = d.Durable()
	}
	r, reports := lock.(interface{ Features() Features })
	if !reports {
		if own.Events == nil {
			own.Resign = nil
		}
		if own.Participants == nil {
			own.Probe = nil
		}
		return own
	}
	has := r.Features()
	return Features{
		Events:       pick(has.Events, own.Events),
		Resign:       pick(has.Resign, own.Resign),
		Participants: pick(has.Participants, own.Participants),
		Probe:        pick(has.Probe, own.Probe),
		Holders:      pick(has.Holders, own.Holders),
		Inspect:      pick(has.Inspect, own.Inspect),
		Jobs:         pick(has.Jobs, own.Jobs),
		Durable:      has.Durable,
	}
}

// pick is nil when reported is, else own when the lock implements the
// capability itself, else reported.
func pick[T comparable](reported, own T) T {
	var zero T
	if reported == zero || own == zero {
		return reported
	}
	return own
}

// Features returns the capabilities New found in the lock's provider
// (X3). A disabled lock has none.
func (l *DistributedLock) Features() Features { return l.feat }

// Terms are what a lease says about itself, read in one call.
type Terms struct {
	// Granted is the duration asked of the backend by the latest
	// successful acquisition or extension, after the MaxLease cap; 0 when
	// the lease does not say.
	Granted time.Duration
	// Fence is the lease's fencing token (G1); 0 when it carries none.
	Fence uint64
	// Preempted: the latest successful extension found a higher-priority
	// participant registered for at least a lease (B2).
	Preempted bool
	// Participants is how many participants the latest extension counted,
	// the holder included; 0 when unknown (O6).
	Participants int
}

// TermsReporter is implemented by leases that report their Terms in one
// call: the leases of *DistributedLock, and wrappers of them.
type TermsReporter interface {
	Terms() Terms
}

// TermsOf returns l's terms: from Terms when l reports them (one type
// assertion, the leases of *DistributedLock), else from the optional
// lease interfaces it implements (GrantedLease, Fenced, Preemptible,
// ParticipantCounted).
func TermsOf(l Lease) Terms {
	if r, ok := l.(TermsReporter); ok {
		return r.Terms()
	}
	var t Terms
	if g, ok := l.(GrantedLease); ok {
		t.Granted = g.Granted()
	}
	if f, ok := l.(Fenced); ok {
		t.Fence = f.Fence()
	}
	if p, ok := l.(Preemptible); ok {
		t.Preempted = p.Preempted()
	}
	if c, ok := l.(ParticipantCounted); ok {
		t.Participants = c.LiveParticipants()
	}
	return t
}

// Terms implements TermsReporter.
func (s *lease) Terms() Terms {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Terms{Granted: s.granted, Preempted: s.preempted, Participants: s.live}
}

// Terms implements TermsReporter, with the fence.
func (s *fencedLease) Terms() Terms {
	t := s.lease.Terms()
	t.Fence = s.fence
	return t
}

// Terms implements TermsReporter.
func (p *placeholder) Terms() Terms { return Terms{Granted: p.granted} }
