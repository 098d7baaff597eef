// Package etcdlock is a lock provider (locking.Provider) over etcd, for
// teams that run etcd already and want elections that survive the loss of
// any minority of its members without losing an acknowledged lease: etcd
// commits every acquisition on a majority of members before answering
// (N1, N2). It is a Go module of its own, so the library links no etcd
// client unless a program imports this package.
//
//	p, err := etcdlock.New(cli, etcdlock.Options{Prefix: "billing/"})
//	lock, err := locking.New(p, locking.DefaultOptions()) // lock.Close closes p
//
// # Keys
//
// Everything lives under Options.Prefix (default "hostloom/"): for a
// provider key K, the lease record P+"k/"+K+"\x00l" (the holder's
// ownership value, attached to its etcd lease), the fence record
// P+"k/"+K+"\x00f" (the last acquisition's owner; its ModRevision is the
// last fence, kept after a release), notes to watchers P+"k/"+K+"\x00n"
// (a handover's successor, resign requests), participants
// P+"p/"+K+"\x00"+owner, state values P+"s/"+K and job records P+"j/"+K
// and P+"h/"+K+"\x00"+index. An etcd user limited to a key range needs
// read and write on the prefix (etcdctl role grant-permission --prefix).
//
// # Fences
//
// An acquisition is one transaction that takes the key when it has no
// lease record; the fence is that transaction's revision, which etcd
// assigns and which only grows, so fences strictly increase per key
// across holders, whatever the clocks (G1). A handover to a named
// successor is one transaction too, and its revision is the successor's
// fence (see Provider.Release). The fence record's ModRevision is the
// current fence in every case, which Term compares.
//
// # Leases (N4)
//
// etcd leases are whole seconds, and at least the server's minimum: one
// and a half election timeouts rounded up to whole seconds (2 s with
// etcd's defaults of a 100 ms heartbeat and a 1 s election timeout). A
// lease is rounded up, never down, so the server never ends it before its
// holder believes it ends. The cost is takeover after a crash: a lease of
// 1.2 s lasts 2 s on the server, and a successor finds the key free only
// once the lease has run out and the etcd leader has revoked it (it
// checks every 500 ms), so expect up to the rounded-up lease plus half a
// second plus one RetryInterval. A lease that runs out is announced to
// watchers as a release, so candidates try at once.
//
// Sub-2-second leases need a smaller server minimum: with
// --election-timeout=500 (and --heartbeat-interval=50) the minimum is one
// second. Lower election timeouts make the cluster elect a new leader
// faster but also more often on a loaded network; keep the election
// timeout at least ten heartbeats and well above the round trip between
// members.
//
// # One write per acquisition
//
// A lease is a separate object in etcd, granted with a raft write of its
// own before the transaction that attaches the key to it. The provider
// keeps leases bound to no key (one it released, or one a refused attempt
// did not use) and reuses them: the acquisition sends a keep-alive of the
// reused lease beside the transaction, so the lease lives at least its
// TTL from the acquisition, and the acquisition costs one raft write.
// Keep-alives reuse the LeaseKeepAlive streams the provider opened, one
// renewal at a time per stream, instead of opening one per renewal.
// Extend is a keep-alive of the acquisition's own lease (no raft write):
// the lease is attached to that acquisition's key alone, so a live lease
// proves the key still stores the holder's value, and no read is needed.
// An elector's renewal also reports the key's participants: the
// acquisition's transaction reads them, and a renewal reads them again
// once that read is a lease old, so a steady renewal costs one request
// and a read once per lease. Release is one
// transaction; a release by another process (the hostloom CLI's release)
// revokes the holder's lease, which ends its extensions too. Deleting a
// lease record by hand (etcdctl del) does not end the holder's
// extensions: revoke its lease instead (etcdctl lease revoke).
//
// Participants are attached to one lease per provider and participant TTL,
// granted with the first registration and refreshed by later requests, so
// a registration costs one write and keep-alives after that.
//
// # A member cut off from the others
//
// The requests of acquisitions, renewals, releases and participants
// require a raft leader (clientv3.WithRequireLeader): a member that has
// lost its leader refuses them at once instead of holding them until the
// caller's deadline, and they go to another member (the etcd client
// retries refused reads, grants and revocations; the provider retries
// refused writes and keep-alives, which were not applied). A member
// learns it lost its leader within an election timeout or two; until then
// it holds requests, so give the client every member's endpoint.
//
// # The term in your transaction (N3)
//
// Provider.Term (or LeaderTerm, with the fence a term's context carries)
// gives the comparison a leader adds to its own etcd transaction so that
// it commits only while its term holds; Term.Check reports a transaction
// that did not commit because the term ended as a *TermError naming both
// fences. See the example of Provider.Term.
//
// # Events
//
// Subscribe watches the key's records with one etcd watch per key and
// provider (shared by its subscribers): acquisitions with the owner,
// releases (naming a handover's successor), leases that ran out, resign
// requests. The watch requires an etcd leader: a member that lost its
// leader ends it (EventUnsubscribed), and it is restored with backoff
// (EventSubscribed). Events published while it is down are not replayed.
//
// # Job records
//
// The scheduler's job records (locking.RecordStore) are one JSON record
// per job and its history ring, attached to one lease per job that each
// write refreshes, written with compare-and-swap on the record's
// revision; package jobrecord decides what to write. The term's hold is
// measured on the provider's clock.
//
// # Errors
//
// An unreachable cluster is an outage: operations fail when their context
// ends (the etcd client waits for a connection until then). A refusal of
// the credentials or a permission matches locking.ErrUnauthorized and
// advises the configuration keys to check.
//
// # Tests
//
// Package etcdtest starts three etcd members on loopback as separate
// processes for tests (N5), with helpers to kill, pause and restart them.
//
// Rule ids (N1–N5, G1, …) are explained in docs/rules.md.
package etcdlock
