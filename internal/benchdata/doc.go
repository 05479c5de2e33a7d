// Package benchdata is the data set every store's benchmarks measure, so
// that BENCHMARKS.md compares like with like: the entry generator, the
// shapes (sets) built from it, the search queries, and a CPU-time metric.
// It is imported by benchmarks and their tests only.
//
// The shapes:
//
//   - An entry is exactly EntrySize (300) bytes on the wire
//     (transcript.AppendJSON; a transcript line adds its newline):
//     alternating user.message and assistant.message entries, the answer in
//     the turn of the question, chained by parentId, with ULID ids and
//     millisecond timestamps. The text is English words from Vocabulary (216
//     words of customer-support chat, most common first), drawn with a Zipf
//     distribution (s=1.1, v=4) and cut to length.
//   - Everything is seeded: a set's session j always holds the same entries,
//     ids included, whichever store loads it and in whatever order.
//   - Append: one session, each operation one entry appended with its
//     parent, durable when Append returns (as durable as the store makes
//     it); AppendParallel: 4 writers per CPU, a session each.
//   - Tail: the newest TailN (50) entries of a session of 100,000 entries
//     (TailLong), and, for comparison, of one of 1,000 (TailShort).
//   - List: the first page (PageSize, 50) of one namespace holding 10,000
//     sessions of 2 entries each (List).
//   - Search: one namespace of 1,000 sessions of 1,000 entries, 1,000,000
//     entries in all (Search); entries of different sessions interleave in
//     time. Every 10,007th entry (global index) also starts with the word
//     "zanzibar" (Marker): 100 entries. Queries, limit 50, are in Queries:
//     a rare word, a common one, two words, a word no entry has, the rare
//     and the common word within one session, and a two-letter word (too
//     short for a trigram index).
//
// Generating an entry costs about two microseconds (BenchmarkNext), which
// append benchmarks pay inside their loops, and the search set seconds.
// Stores load the sets with bulk loaders of their own (the same rows Append
// writes, checked against Append by each store's tests), because a million
// durable Appends would take most of an hour. BenchmarkParse and
// BenchmarkSearchText measure the decoding every read and every scan pays
// per entry.
package benchdata
