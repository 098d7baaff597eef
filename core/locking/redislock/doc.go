// Package redislock is the Redis and Valkey provider of package locking: a
// locking.Provider over a go-redis redis.UniversalClient, for standalone
// servers, Sentinel failover clients and Redis Cluster.
//
//	p := redislock.New(redis.NewClient(&redis.Options{Addr: "localhost:6379"}))
//	defer p.Close()
//	lock, err := locking.New(p, locking.DefaultOptions())
//
// # Operations
//
// Every operation but Keys is one round trip: a Lua script run with
// EVALSHA, falling back to EVAL when the server does not know the script
// yet (NOSCRIPT, for example after a restart or SCRIPT FLUSH), or a single
// command. The scripts are embedded .lua files; their arguments are
// prepared with few allocations (BenchmarkTryAcquireRelease compares them
// with raw go-redis calls).
//
//   - Acquire: when the key is free, SET key value PX ttl,
//     the fence written to the key's meta hash, and an "acquired@FENCE:OWNER"
//     message on the key's channel; when it is held, the holder's value
//     (and so its owner identity, P2) and the time to its expiry in
//     microseconds (PEXPIRETIME against TIME, not PTTL's truncated
//     milliseconds), reported by locking.HeldError. Either way the owner is registered as a
//     participant.
//   - Extend: PEXPIRE when the key still stores this lease's
//     value, and the participant's registration.
//   - Plain lock users (TryAcquire, Acquire: no participant) without
//     quarantine: one SET NX PX GET takes the key or reads its holder
//     (then PTTL: three commands, EVALSHA included, when refused); when
//     taken, HINCRBY of the meta hash's fence, TIME, and an HSET raising
//     it to the server's clock issue max(last + 1, TIME in µs): five
//     commands. TIME keeps fences increasing after a failover to a replica
//     whose stored fence is stale, not only after one that lost it.
//   - Release: DEL when the key still stores this lease's value (one MGET
//     reads it with the key's waiter mark), then a "released" message on
//     the key's channel when someone may listen: a handover, an elector's
//     lease (locking.ReleaseRequest.Notify), or a waiter mark
//     "{TAG}:wait:" + K, which every Subscribe sets for WaitMarkTTL (and
//     again whenever the server confirms the channel subscribed). A plain
//     release nobody waits for is three commands. The fence and the
//     participants are kept.
//   - Get (holder lookup): GET and PTTL. Inspect: GET, PTTL, TIME and the
//     meta hash. Participants is Inspect's reply without the lease;
//     Deregister is one HDEL; Keys is SCAN (on every master of a Cluster).
//   - Advance (state): compare-and-set of a decimal int64, compared without
//     the loss of precision of Lua numbers; State is one GET.
//
// # Fences and participants (G1, P1)
//
// Each lock key K has a meta hash "{TAG}:meta:" + K, where TAG is K's own
// hash tag when it has one (with locking.Options.UseHashTags: the
// namespace, so the namespace's keys share one slot), else a string of at
// most three characters that hashes to K's slot: the hash always lives in
// K's Redis Cluster slot, so the scripts touch both in one step, on
// standalone, Sentinel and Cluster alike. Meta keys begin with '{' and
// contain ":meta:", so they never collide with lock keys
// ({namespace}:lock:{key}) or state keys. Fields:
//
//   - "fence": the last fence issued for K, a decimal integer. An
//     elector's acquisition issues max(stored + 1, server TIME in
//     microseconds); a plain lock user's issues stored + 1, or the server
//     TIME in microseconds when none is stored (fewer fences have been
//     issued since than microseconds have passed, each acquisition being a
//     command of its own, so the two forms interleave and still grow): the
//     stored value makes fences strictly increasing even within one clock
//     tick, the clock makes them increase when the stored value is lost (a
//     restart without persistence, FLUSHALL, a failover to a replica that
//     missed the write), as long as the server clocks do not step back.
//     Fences stay below 2^53 (Lua numbers are doubles; the clock reaches
//     that in the year 2255); a stored fence that is not such a number
//     fails the acquisition with locking.ErrBadRecord naming the meta key,
//     and nothing is written.
//   - "p:" + OWNER: a participant, "SINCE_MS:EXPIRES_MS" in server
//     milliseconds. Every registration sets EXPIRES to now + two leases and
//     keeps SINCE while the record is live. Expired records are ignored by
//     readers and deleted by the next acquisition; records that do not
//     parse are skipped and reported with locking.ErrBadRecord.
//
// The meta hash expires MetaTTL (7 days) after its last acquisition or
// refused attempt (an extension gives it a time to live only when it had
// none, so a renewal costs no extra command). After that the next fence
// comes from the clock alone, which by then is 7 days past anything issued
// before.
// Values embed a random 128-bit token (generated by package locking), so a
// caller never extends or deletes a lease it does not own. Times to live
// have millisecond precision: a ttl below one millisecond is refused, and
// fractions of a millisecond are rounded up so the server never expires a
// lease before its holder believes it ends.
//
// Errors are prefixed "redislock: ". A Provider built with a nil client does
// not panic: every operation returns ErrNilClient.
//
// # Cancelled contexts
//
// A context that has already ended (or whose deadline has passed) is
// refused before anything is sent. Whenever an operation fails after its
// context ended, the error wraps the context's error, whatever the
// transport reported (go-redis may report an ended deadline as an i/o
// timeout), so errors.Is(err, context.DeadlineExceeded) holds.
//
// When the context ends (or the connection breaks) after an acquisition was
// sent, its outcome is unknown: Acquire then deletes the value it tried to
// store (compare-and-delete on a new round trip, bounded by one second on a
// context detached from the caller's, publishing the release when it
// deletes) before returning the error, so no lease is left behind. The
// fence it may have issued is not reused. When even that fails, or
// the server runs the two out of order, the lease expires after its ttl.
// No cleanup is attempted when the command certainly did not run (an error
// reply, a refused connection, a closed client, an exhausted pool).
//
// go-redis interrupts a command in flight when its context ends only with
// redis.Options.ContextTimeoutEnabled; otherwise it waits for the reply up
// to ReadTimeout, and an acquisition that succeeds meanwhile is returned as
// acquired. A call coalesced with others into one pipelined round trip
// (calls that fall due while another is on the wire) behaves alike
// whatever the options: when its deadline passes while the round trip is
// on the wire, it waits up to a second for the reply and returns it, so
// an acquisition or extension granted meanwhile counts; only when the
// caller cancelled its context, or no reply came, does it return the
// context's error, and Acquire cleans up as above.
//
// # Events and release notifications
//
// The scripts publish on the channel key + ":released" (PUBLISH; on Redis
// Cluster SPUBLISH, sharded pub/sub, to a channel in the key's slot): the
// acquire script "acquired@FENCE:OWNER" on success (earlier versions
// "acquired:OWNER", read as an acquisition without a fence), the release script
// "released", and RequestResign "resign:OWNER" ("resign:" for whoever
// holds the key). Releases of earlier versions carry an empty message and
// count as releases; unknown messages are ignored. Subscribe
// (locking.Subscriber) receives every event plus the subscription's state
// (locking.EventSubscribed when the server confirms the channel, at first
// and after every reconnection; locking.EventUnsubscribed when the
// connection is lost or the provider closed). A provider keeps one pub/sub
// connection for all its watches (on Cluster one per hash slot in use: with
// locking.Options.UseHashTags every key of a namespace shares its slot, so
// one per namespace), subscribing and unsubscribing channels as watchers
// come and go. Delivery is best effort: messages published while the
// connection reconnects are lost (go-redis reconnects on its own), and
// every Watch is woken once after a reconnection to make up for it.
// Waiters must still retry on their own cadence. Close ends the
// subscriptions.
//
// On Redis Cluster without hash tags, a key that has no valid hash tag but
// contains '}' has no channel hashing to its slot: its events are not
// published (RequestResign reports locking.ErrNotSupported), and waiters
// fall back to the holder's remaining TTL.
//
// # Compatibility
//
// The scripts use only commands Redis 6.2+, Redis 7 and Valkey (7.2, 8)
// share: SET with NX and PX, GET, MGET, DEL, PTTL, PEXPIRE, TIME, HGET,
// HSET, HINCRBY, HDEL, HGETALL, PUBLISH, EVALSHA and EVAL. SET with both
// NX and GET needs Redis 7.0+ or Valkey; on 6.2 the plain lock's script
// falls back to GET and SET (one command more). A refused acquisition
// reads the holder's expiry with PEXPIRETIME (Redis 7.0+, Valkey); on 6.2
// it falls back to PTTL. TIME before writes needs
// script effects replication, the default since Redis 5 and the only mode
// of Redis 7 and Valkey. Sharded pub/sub (SPUBLISH, SSUBSCRIBE), used only
// on Cluster, needs Redis 7.0+ or Valkey. redis.Ring is not supported for
// notifications: a ring may place a key and its channel on different
// shards.
//
// # Quarantine after state loss (Q3)
//
// NewWithOptions with Options.Quarantine makes the acquire and extend
// scripts notice that the server lost a key's state: its meta hash no
// longer has a fence although this provider saw it, the server has been up
// for less than the lease asked and has no record of the key, or the
// server's run id (read in the script with INFO server) differs from the
// one this provider last saw with the key. The first script that notices
// stores "q" = "UNTIL_MS:RUNID" in the meta hash, now + the lease by the
// server's clock; until then every acquisition of the key is refused with
// the time left as the holder's remaining TTL (no holder value), so
// electors sleep until it ends. One loss quarantines once: the field stays
// with the hash. No extra round trip; the scripts then return the run id
// as a last element, which the provider keeps per key.
//
// Choose it when an effect that checks no fence must never run twice at
// once and one lease without a leader after a Redis restart or failover is
// acceptable. Without it the old leader learns of the loss at its next
// contact (at once when its notification subscription comes back: package
// leadership, Q1), which leaves a window of milliseconds when it can reach
// the server, and up to its lease when it cannot.
//
// # Replica acknowledgement (Q2)
//
// With Options.MinReplicas N, AcquireWith and ExtendWith send their script
// and WAIT N ReplicaAckTimeout in one pipeline: one connection (on Cluster
// the master of the key), one round trip. An acquisition fewer than N
// replicas acknowledged is deleted again (compare-and-delete, no release
// message) and fails with an AckError (errors.Is ErrNotAcknowledged); an
// extension that too few acknowledged fails the same way, although the
// primary extended the key, so the caller keeps its earlier deadline.
// AckError is locking.AckError, so an elector (package leadership) tells
// such an episode from an outage: it logs it once at Warn and counts each
// call in hostloom.leadership.unacknowledged. A refusal needs no
// acknowledgement. ReplicasConnected reads the number of
// connected replicas (INFO replication) for a check at start.
//
// # What a lease does not promise
//
// Redis replicates asynchronously: after a failover the new primary may not
// know a lease the old one granted, and two holders may overlap, unless
// MinReplicas makes every lease wait for a replica. The fence tells them
// apart (the successor's is larger) where a store checks it; see package
// locking.
//
// Rule ids (E6, K5, …) are explained in docs/rules.md.
package redislock
