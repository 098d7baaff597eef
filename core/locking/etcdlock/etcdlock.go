package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/jobrecord"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/kit/participants"
)

// ErrNilClient is returned by New for a nil client.
var ErrNilClient = errors.New("etcdlock: nil client")

// ErrClosed is returned by Subscribe after Close.
var ErrClosed = errors.New("etcdlock: provider closed")

// cleanupTimeout bounds the best-effort revocation of a lease whose
// acquisition's reply was lost (a cancelled context leaves no lease
// behind), and Close's revocations.
const cleanupTimeout = time.Second

// spareMargin is how much of a spare lease's time to live must be left,
// by the provider's clock since its last refresh, for an acquisition to
// use it: the refresh sent with the acquisition must reach the server
// before the lease runs out.
const spareMargin = time.Second

// Provider is a locking.Provider over etcd (see the package
// documentation). It is safe for concurrent use. Close ends its watches
// and revokes the leases it keeps in reserve; it does not close the
// client.
type Provider struct {
	cli *clientv3.Client
	o   Options

	mu       sync.Mutex
	held     map[string]heldLease   // by ownership value: the leases of this provider's acquisitions
	spares   map[int64][]spareLease // by granted TTL in seconds: granted leases bound to no key
	sessions map[int64]*session     // by TTL in seconds: participant registrations
	yields   participants.Yields    // by key: when this provider first found it free while yielding (B2)
	offers   offers                 // handovers seen on watches, until adopted (see handoff.go)
	adopted  map[string]int64       // by key: the revision of the handover this provider took last
	quar     quarantines            // by key: its records as last read, with Options.ExpiryQuarantine (see quarantine.go)
	swept    time.Time              // the latest sweep of held

	w  *watches  // the watches behind Subscribe, and background refreshes
	ka kaStreams // idle keep-alive streams (see keepalive.go)
}

// heldLease is the etcd lease of one acquisition.
type heldLease struct {
	key       string
	id        clientv3.LeaseID
	ttl       time.Duration // as granted by the server
	refreshed time.Time     // when the provider last sent the grant or a keep-alive
	parts     participantsRead

	owner      string // the acquisition's owner
	registered bool   // the acquisition registered its owner as a participant
	value      string // the value the key stores, when not the acquisition's own: a key handed over (see handoff.go)
}

// stored is the value the key stores for the acquisition of value v.
func (h heldLease) stored(v string) string {
	if h.value != "" {
		return h.value
	}
	return v
}

// participantsRead is the latest read of a held key's participants
// (records and when the read was sent), which extensions reuse for up to
// a lease (see Extend).
type participantsRead struct {
	kvs []*mvccpb.KeyValue
	at  time.Time
}

// spareLease is a granted lease bound to no key, and when the provider
// last sent it a refresh (or the grant).
type spareLease struct {
	id        clientv3.LeaseID
	ttl       time.Duration
	refreshed time.Time
}

var (
	_ locking.Provider            = (*Provider)(nil)
	_ locking.Subscriber          = (*Provider)(nil)
	_ locking.ResignRequester     = (*Provider)(nil)
	_ locking.ParticipantRegistry = (*Provider)(nil)
	_ locking.ReleaseWithdrawer   = (*Provider)(nil)
	_ locking.ReleaseReserver     = (*Provider)(nil)
	_ locking.Inspector           = (*Provider)(nil)
	_ locking.Durable             = (*Provider)(nil)
	_ locking.RecordStore         = (*Provider)(nil)
	_ jobrecord.State             = (*Provider)(nil)
	_ io.Closer                   = (*Provider)(nil)
)

// New returns a provider over client with options o. It does not talk to
// the server: an unreachable cluster makes operations fail (an outage to
// the elector), not New. It returns ErrNilClient for a nil client and an
// error matching ErrInvalidOptions, naming the field and the value, for
// invalid options. Call Close when done.
func New(client *clientv3.Client, o Options) (*Provider, error) {
	if client == nil {
		return nil, ErrNilClient
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	p := &Provider{
		cli:      client,
		o:        o,
		held:     make(map[string]heldLease),
		spares:   make(map[int64][]spareLease),
		sessions: make(map[int64]*session),
		adopted:  make(map[string]int64),
	}
	p.w = newWatches(p)
	return p, nil
}

// NewLock is a shorthand for locking.New(p, lo) with p = New(client, po):
// a lock that owns its provider, so closing the lock closes the provider
// (not the client). ProviderOf returns the provider, for Term.
func NewLock(client *clientv3.Client, po Options, lo locking.Options) (*locking.DistributedLock, error) {
	p, err := New(client, po)
	if err != nil {
		return nil, err
	}
	l, err := locking.New(p, lo)
	if err != nil {
		_ = p.Close()
		return nil, err
	}
	return l, nil
}

// ProviderOf returns the etcdlock provider a lock was built over; ok is
// false for a lock over another provider.
func ProviderOf(l *locking.DistributedLock) (p *Provider, ok bool) {
	if l == nil {
		return nil, false
	}
	p, ok = l.Provider().(*Provider)
	return p, ok && p != nil
}

// Prefix returns the key prefix as configured (Options.Prefix or
// DefaultPrefix).
func (p *Provider) Prefix() string { return p.o.Prefix }

// Client returns the client the provider was built over.
func (p *Provider) Client() *clientv3.Client { return p.cli }

// Durable implements locking.Durable: etcd commits every acquisition on a
// majority of its members before answering, so neither a restart of a
// member nor of the whole cluster loses a lease it granted.
func (p *Provider) Durable() bool { return true }

// Close ends the provider's watches (their subscribers receive
// EventUnsubscribed) and waits for them, then revokes, within a second,
// the leases it keeps in reserve and its participant registrations (the
// participants of a closed provider are gone at once). Leases of
// acquisitions not released stay until they run out. Close does not close
// the client. It is safe to call more than once and returns nil.
func (p *Provider) Close() error {
	if !p.w.close() {
		return nil
	}
	p.ka.close()
	p.mu.Lock()
	var ids []clientv3.LeaseID
	for _, set := range p.spares {
		for _, s := range set {
			ids = append(ids, s.id)
		}
	}
	for _, s := range p.sessions {
		ids = append(ids, s.id)
	}
	clear(p.spares)
	clear(p.sessions)
	p.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(leaderOnly(context.Background()), cleanupTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { _, _ = p.cli.Revoke(ctx, id) })
	}
	wg.Wait()
	return nil
}

// The keys of a provider key K under the prefix P. K never contains a NUL
// byte (locking.CheckKey refuses control characters, and the provider
// refuses a key with one), so P+"k/"+K+"\x00" starts exactly K's records.
const (
	recLease = 'l' // the lease: the holder's ownership value, attached to its etcd lease
	recFence = 'f' // the last acquisition: the owner; its ModRevision is the last fence
	recNote  = 'n' // notes to watchers: "r"+target (a release's successor), "s"+owner (resign)
)

func (p *Provider) recKey(key string, rec byte) string {
	return p.o.Prefix + "k/" + key + "\x00" + string(rec)
}

// recRange is the range of key's records: [start, end).
func (p *Provider) recRange(key string) (start, end string) {
	base := p.o.Prefix + "k/" + key
	return base + "\x00", base + "\x01"
}

// checkKey refuses a provider key the layout cannot hold.
func checkKey(op, key string) error {
	if key == "" || strings.IndexByte(key, 0) >= 0 {
		return fmt.Errorf("etcdlock: %s %q: %w: empty or with a NUL byte", op, key, locking.ErrInvalidKey)
	}
	return nil
}

// seconds is d in whole seconds, rounded up: an etcd lease is never
// shorter than its holder asked for.
func seconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return max(s, 1)
}

// checkTTL refuses a time to live below a millisecond, as the other
// providers do.
func checkTTL(op string, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("etcdlock: %s: ttl %v must be at least 1ms", op, ttl)
	}
	return nil
}

// classify wraps err with locking.ErrUnauthorized when the server refused
// the credentials or a permission: configuration errors, which callers
// tell from an outage (O4).
func classify(err error) error {
	for _, e := range []error{rpctypes.ErrAuthFailed, rpctypes.ErrPermissionDenied, rpctypes.ErrInvalidAuthToken,
		rpctypes.ErrUserEmpty, rpctypes.ErrUserNotFound, rpctypes.ErrAuthOldRevision} {
		if errors.Is(err, e) {
			return &authError{err: err}
		}
	}
	return err
}

// authError is an error of the server's refusal, matching
// locking.ErrUnauthorized; its Advice names the configuration keys to
// check, which the elector logs with LeadershipProviderAuthFailed.
type authError struct{ err error }

func (e *authError) Error() string   { return locking.ErrUnauthorized.Error() + ": " + e.err.Error() }
func (e *authError) Unwrap() []error { return []error{locking.ErrUnauthorized, e.err} }

// Advice names what to check.
func (e *authError) Advice() string {
	return "check locking.etcd.username and locking.etcd.password, and that the user's role grants read and write on the key prefix (locking.etcd.prefix)"
}

// opError wraps the error of operation op on key, with ctx's error when
// ctx has ended whatever the client reported.
func opError(op, key string, ctx context.Context, err error) error {
	err = classify(err)
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("etcdlock: %s %q: %w: %w", op, key, cerr, err)
	}
	return fmt.Errorf("etcdlock: %s %q: %w", op, key, err)
}

// grant grants a lease of secs seconds. The server may grant more (its
// minimum, see the package documentation), never less.
func (p *Provider) grant(ctx context.Context, secs int64) (spareLease, error) {
	sent := time.Now()
	r, err := p.cli.Grant(ctx, secs)
	if err != nil {
		return spareLease{}, err
	}
	return spareLease{id: r.ID, ttl: time.Duration(r.TTL) * time.Second, refreshed: sent}, nil
}

// takeSpare returns a spare lease of secs seconds that has more than
// spareMargin left, dropping those that have not (they run out on their
// own).
func (p *Provider) takeSpare(secs int64) (spareLease, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	set := p.spares[secs]
	for len(set) > 0 {
		s := set[len(set)-1]
		set = set[:len(set)-1]
		if time.Since(s.refreshed) < s.ttl-spareMargin {
			p.spares[secs] = set
			return s, true
		}
	}
	delete(p.spares, secs)
	return spareLease{}, false
}

// maxSpares bounds the spare leases kept per TTL.
const maxSpares = 8

// putSpare keeps s for a later acquisition, or revokes it in the
// background when enough are kept.
func (p *Provider) putSpare(secs int64, s spareLease) {
	p.mu.Lock()
	if len(p.spares[secs]) < maxSpares && !p.w.isClosed() {
		p.spares[secs] = append(p.spares[secs], s)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.revoke(s.id)
}

// revoke revokes id on a context of its own bounded by cleanupTimeout,
// which deletes the key attached to it; the outcome is not reported.
func (p *Provider) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(leaderOnly(context.Background()), cleanupTimeout)
	defer cancel()
	_, _ = p.cli.Revoke(ctx, id)
}

// Acquire implements locking.Provider in one transaction: a free key
// (no lease record) is taken with a lease of r.TTL rounded up to whole
// seconds, and the fence is the transaction's revision, which etcd
// assigns and which only grows (G1). A held key reports its holder's
// value, and its remaining time from the holder's lease (a second
// request: a transaction cannot read a lease's time to live). With a
// participant TTL the participant is registered in the same
// transaction, whatever the outcome (P1).
//
// The lease is one the provider granted earlier and keeps in reserve
// (released by this provider, or left by a refused attempt), refreshed by
// a keep-alive sent with the transaction, so an acquisition costs one
// raft write; without one, a lease is granted first (two). When the reply
// is lost after the transaction was sent, the lease is revoked, so no
// lease is left behind.
func (p *Provider) Acquire(ctx context.Context, r locking.AcquireRequest) (locking.AcquireResult, error) {
	if err := checkKey("acquire", r.Key); err != nil {
		return locking.AcquireResult{}, err
	}
	if err := checkTTL("acquire", r.TTL); err != nil {
		return locking.AcquireResult{}, err
	}
	ctx = leaderOnly(ctx)
	if o, ok := p.offers.take(r.Key, r.Owner); ok {
		// The key was handed to this owner (see handoff.go).
		res, done, err := p.adopt(ctx, r, o)
		if err != nil {
			return locking.AcquireResult{}, opError("acquire", r.Key, ctx, err)
		}
		if done {
			return res, nil
		}
	}
	if r.ParticipantTTL > 0 && r.Yield > 0 {
		if res, wait, err := p.yield(ctx, r); err != nil || wait {
			return res, err
		}
	}
	var res locking.AcquireResult
	var err error
	// A second attempt follows a lease that ran out (a fresh one may
	// succeed); with ExpiryQuarantine, also a refusal whose records show
	// the key free to take (see quarantine.go).
	for attempt := 0; attempt < 3; attempt++ {
		var retry bool
		res, retry, err = p.acquire(ctx, r)
		if !retry {
			break
		}
	}
	if err != nil {
		return locking.AcquireResult{}, opError("acquire", r.Key, ctx, err)
	}
	return res, nil
}

// acquire is one attempt of Acquire; retry reports that a lease it used
// had run out on the server (a spare or the participants' session), so a
// second attempt with fresh ones may succeed, or, with ExpiryQuarantine,
// that the refusal found the key free to take under a new guard.
func (p *Provider) acquire(ctx context.Context, r locking.AcquireRequest) (res locking.AcquireResult, retry bool, err error) {
	secs := seconds(r.TTL)
	l, spare := p.takeSpare(secs)
	if !spare {
		if l, err = p.grant(ctx, secs); err != nil {
			return res, false, err
		}
	}
	reg, err := p.registration(ctx, r.Key, r.Owner, r.ParticipantTTL, r.Priority)
	if err != nil {
		p.putSpare(secs, l)
		return res, false, err
	}
	lk := p.recKey(r.Key, recLease)
	then := []clientv3.Op{
		clientv3.OpPut(lk, r.Value, clientv3.WithLease(l.id)),
		clientv3.OpPut(p.recKey(r.Key, recFence), r.Owner),
	}
	els := []clientv3.Op{clientv3.OpGet(lk)}
	if r.ParticipantTTL > 0 {
		els = append(els, p.participantsOp(r.Key))
	}
	if reg.put != nil {
		then, els = append(then, *reg.put), append(els, *reg.put)
	}
	if r.ParticipantTTL > 0 {
		// The participants as of the acquisition, after the
		// registration, which the next extensions reuse (see Extend).
		then = append(then, p.participantsOp(r.Key))
	}
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(lk), "=", 0)}
	if p.o.ExpiryQuarantine {
		cmps = append(cmps, p.quarantineGuard(r.Key, r.TTL, time.Now())...)
		els = append(els, p.quarantineOps(r.Key)...)
	}
	// The keep-alive of a spare goes out with the transaction: the server
	// refreshes the lease after sent, so it lives at least until sent + its
	// TTL, which is no shorter than r.TTL.
	var ka chan error
	sent := time.Now()
	if spare {
		ka = make(chan error, 1)
		go func() {
			_, err := keepAliveOnce(ctx, p, l.id)
			ka <- err
		}()
	}
	reg.refresh(ctx)
	resp, err := noLeaderRetry(ctx, p, func() (*clientv3.TxnResponse, error) {
		return p.cli.Txn(ctx).If(cmps...).Then(then...).Else(els...).Commit()
	})
	var kaErr error
	if ka != nil {
		kaErr = <-ka
		if kaErr == nil {
			l.refreshed = sent
		}
	}
	if err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			// A spare or the participants' session ran out: nothing was
			// written. Forget both and try again with fresh ones.
			p.dropSession(reg.secs, reg.id)
			return res, true, err
		}
		if kaErr == nil && !mayHaveRun(err) {
			p.putSpare(secs, l)
		} else {
			p.revoke(l.id) // deletes the key if the transaction took it
		}
		p.registrationFailed(reg)
		return res, false, err
	}
	if !resp.Succeeded {
		if kaErr != nil {
			p.revoke(l.id)
		} else {
			p.putSpare(secs, l)
		}
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if p.o.ExpiryQuarantine {
			n := len(resp.Responses)
			wait, again := p.quarantine(r.Key, len(kvs) > 0, resp.Responses[n-2].GetResponseRange().GetKvs(),
				resp.Responses[n-1].GetResponseRange().GetKvs(), r.TTL, time.Now())
			if again {
				return res, true, nil
			}
			if wait > 0 {
				res, err = p.refused(ctx, r, resp)
				res.Remaining = wait
				return res, false, err
			}
		}
		if len(kvs) > 0 {
			if o, ok := p.handedOver(ctx, r, kvs[0]); ok {
				// Handed to this owner, unseen on a watch (see handoff.go).
				if res, done, err := p.adopt(ctx, r, o); done {
					return res, false, err
				}
			}
		}
		res, err = p.refused(ctx, r, resp)
		return res, false, err
	}
	if kaErr != nil {
		// The key was taken with a lease that may end before its holder
		// believes: give it back.
		p.revoke(l.id)
		return res, false, fmt.Errorf("refresh lease: %w", kaErr)
	}
	h := heldLease{key: r.Key, id: l.id, ttl: l.ttl, refreshed: l.refreshed, owner: r.Owner, registered: r.ParticipantTTL > 0}
	if r.ParticipantTTL > 0 {
		h.parts = participantsRead{kvs: resp.Responses[len(then)-1].GetResponseRange().GetKvs(), at: sent}
	}
	p.mu.Lock()
	p.held[r.Value] = h
	p.sweep()
	p.mu.Unlock()
	p.yields.Reset(r.Key)
	if p.o.ExpiryQuarantine {
		p.tookKey(r.Key, resp.Header.Revision)
	}
	res.Acquired, res.Fence = true, uint64(resp.Header.Revision)
	return res, false, nil
}

// refused fills the result of a refused acquisition from the transaction's
// Else branch: the holder's value, its lease's remaining time (one more
// request) and the participants' top priority.
func (p *Provider) refused(ctx context.Context, r locking.AcquireRequest, resp *clientv3.TxnResponse) (locking.AcquireResult, error) {
	var res locking.AcquireResult
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return res, nil // released meanwhile: refused all the same, with nothing to report
	}
	res.HolderValue = string(kvs[0].Value)
	if r.ParticipantTTL > 0 && len(resp.Responses) > 1 {
		res.TopPriority = participants.Top(p.decoded(r.Key, resp.Responses[1].GetResponseRange().GetKvs()), r.Owner, r.Priority, true)
	}
	ttl, err := p.cli.TimeToLive(ctx, clientv3.LeaseID(kvs[0].Lease))
	if err != nil {
		return res, nil // the holder is known; its remaining time is not
	}
	if p.o.ExpiryQuarantine && ttl.GrantedTTL > 0 {
		p.quar.sawHolder(r.Key, time.Duration(ttl.GrantedTTL)*time.Second)
	}
	if rem, ok := remaining(ttl); ok {
		res.Remaining = rem
	} else {
		res.Remaining = time.Millisecond // runs out now
	}
	return res, nil
}

// remaining is a lease's remaining time from its TimeToLive: the server
// reports whole seconds rounded down (0 for less than a second, -1 for a
// lease that is gone), so the next second, at most the granted TTL, is
// the bound that is never too short. ok is false for a lease that is gone.
func remaining(r *clientv3.LeaseTimeToLiveResponse) (time.Duration, bool) {
	if r.TTL < 0 {
		return 0, false
	}
	secs := r.TTL + 1
	if r.GrantedTTL > 0 {
		secs = min(secs, r.GrantedTTL)
	}
	return time.Duration(secs) * time.Second, true
}

// mayHaveRun reports whether a failed request may have been applied: not
// when the server answered with an error of its own.
func mayHaveRun(err error) bool {
	var ee rpctypes.EtcdError
	return !errors.As(err, &ee)
}

// Extend implements locking.Provider with a keep-alive of the
// acquisition's lease: the lease is attached to this acquisition's key
// alone and ends with it (a release by this provider forgets it; a release
// by another process revokes it), so a lease that is still alive is the
// proof that the key still stores r.Value. The server resets the lease to
// its granted TTL, which is at least r.TTL; when r.TTL is longer than
// that, the key is moved to a longer lease in one transaction that keeps
// its fence. With a participant TTL the participant's registration is
// refreshed (its session's keep-alive is shared by every key of the
// provider) and the live participants are reported (B2, O6) from a read
// at most a lease old: the acquisition's transaction reads them, and an
// extension reads them again once that read is a lease old (or when it
// registers anew), so a steady renewal costs one request, the keep-alive,
// and a read once per lease. Registrations are that coarse already (one
// stays live for two leases after its holder's last request, and a
// higher priority preempts after a lease): a read up to a lease old
// notices a new participant, or a departed one, up to a lease later; it
// decides nothing about who holds the key.
func (p *Provider) Extend(ctx context.Context, r locking.ExtendRequest) (locking.ExtendResult, error) {
	var res locking.ExtendResult
	if err := checkKey("extend", r.Key); err != nil {
		return res, err
	}
	if err := checkTTL("extend", r.TTL); err != nil {
		return res, err
	}
	ctx = leaderOnly(ctx)
	p.mu.Lock()
	h, ok := p.held[r.Value]
	p.mu.Unlock()
	if !ok || h.key != r.Key {
		return res, nil // released by this provider, or never acquired through it
	}
	var reg registration
	var parts participantsRead
	var pErr error
	var wg sync.WaitGroup
	if r.ParticipantTTL > 0 {
		wg.Go(func() {
			reg, pErr = p.registration(ctx, r.Key, r.Owner, r.ParticipantTTL, r.Priority)
			var written bool
			if pErr == nil && reg.put != nil {
				written, pErr = p.registerWhileHeld(ctx, r.Key, h.stored(r.Value), reg)
			}
			reg.refresh(ctx)
			if pErr != nil || (reg.put != nil && !written) {
				return
			}
			if reg.put == nil && !h.parts.at.IsZero() && time.Since(h.parts.at) < r.TTL {
				parts = h.parts // read less than a lease ago
				return
			}
			sent := time.Now()
			resp, err := p.cli.Do(ctx, p.participantsOp(r.Key))
			if err != nil {
				pErr = err
				return
			}
			parts = participantsRead{kvs: resp.Get().Kvs, at: sent}
			p.mu.Lock()
			if c, ok := p.held[r.Value]; ok && c.id == h.id {
				c.parts = parts
				p.held[r.Value] = c
			}
			p.mu.Unlock()
		})
	}
	extended, err := p.extendLease(ctx, r, h)
	wg.Wait()
	if err != nil {
		return locking.ExtendResult{}, opError("extend", r.Key, ctx, err)
	}
	res.Extended = extended
	if r.ParticipantTTL > 0 && pErr == nil && !parts.at.IsZero() {
		var preempt bool
		res.Participants, preempt = participants.Extension(p.decoded(r.Key, parts.kvs), r.Owner, r.Priority, r.TTL, time.Now())
		res.Preempt = extended && preempt
	}
	return res, nil
}

// registerWhileHeld writes reg's participant record of key while the
// key's lease record still stores stored, in one transaction: a renewal
// that finds the key released or taken since registers nobody (H2; it may
// have been on its way while the holder stopped and withdrew). written is
// false when the record was not written; the registration is then
// forgotten, so a later request writes it again.
func (p *Provider) registerWhileHeld(ctx context.Context, key, stored string, reg registration) (written bool, err error) {
	resp, err := noLeaderRetry(ctx, p, func() (*clientv3.TxnResponse, error) {
		return p.cli.Txn(ctx).If(clientv3.Compare(clientv3.Value(p.recKey(key, recLease)), "=", stored)).
			Then(*reg.put).Commit()
	})
	if err != nil || !resp.Succeeded {
		p.registrationFailed(reg)
		return false, err
	}
	return true, nil
}

// extendLease refreshes h's lease, or moves the key to a longer one.
func (p *Provider) extendLease(ctx context.Context, r locking.ExtendRequest, h heldLease) (bool, error) {
	if h.ttl >= r.TTL {
		sent := time.Now()
		_, err := keepAliveOnce(ctx, p, h.id)
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			p.forget(r.Value)
			return false, nil
		}
		if err != nil {
			return false, err
		}
		p.mu.Lock()
		if c, ok := p.held[r.Value]; ok && c.id == h.id && c.refreshed.Before(sent) {
			c.refreshed = sent
			p.held[r.Value] = c
		}
		p.mu.Unlock()
		return true, nil
	}
	l, err := p.grant(ctx, seconds(r.TTL))
	if err != nil {
		return false, err
	}
	lk := p.recKey(r.Key, recLease)
	resp, err := noLeaderRetry(ctx, p, func() (*clientv3.TxnResponse, error) {
		return p.cli.Txn(ctx).If(
			clientv3.Compare(clientv3.Value(lk), "=", h.stored(r.Value)),
			clientv3.Compare(clientv3.LeaseValue(lk), "=", h.id),
		).Then(clientv3.OpPut(lk, h.stored(r.Value), clientv3.WithLease(l.id))).Commit()
	})
	if err != nil {
		p.revoke(l.id)
		return false, err
	}
	if !resp.Succeeded {
		p.putSpare(seconds(r.TTL), l)
		p.forget(r.Value)
		return false, nil
	}
	moved := h
	moved.id, moved.ttl, moved.refreshed = l.id, l.ttl, l.refreshed
	p.mu.Lock()
	p.held[r.Value] = moved
	p.mu.Unlock()
	p.putSpare(seconds(h.ttl), spareLease{id: h.id, ttl: h.ttl, refreshed: h.refreshed})
	return true, nil
}

// sweepEvery is how often, at most, acquisitions drop the records of
// leases that certainly ran out (their holders neither extended nor
// released them).
const sweepEvery = 10 * time.Second

// sweep drops the records of held leases not refreshed for two of their
// TTLs; p.mu must be held.
func (p *Provider) sweep() {
	now := time.Now()
	if now.Sub(p.swept) < sweepEvery {
		return
	}
	p.swept = now
	for v, h := range p.held {
		if now.Sub(h.refreshed) > 2*h.ttl {
			delete(p.held, v)
		}
	}
}

// forget drops the record of an acquisition whose lease is gone.
func (p *Provider) forget(value string) {
	p.mu.Lock()
	delete(p.held, value)
	p.mu.Unlock()
}

// Release implements locking.Provider. For an acquisition of this
// provider it is one transaction, while the key stores r.Value: with a
// named successor (r.Target), a handover to it (see handoff.go);
// otherwise, or when the successor's participant record is gone, a deletion of the
// key, writing a note naming r.Target (B1) when set, which watchers see
// as EventReleased, and the lease, now bound to nothing, is kept for a
// later acquisition. For a value this provider did not acquire (an
// operator's release through the hostloom CLI) it reads the key and
// revokes its lease while it stores r.Value, which ends the holder's
// extensions too. r.Withdraw's participant record is deleted in the
// transaction, in either branch (for another value: deleted first, then
// the value released; locking.ReleaseWithdrawer).
func (p *Provider) Release(ctx context.Context, r locking.ReleaseRequest) (bool, error) {
	if err := checkKey("release", r.Key); err != nil {
		return false, err
	}
	p.mu.Lock()
	h, ok := p.held[r.Value]
	mine := ok && h.key == r.Key
	if mine && r.Withdraw != "" {
		p.forgetRegistration(r.Key, r.Withdraw)
	}
	p.mu.Unlock()
	if !mine {
		if r.Withdraw != "" {
			// Deregister forgets the registration too.
			if err := p.Deregister(ctx, r.Key, r.Withdraw); err != nil {
				return false, err
			}
		}
		return p.releaseOther(leaderOnly(ctx), r)
	}
	ctx = leaderOnly(ctx)
	then, handovers := p.releaseOps(r, h, p.successors(r, h))
	var otherwise []clientv3.Op
	if r.Withdraw != "" {
		gone := clientv3.OpDelete(p.participantPrefix(r.Key) + r.Withdraw)
		then, otherwise = append(then, gone), []clientv3.Op{gone}
	}
	lk := p.recKey(r.Key, recLease)
	resp, err := noLeaderRetry(ctx, p, func() (*clientv3.TxnResponse, error) {
		return p.cli.Txn(ctx).If(
			clientv3.Compare(clientv3.Value(lk), "=", h.stored(r.Value)),
			clientv3.Compare(clientv3.LeaseValue(lk), "=", h.id),
		).Then(then...).Else(otherwise...).Commit()
	})
	if err != nil {
		return false, opError("release", r.Key, ctx, err)
	}
	p.forget(r.Value)
	if !resp.Succeeded {
		return false, nil
	}
	if handedTo(resp, handovers) {
		return true, nil // the lease is the successor's now
	}
	// The lease is bound to nothing now: keep it for a later acquisition,
	// which refreshes it first.
	p.putSpare(seconds(h.ttl), spareLease{id: h.id, ttl: h.ttl, refreshed: h.refreshed})
	return true, nil
}

// releaseOther releases a value this provider did not acquire, by
// revoking its lease.
func (p *Provider) releaseOther(ctx context.Context, r locking.ReleaseRequest) (bool, error) {
	resp, err := p.cli.Get(ctx, p.recKey(r.Key, recLease))
	if err != nil {
		return false, opError("release", r.Key, ctx, err)
	}
	if len(resp.Kvs) == 0 || string(resp.Kvs[0].Value) != r.Value {
		return false, nil
	}
	if r.Target != "" {
		if _, err := noLeaderRetry(ctx, p, func() (*clientv3.PutResponse, error) {
			return p.cli.Put(ctx, p.recKey(r.Key, recNote), "r"+r.Target)
		}); err != nil {
			return false, opError("release", r.Key, ctx, err)
		}
	}
	_, err = p.cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return false, nil
	}
	if err != nil {
		return false, opError("release", r.Key, ctx, err)
	}
	return true, nil
}

// leaderOnly marks ctx's requests as requiring a raft leader: a member
// that has lost its leader (cut off from the others) refuses them at once
// with rpctypes.ErrNoLeader instead of holding them until the caller's
// deadline. The client retries a refused read, lease grant or revocation
// on another member by itself; a refused write was not applied
// (so an acquisition need not give its lease back) and noLeaderRetry
// sends it again, to another member, as it does a refused keep-alive.
// Without it a third of the requests of a client of three members hang
// while one member is cut off: renewals miss their deadlines,
// acquisitions that may have been applied must be revoked, and
// candidates churn.
func leaderOnly(ctx context.Context) context.Context {
	return clientv3.WithRequireLeader(ctx)
}

// noLeaderRetry runs fn (a write or a keep-alive on a leaderOnly
// context) again while a member refuses it for want of a raft leader,
// until ctx ends: the member refused it before proposing or forwarding
// it, so it was not applied, and the client balances each request over
// its endpoints, so a later one goes to another member. The first retries
// (one per endpoint) go at once, later ones every noLeaderBackoff, as the
// etcd client retries the reads, grants and revocations it refuses; it
// does not retry writes (it cannot know whether a failed one was applied)
// nor keep-alives (it reports the refusal).
func noLeaderRetry[T any](ctx context.Context, p *Provider, fn func() (T, error)) (T, error) {
	n := len(p.cli.Endpoints())
	for i := 0; ; i++ {
		r, err := fn()
		if err == nil || !errors.Is(err, rpctypes.ErrNoLeader) || ctx.Err() != nil {
			return r, err
		}
		if i+1 < n {
			continue
		}
		t := time.NewTimer(noLeaderBackoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return r, err
		case <-t.C:
		}
	}
}

// keepAliveOnce renews lease id once, through noLeaderRetry. A member
// that loses its raft leader ends its lease streams, which the client
// reports as io.EOF rather than ErrNoLeader: a keep-alive (safe to send
// again) that ends so is sent again, to the next member, like one
// refused for want of a leader.
func keepAliveOnce(ctx context.Context, p *Provider, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	return noLeaderRetry(ctx, p, func() (*clientv3.LeaseKeepAliveResponse, error) {
		r, err := p.keepAliveStream(ctx, id)
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w (the member ended the keep-alive stream: %w)", rpctypes.ErrNoLeader, err)
		}
		return r, err
	})
}

// noLeaderBackoff is the wait between retries of a request refused for
// want of a raft leader, once every endpoint was tried.
const noLeaderBackoff = 25 * time.Millisecond
