package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/kit/participants"
)

// Participants (P1) are records P+"p/"+K+"\x00"+owner whose value is
// "<since in µs since the epoch>|<priority>", attached to the provider's
// session lease for their TTL (rounded up to whole seconds): one lease per
// provider and TTL, granted with the first registration and refreshed by
// the requests that register (at most every sessionRefresh), so a
// registration costs a write once and a keep-alive after that. A
// registration lives while its provider keeps making requests for that
// TTL, and at most a session TTL after the provider's last refresh.

// sessionRefresh is how often, at most, a session is refreshed by the
// requests that register with it.
const sessionRefresh = 500 * time.Millisecond

// session is a lease participants of one TTL are attached to.
type session struct {
	id         clientv3.LeaseID
	ttl        time.Duration
	refreshed  time.Time
	refreshing bool
	regs       map[string]regEntry // by key + "\x00" + owner
}

// regEntry is one registration as written.
type regEntry struct {
	since    time.Time
	priority int
}

// registration is what one request does to register its owner: put (nil
// when the owner is registered already) and refresh.
type registration struct {
	p    *Provider
	secs int64
	id   clientv3.LeaseID
	rk   string
	put  *clientv3.Op
}

func (p *Provider) participantPrefix(key string) string {
	return p.o.Prefix + "p/" + key + "\x00"
}

func (p *Provider) participantsOp(key string) clientv3.Op {
	return clientv3.OpGet(p.participantPrefix(key), clientv3.WithPrefix())
}

// registration prepares the registration of owner for key: the session
// of ttl's seconds (granted when there is none or it may have run out) and
// the record's put when it is not written yet or its priority changed. A
// zero ttl registers nothing.
func (p *Provider) registration(ctx context.Context, key, owner string, ttl time.Duration, priority int) (registration, error) {
	if ttl <= 0 {
		return registration{}, nil
	}
	secs := seconds(ttl)
	p.mu.Lock()
	s := p.sessions[secs]
	if s != nil && time.Since(s.refreshed) >= s.ttl-spareMargin {
		delete(p.sessions, secs) // may have run out: its records with it
		s = nil
	}
	p.mu.Unlock()
	if s == nil {
		l, err := p.grant(ctx, secs)
		if err != nil {
			return registration{}, err
		}
		p.mu.Lock()
		if cur := p.sessions[secs]; cur != nil {
			s = cur // granted concurrently: use that one, give this back
			go p.revoke(l.id)
		} else {
			s = &session{id: l.id, ttl: l.ttl, refreshed: l.refreshed, regs: make(map[string]regEntry)}
			p.sessions[secs] = s
		}
		p.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rk := key + "\x00" + owner
	reg := registration{p: p, secs: secs, id: s.id, rk: rk}
	e, ok := s.regs[rk]
	if !ok || e.priority != priority {
		if !ok {
			e.since = time.Now()
		}
		e.priority = priority
		s.regs[rk] = e
		op := clientv3.OpPut(p.participantPrefix(key)+owner,
			strconv.FormatInt(e.since.UnixMicro(), 10)+"|"+strconv.Itoa(priority), clientv3.WithLease(s.id))
		reg.put = &op
	}
	return reg, nil
}

// refresh sends the session a keep-alive in the background when it was
// not refreshed within sessionRefresh.
func (r registration) refresh(ctx context.Context) {
	if r.p == nil {
		return
	}
	p := r.p
	p.mu.Lock()
	s := p.sessions[r.secs]
	if s == nil || s.id != r.id || s.refreshing || time.Since(s.refreshed) < sessionRefresh {
		p.mu.Unlock()
		return
	}
	s.refreshing = true
	p.mu.Unlock()
	started := p.w.goUnlessClosed(func() {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		sent := time.Now()
		_, err := keepAliveOnce(kctx, p, s.id)
		p.mu.Lock()
		defer p.mu.Unlock()
		s.refreshing = false
		switch {
		case err == nil:
			s.refreshed = sent
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			if p.sessions[r.secs] == s {
				delete(p.sessions, r.secs)
			}
		}
	})
	if !started { // closed: Close revokes the session
		p.mu.Lock()
		s.refreshing = false
		p.mu.Unlock()
	}
}

// registrationFailed forgets a registration whose put may not have been
// written, so the next request writes it again.
func (p *Provider) registrationFailed(r registration) {
	if r.put == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.sessions[r.secs]; s != nil && s.id == r.id {
		delete(s.regs, r.rk)
	}
}

// dropSession forgets the session id of secs seconds (it ran out).
func (p *Provider) dropSession(secs int64, id clientv3.LeaseID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.sessions[secs]; s != nil && s.id == id {
		delete(p.sessions, secs)
	}
}

// decodeParticipant parses a participant record of key.
func (p *Provider) decodeParticipant(key string, kv *mvccpb.KeyValue) (locking.Participant, error) {
	owner, ok := strings.CutPrefix(string(kv.Key), p.participantPrefix(key))
	sinceS, prioS, ok2 := strings.Cut(string(kv.Value), "|")
	since, err1 := strconv.ParseInt(sinceS, 10, 64)
	prio, err2 := strconv.Atoi(prioS)
	if !ok || !ok2 || err1 != nil || err2 != nil {
		return locking.Participant{}, fmt.Errorf("%w: participant %q of %q: %q", locking.ErrBadRecord, owner, key, kv.Value)
	}
	return locking.Participant{Owner: owner, Since: time.UnixMicro(since), Priority: prio}, nil
}

// decoded yields the participants of kvs that decode (see
// decodeParticipants for the ones that do not).
func (p *Provider) decoded(key string, kvs []*mvccpb.KeyValue) iter.Seq[locking.Participant] {
	return func(yield func(locking.Participant) bool) {
		for _, kv := range kvs {
			if pt, err := p.decodeParticipant(key, kv); err == nil && !yield(pt) {
				return
			}
		}
	}
}

// decodeParticipants parses the records of key, skipping those that do not
// parse (reported together, matching locking.ErrBadRecord).
func (p *Provider) decodeParticipants(key string, kvs []*mvccpb.KeyValue) ([]locking.Participant, error) {
	var ps []locking.Participant
	var errs []error
	for _, kv := range kvs {
		pt, err := p.decodeParticipant(key, kv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ps = append(ps, pt)
	}
	return ps, errors.Join(errs...)
}

// Participants implements locking.ParticipantRegistry: key's live
// participants, in one range read.
func (p *Provider) Participants(ctx context.Context, key string) ([]locking.Participant, error) {
	if err := checkKey("participants", key); err != nil {
		return nil, err
	}
	resp, err := p.cli.Do(leaderOnly(ctx), p.participantsOp(key))
	if err != nil {
		return nil, opError("participants", key, ctx, err)
	}
	return p.decodeParticipants(key, resp.Get().Kvs)
}

// IsParticipant implements locking.ParticipantProbe: whether owner's
// participant record of key exists. When this provider holds key and its
// latest read of the participants (the acquisition's, or an extension's,
// at most a lease old) shows owner, that read answers, without a request:
// the holder is the one that hands the key over, and its release binds the
// handover to the record that read found, so a participant that left
// since gets a plain release. Otherwise it is read from the state of the
// member the client asks (a serializable read: no round to the raft
// leader), which may lag the cluster's latest writes by its apply delay. A
// member that lost its leader refuses, as for every other call.
func (p *Provider) IsParticipant(ctx context.Context, key, owner string) (bool, error) {
	if err := checkKey("participant", key); err != nil {
		return false, err
	}
	if p.heldShows(key, owner) {
		return true, nil
	}
	resp, err := p.cli.Get(leaderOnly(ctx), p.participantPrefix(key)+owner, clientv3.WithSerializable(), clientv3.WithCountOnly())
	if err != nil {
		return false, opError("participant", key, ctx, err)
	}
	return resp.Count > 0, nil
}

// heldShows reports whether this provider holds key and its latest read
// of key's participants, younger than the lease, shows owner's record.
func (p *Provider) heldShows(key, owner string) bool {
	pk := p.participantPrefix(key) + owner
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.held {
		if h.key != key || h.parts.at.IsZero() || time.Since(h.parts.at) >= h.ttl {
			continue
		}
		for _, kv := range h.parts.kvs {
			if string(kv.Key) == pk {
				return true
			}
		}
	}
	return false
}

// WithdrawsOnRelease implements locking.ReleaseWithdrawer: Release
// honours ReleaseRequest.Withdraw.
func (*Provider) WithdrawsOnRelease() bool { return true }

// ReservesOnRelease implements locking.ReleaseReserver. A release naming
// a successor whose participant record exists hands the key over (see
// handoff.go): it is the successor's from then on, refused to everyone
// else until the successor takes it or the lease runs out, which is at
// least ReleaseRequest.Hold for an elector (its lease is longer than its
// RetryInterval).
func (*Provider) ReservesOnRelease() bool { return true }

// forgetRegistration drops owner's registration for key from the
// sessions that keep it. p.mu must be held.
func (p *Provider) forgetRegistration(key, owner string) {
	for _, s := range p.sessions {
		delete(s.regs, key+"\x00"+owner)
	}
}

// Deregister implements locking.ParticipantRegistry with one delete.
func (p *Provider) Deregister(ctx context.Context, key, owner string) error {
	if err := checkKey("deregister", key); err != nil {
		return err
	}
	p.mu.Lock()
	p.forgetRegistration(key, owner)
	p.mu.Unlock()
	ctx = leaderOnly(ctx)
	if _, err := noLeaderRetry(ctx, p, func() (*clientv3.DeleteResponse, error) {
		return p.cli.Delete(ctx, p.participantPrefix(key)+owner)
	}); err != nil {
		return opError("deregister", key, ctx, err)
	}
	return nil
}

// yield decides, for an acquisition with r.Yield, whether a free key must
// wait for a live participant of a higher priority (B2): wait reports the
// refusal res. The wait counts from when this provider first found the
// key free while such a participant was live.
//
// One read, served by the member the client asks from its own state (a
// serializable read: no round to the raft leader, which a linearizable
// read costs as much as a write on a cluster). The answer only steers
// who tries first: the acquisition's transaction still decides whether
// the key is free, so a copy a few milliseconds behind the latest writes
// can at worst make a caller wait for a participant that just left, or
// try while a higher priority registered in the last milliseconds, as a
// registration a moment after the read would.
func (p *Provider) yield(ctx context.Context, r locking.AcquireRequest) (res locking.AcquireResult, wait bool, err error) {
	resp, err := p.cli.Txn(ctx).Then(
		clientv3.OpGet(p.recKey(r.Key, recLease), clientv3.WithCountOnly(), clientv3.WithSerializable()),
		clientv3.OpGet(p.participantPrefix(r.Key), clientv3.WithPrefix(), clientv3.WithSerializable()),
	).Commit()
	if err != nil {
		return res, false, opError("acquire", r.Key, ctx, err)
	}
	if resp.Responses[0].GetResponseRange().GetCount() > 0 {
		return res, false, nil // held: the acquisition reports the holder
	}
	top, higher := participants.Higher(p.decoded(r.Key, resp.Responses[1].GetResponseRange().GetKvs()), r.Owner, r.Priority)
	if !higher {
		return res, false, nil
	}
	if wait := p.yields.Wait(r.Key, r.Yield, time.Now()); wait > 0 {
		return locking.AcquireResult{Remaining: wait, TopPriority: top}, true, nil
	}
	return res, false, nil
}
