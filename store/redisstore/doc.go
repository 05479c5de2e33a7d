// Package redisstore keeps session transcripts in Redis (go-redis v9): a
// store.Store for key-value deployments, with every optional capability
// but search (store.RangeReader, TailReader, Stater, Pruner, NamespaceLister,
// Locker) and native TTL expiry.
//
// Importing the package registers the URL schemes "redis" and "rediss"
// with store.Open:
//
//	redis://[user:password@]host:6379/0?prefix=spool&ttl=24h
//
// The URL is go-redis's (its query options included) plus the store's own
// parameters: prefix (WithPrefix), ttl (WithTTL), pendingttl
// (WithPendingTTL), locklease (WithLockLease), and wait, waitaof and
// waittimeout (WithWait, WithWaitAOF). New wraps a client you made
// yourself, including a Sentinel or Redis Cluster client. The store needs
// Redis 7.0 or later.
//
// # Data layout
//
// Per session, a list holds each entry's wire line (the transcript shape,
// as package transcript encodes it) and a hash holds its SessionInfo
// fields (timestamps as integer unix nanoseconds), the id of its last entry
// and its entry count. Per agent and owner, a sorted set indexes the
// sessions for listing.
//
// A list rather than a stream: the store reads by position (the newest N,
// a range of a long transcript), which LRANGE serves directly in time
// proportional to the page, walking from the nearer end of the list. A
// stream is addressed by its own time-based ids, so a position would need
// a count from one end anyway, and every entry would carry a stream id
// next to its own.
//
// The index has every member at score 0, and each member encodes the
// session's last activity and id so that Redis's byte order of members is
// exactly the listing order of storekit.Less: newest activity first, then id
// descending, exact to the nanosecond (a float score is not). A page is one
// ZRANGEBYLEX from the cursor's position, O(log n + page), and the
// sessions' hashes are read in the same script, so a page is a consistent
// snapshot and never reads a transcript.
//
// # Keys and Redis Cluster
//
// Keys are "{P:agent:owner}:idx" for the index and
// "{P:agent:owner}:s:ID:log", ":info", ":lock" and ":fence" (see Appends)
// for a session, where P is
// the prefix (default "spool") and owner is empty in project scope. Agent,
// owner and id are validated with store.ValidateKey before any key is
// built, and ':' is not in their alphabet, so no two keys ever coincide.
//
// The part in braces is a hash tag: on Redis Cluster every key of one agent
// and owner is in one slot. That is what lets an append update the
// session's list, its hash and the namespace's index in one atomic script, and
// a listing read a consistent page. The price is that one namespace cannot be
// spread over several nodes: an agent in project scope, or one very busy
// user, is served by a single primary however large the cluster. User
// namespaces spread over the cluster by owner. Tagging each session on its own
// would spread better, but the index would then be updated apart from the
// append, and listings could miss or misplace sessions.
//
// # Appends and durability
//
// Append runs one Lua script (EVALSHA, falling back to EVAL): it checks
// that the entry's parent is the session's last entry (store.ErrConflict
// otherwise), pushes the line, updates the hash as store.SessionInfo.Apply
// would, and moves the session in the index. Redis runs a script alone, so
// any number of writers on any number of processes keep every transcript
// one chain.
//
// Once the script has been sent, Append no longer heeds ctx (it waits up
// to 30 seconds for the reply), because a command cancelled in flight may
// still run. Each call carries a random nonce, which the session's hash
// keeps as its last append. go-redis sends a command again when the
// connection fails with the reply in flight, so the script may run twice
// for one call; a run that finds its own nonce applied reports success
// rather than a conflict. When no reply comes back at all (the connection
// broke, the resends failed too, the 30 seconds ran out), Append asks
// Redis, in a second script with a fresh 5-second deadline, whether the
// call's entry is in the session (the last append has its nonce, or the
// list holds its line), and first puts the nonce in the session's fence
// set (kept an hour), which the append script refuses: a copy of the call
// still in the network cannot apply it after the answer. So when Append
// returns:
//
//   - nil: the entry is in the session.
//   - ErrNotDurable (only with WithWait or WithWaitAOF): the entry is in
//     the session but the copies asked for were not confirmed.
//   - ErrOutcomeUnknown: the call may have been sent, and the second
//     script got no answer either. The entry may or may not be in the
//     session, and a copy of the call delayed in the network may still
//     add it. Re-read the session to find out.
//   - store.ErrConflict: the call did not append the entry. In one narrow
//     case the entry is nevertheless in the session: go-redis sent the
//     call again after a lost reply, and another writer appended in the
//     moment between the two sends, so the second run found the session
//     moved on; a re-read shows it.
//   - any other error: the entry was not appended (and when no reply
//     came back, the fence keeps a late copy of the call from appending
//     it).
//
// "Durable" means what the Redis server is configured for. When Append
// returns, the entry is in the primary's memory. It survives a restart of
// Redis only with persistence: with appendonly yes and appendfsync always
// it is on disk; with appendfsync everysec (the usual setting) up to about
// a second of appends can be lost in a crash of the machine; with RDB
// snapshots alone, everything since the last snapshot; with no persistence
// (the server these tests run against), nothing survives a restart.
// Replication is asynchronous, so a failover can lose recent appends. To
// wait for more, WithWait makes Append return only after WAIT has seen the
// write on that many replicas, and WithWaitAOF (Redis 7.2 and later) after
// WAITAOF has seen it in the append-only file of the primary and/or
// replicas; when they do not confirm in time, Append returns ErrNotDurable
// and the entry is nevertheless in the session.
//
// # Expiry by TTL
//
// With WithTTL(d), each append sets the session's keys to expire d later
// (PEXPIRE), so a session idle for d disappears and its id starts empty,
// as DESIGN.md asks of an expired session. A session with an approval
// pending is instead kept for the pending TTL (WithPendingTTL; by default
// the TTL plus PendingGrace, 30 days; zero keeps it until deleted), so
// that the runtime still finds it, sees its LastActivity older than the
// TTL and its PendingApprovals, and reports store.ErrSessionExpired
// instead of silently starting over; the append that resolves the
// approval puts it back on the plain TTL. The store itself never refuses
// an append for age: that decision is the runtime's.
//
// The namespace index never lists an expired session: listing reads each
// session's hash and drops members whose session is gone (or has started
// again under the same id), and each append samples three members and
// drops the stale ones, as Redis's own active expiry samples keys. The
// index key expires no earlier than the latest of its sessions. Without a
// TTL every append makes the session's keys persistent.
//
// # Corrupt data
//
// Read, ReadRange and ReadTail read the list and the hash's head and
// count in one MULTI and check them against each other, so that a list
// changed behind the store's back (an element removed, or replaced, even
// by a valid entry of another session) is reported rather than returned
// as a transcript: an element that is not an entry, entries that are not
// one chain (storekit.CheckChain; a range is checked within itself), a list
// whose last entry is not the hash's head (checked when the read reaches
// the end) or whose length is not the hash's count fail the read with a
// *store.CorruptError (matching store.ErrCorrupt) naming the session and,
// when there is one, the position. A hash with missing or malformed fields
// fails Stat and List the same way. Nothing is skipped.
//
// # Locks
//
// Lock (store.Locker) holds a per-session key set with SET NX PX to a
// random token and renewed by its holder every third of the lease
// (WithLockLease, default 15s); it is released by a script that deletes
// it only while it still holds the token. A crashed holder's lock frees
// itself when the lease runs out.
//
// # Search
//
// Redis has no text index here: store.Search scans the namespace's
// transcripts, reading each list once.
package redisstore
