package locking

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

var _ Fenced = (*Held)(nil)

// KeyState describes one key for operators (O1): who holds it, the last
// fence issued for it and its participants, as read in one step.
type KeyState struct {
	// Key is the consumer key.
	Key string
	// Held reports whether a lease is stored; Holder is valid only then.
	Held   bool
	Holder Holder
	// Fence is the last fence issued for the key: the current holder's
	// when Held (a holder's fence never changes while it extends), 0 when
	// the provider stores none.
	Fence uint64
	// Participants are the key's live participants, oldest first.
	Participants []Participant
}

// RequestResign implements ResignRequester: it asks owner, or whoever
// holds key when owner is "", to step down (O1) by publishing an
// EventResign to key's subscribers. Stepping down is up to the holder (the
// elector releases at its next step); nothing is deleted. It returns an
// error matching ErrNotSupported when the provider cannot publish resign
// requests or publishes no events, or the lock is disabled.
func (l *DistributedLock) RequestResign(ctx context.Context, key, owner string) error {
	pkey, err := l.ProviderKey(key)
	if err != nil {
		return err
	}
	if l.resign == nil {
		return fmt.Errorf("locking: resign %q: %w", key, ErrNotSupported)
	}
	if err := l.resign.RequestResign(ctx, pkey, owner); err != nil {
		return fmt.Errorf("locking: resign %q: %w", key, err)
	}
	return nil
}

// handOverSep separates the holder from the successor in a hand-over
// request's owner field: identities hold no control character, so the
// two parts are told apart whatever the provider's transport, and a
// holder that does not know hand-overs sees an owner that is not its own
// and ignores the request.
const handOverSep = "\x1f"

// RequestHandOver asks owner, key's holder, to step down and hand key to
// target, a participant (H4): it publishes an EventResign whose Target is
// target to key's subscribers, through the provider's resign requests.
// Stepping down is up to the holder; nothing is deleted. It fails as
// RequestResign does (ErrNotSupported without resign requests), and for
// an empty owner or target.
func (l *DistributedLock) RequestHandOver(ctx context.Context, key, owner, target string) error {
	if owner == "" || target == "" || strings.Contains(owner, handOverSep) || strings.Contains(target, handOverSep) {
		return fmt.Errorf("locking: hand over %q from %q to %q: owner and target must be nonempty identities", key, owner, target)
	}
	return l.RequestResign(ctx, key, owner+handOverSep+target)
}

// decodeHandOver returns fn receiving a hand-over request's holder in
// Owner and its successor in Target (see RequestHandOver).
func decodeHandOver(fn func(Event)) func(Event) {
	return func(ev Event) {
		if ev.Kind == EventResign {
			if owner, target, ok := strings.Cut(ev.Owner, handOverSep); ok {
				ev.Owner, ev.Target = owner, target
			}
		}
		fn(ev)
	}
}

// Participants implements ParticipantRegistry: the owners that acquired or
// extended key (TryAcquireAs, Extend) within two leases and did not
// deregister, oldest first, read in one round trip (with the leader marked
// when the provider is also an Inspector). When some stored records do not
// parse, the others are returned together with an error matching
// ErrBadRecord that names the key. A disabled lock has none; a provider
// without participants yields ErrNotSupported.
func (l *DistributedLock) Participants(ctx context.Context, key string) ([]Participant, error) {
	pkey, err := l.ProviderKey(key)
	if err != nil {
		return nil, err
	}
	if l.o.Disabled {
		return nil, nil
	}
	if l.participants == nil {
		return nil, fmt.Errorf("locking: participants %q: %w", key, ErrNotSupported)
	}
	var ps []Participant
	if in := l.inspector; in != nil {
		// The holder comes in the same step: mark the leader.
		var st ProviderKeyState
		st, err = in.Inspect(ctx, pkey)
		ps = st.Participants
		if st.Held {
			holder := ownerOf(st.Value)
			for i := range ps {
				ps[i].Leader = ps[i].Owner == holder
			}
		}
	} else {
		ps, err = l.participants.Participants(ctx, pkey)
	}
	if err != nil {
		err = fmt.Errorf("locking: participants %q: %w", key, err)
	}
	sortParticipants(ps)
	return ps, err
}

// Deregister implements ParticipantRegistry: owner stops being a
// participant of key at once (the elector's Stop). It does not touch a
// lease owner holds. A disabled lock does nothing; a provider without
// participants yields ErrNotSupported.
func (l *DistributedLock) Deregister(ctx context.Context, key, owner string) error {
	pkey, err := l.ProviderKey(key)
	if err != nil {
		return err
	}
	if l.o.Disabled {
		return nil
	}
	if l.participants == nil {
		return fmt.Errorf("locking: deregister %q: %w", key, ErrNotSupported)
	}
	if err := l.participants.Deregister(ctx, pkey, owner); err != nil {
		return fmt.Errorf("locking: deregister %q: %w", key, err)
	}
	return nil
}

// Inspect reports key's holder, last fence and participants in one round
// trip (for the hostloom CLI, O1). Unparsable participant records are
// skipped as in Participants: the state is returned with an error matching
// ErrBadRecord. A disabled lock reports an empty state; a provider that
// cannot inspect yields ErrNotSupported.
func (l *DistributedLock) Inspect(ctx context.Context, key string) (KeyState, error) {
	pkey, err := l.ProviderKey(key)
	if err != nil {
		return KeyState{}, err
	}
	if l.o.Disabled {
		return KeyState{Key: key}, nil
	}
	if l.inspector == nil {
		return KeyState{}, fmt.Errorf("locking: inspect %q: %w", key, ErrNotSupported)
	}
	ps, err := l.inspector.Inspect(ctx, pkey)
	if err != nil && !errors.Is(err, ErrBadRecord) {
		return KeyState{}, fmt.Errorf("locking: inspect %q: %w", key, err)
	}
	if err != nil {
		err = fmt.Errorf("locking: inspect %q: %w", key, err)
	}
	st := KeyState{Key: key, Held: ps.Held, Fence: ps.Fence, Participants: ps.Participants}
	if ps.Held {
		st.Holder = Holder{Owner: ownerOf(ps.Value), TTL: ps.TTL}
	}
	sortParticipants(st.Participants)
	return st, err
}

// Keys lists the consumer keys of this lock's namespace that the provider
// stores anything for (a lease, a fence or participants; fences outlive
// leases, see the provider's documentation), sorted. match, when not "",
// filters them with path.Match syntax (for example "leader:*"). It reads
// the whole keyspace (SCAN on Redis, every master on Cluster): for
// operators' tools, not for hot paths. Keys that are not valid consumer
// keys are left out.
func (l *DistributedLock) Keys(ctx context.Context, match string) ([]string, error) {
	if match != "" {
		if _, err := path.Match(match, ""); err != nil {
			return nil, fmt.Errorf("locking: keys: pattern %q: %w", match, err)
		}
	}
	if l.o.Disabled {
		return nil, nil
	}
	if l.inspector == nil {
		return nil, fmt.Errorf("locking: keys: %w", ErrNotSupported)
	}
	pkeys, err := l.inspector.Keys(ctx, l.prefix)
	if err != nil {
		return nil, fmt.Errorf("locking: keys: %w", err)
	}
	keys := make([]string, 0, len(pkeys))
	for _, pk := range pkeys {
		k, ok := strings.CutPrefix(pk, l.prefix)
		if !ok || CheckKey(k, l.o.MaxKeyLength) != nil {
			continue
		}
		if match != "" {
			if m, _ := path.Match(match, k); !m {
				continue
			}
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// sortParticipants orders participants oldest first, then by owner.
func sortParticipants(ps []Participant) {
	slices.SortFunc(ps, func(a, b Participant) int {
		if c := a.Since.Compare(b.Since); c != 0 {
			return c
		}
		return strings.Compare(a.Owner, b.Owner)
	})
}

// probe is a provider's ParticipantProbe on consumer keys: the value
// Features.Probe holds for a *DistributedLock whose provider has one.
type probe struct {
	l *DistributedLock
	p ParticipantProbe
}

// IsParticipant implements ParticipantProbe on the lock's namespaced key.
func (pr probe) IsParticipant(ctx context.Context, key, owner string) (bool, error) {
	pkey, err := pr.l.ProviderKey(key)
	if err != nil {
		return false, err
	}
	ok, err := pr.p.IsParticipant(ctx, pkey, owner)
	if err != nil {
		return false, fmt.Errorf("locking: participant %q of %q: %w", owner, key, err)
	}
	return ok, nil
}
