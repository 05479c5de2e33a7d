// Package replicatest holds the tests and benchmarks of several `spool
// serve` processes (replicas) sharing one PostgreSQL database: the
// deployment that docs/scaling-out.md describes. It has no code outside
// its tests.
//
// The tests build the spool command once, start replicas on free
// loopback ports with --store naming one fresh schema
// (pgstore/pgtest.URL), drive them over HTTP as a client would, and then
// read every transcript back from the database to check what the
// replicas wrote together:
//
//   - each session is one chain: the first entry has no parent, every
//     other entry's parent is the entry before it;
//   - turns never interleave: a turn's entries are contiguous, start with
//     its user message and end with exactly one assistant.turn_end;
//   - every request's prompt is there exactly once, in the turn whose id
//     the request was answered with, and no other prompt is;
//   - a replica killed mid-turn leaves its turn open, and the next turn
//     on that session, on another replica, closes it as cancelled.
//
// They need SPOOL_TEST_POSTGRES (skipped without it, failed under
// CI=true, as pgtest does) and leave no process or database connection
// behind.
package replicatest
