// Package transcript defines the wire-stable shape of a session transcript:
// the Entry, its types and turn statuses, entry ids, and the codec that turns
// an entry into one line of JSON and back.
//
// Every store keeps entries in exactly this shape, so a transcript written by
// one store, or by another program, reads the same everywhere:
//
//	{"id":"01JF…","parentId":"01JE…","timestamp":"2026-11-29T10:00:00.123Z","type":"user.message","turnId":"01JF…","data":{"text":"Where is order 1042?"}}
//
// Entries are only ever appended. An entry's type says what its data holds;
// the typed structs in this package (UserMessage, AssistantMessage, …) are the
// data of each known type. Unknown types are valid entries: they are kept and
// ignored by history.
//
// A user.message's data has its text and, when the client that sent it
// named the message (the AI SDK's useChat does), that name as clientId:
// the id the client knows it by, given back when the conversation is
// loaded. It is optional; a message without it is known by its entry id.
//
// # Trees in an append-only transcript
//
// Regenerating an answer, editing an earlier question and going back to a
// version made before never rewrite an entry. Each appends a session.branch
// entry (Branch) naming the turns that leave the active branch and, for a
// switch back, those that return to it; a regenerate or an edit is the
// first entry of the new turn that replaces the old one. The parentId chain
// stays one line: the tree is in the markers' data, not in the chain. A
// program that does not know session.branch sees every version one after
// the other, as it would in a transcript without markers.
//
// A session.title entry (SessionTitle) renames the session: list records
// carry the newest one as the title, in place of the beginning of the
// first user message.
//
// A session forked from another (session.fork, Fork) starts with an entry
// naming the source session and turn, followed by copies of the source's
// entries of the active branch up to that turn: the same ids, turn ids,
// timestamps and data, chained anew.
//
// # Compaction without loss
//
// A session that lasts for months outgrows what a model request can carry.
// A session.compaction entry (Compaction) records a summary of a run of
// turns, from its first to its last, and the history sends the summary in
// their place (history rule 10). Nothing is removed or rewritten: the
// covered turns stay in the transcript, every reader still shows them, and
// a newer compaction (a rolling summary) takes an older one's place by
// being newer. A program that does not know session.compaction ignores it
// and sends the turns themselves.
//
// # Decoding
//
// Parse and the Parser decode a line in one pass of their own for the
// shape writers write (AppendJSON's: the known fields once each, strings
// without escapes, a compact data object, a timestamp in UTC), and hand
// anything else to encoding/json, which decides: unknown fields ignored,
// keys matched case-insensitively, repeated keys, escapes and invalid
// UTF-8 as it reads them, data compacted with json.Compact. The result is always
// encoding/json's; fuzz tests hold the one-pass path to it line by line.
// A faster general decoder (github.com/go-json-experiment/json, segmentio,
// goccy, sonic) was weighed and left out: the one-pass path already
// handles every line spool writes, and each of those matches keys,
// duplicates or invalid UTF-8 differently by default, which would change
// what the slow path accepts.
//
// A store's read parses its entries with one Parser, which copies what
// they keep into blocks shared by the entries (a few dozen allocations for
// ten thousand entries, instead of five an entry) and shares the text of
// a parent id with the entry before.
package transcript
