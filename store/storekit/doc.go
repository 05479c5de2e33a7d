// Package storekit is the kit of the people who write a store: what
// package store's contract asks of a store, as code a store calls. It is
// to package store what database/sql/driver's helpers are to database/sql:
// callers of a store never need it, and store's documentation is theirs.
//
// A store parses its URL with ParseURL, and checks each entry with
// CheckAppend (or CheckEntry, which also encodes it, and CheckParent)
// before it appends it: the same entries are valid in every store, and
// store.ErrConflict comes from the same rule. It may check what it reads
// with CheckChain. It lists in the
// order Less defines, pages with the cursors EncodeListCursor hands out and
// DecodeListCursor takes back, enforces retention with Victims and
// Expired, searches by the rules of SearchText, SearchTerms, MatchText and
// SortHits, and keeps its timestamps within MinTimestamp and
// MaxTimestamp. A store whose data lives in one process locks sessions
// with LocalLocks.
//
// Package storetest checks all of it for any store.
package storekit
