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
package transcript
