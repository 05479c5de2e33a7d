package storekit

import (
	"slices"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/internal/rules"
	"github.com/spool-go/spool/transcript"
)

// The rules of text search (store.Searcher, store.Search), for stores that
// search natively: they must find what the fallback scan finds.

// SearchText returns the text of e that search looks at: what the user
// wrote and what the assistant answered. Other entries have none.
func SearchText(e transcript.Entry) (string, bool) { return rules.EntryText(e) }

// SearchableType reports whether entries of type t can have text that
// SearchText returns, from the type alone: a store that indexes text can
// tell which entries to index without decoding their data.
func SearchableType(t transcript.Type) bool { return rules.HasText(t) }

// SearchTerms splits a query into the lower-cased words an entry must all
// contain to match.
func SearchTerms(query string) []string { return rules.Terms(query) }

// MatchText reports whether text contains every term (from SearchTerms),
// ignoring case, and returns a snippet around the first term's first
// occurrence.
func MatchText(text string, terms []string) (string, bool) { return rules.Match(text, terms) }

// Snippet returns about width runes of text on each side of byte offset at,
// on one line, with "…" where it was cut.
func Snippet(text string, at, width int) string { return rules.Snippet(text, at, width) }

// SortHits orders hits as store.Search returns them: newest first, then by
// entry id descending.
func SortHits(h []store.SearchHit) {
	slices.SortFunc(h, func(a, b store.SearchHit) int { return rules.NewestFirst(a.Time, a.EntryID, b.Time, b.EntryID) })
}
