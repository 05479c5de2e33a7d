package benchdata

import (
	"fmt"
	"iter"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// Version numbers the generated data: it changes whenever the entries any
// seed makes do, so that a cache of a loaded data set that names it is
// never reused for other data.
const Version = 1

// Base is the time of the first entry of every set.
var Base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Sizes of the measures.
const (
	TailN     = 50     // entries a tail read asks for
	PageSize  = 50     // sessions a list page asks for
	Limit     = 50     // hits a search asks for
	MarkEvery = 10_007 // every MarkEvery-th entry of Search carries Marker
)

// A Set is one shape of the data set: Sessions sessions of PerSession
// entries each, in one namespace. Its entries depend only on the set and the
// session, so a loader may generate sessions in any order.
type Set struct {
	Name       string
	Namespace  store.Namespace
	Sessions   int
	PerSession int

	seed        uint64
	interleaved bool                     // sessions interleave in time (see All)
	id          func(j int) string       // the id of session j
	at          func(j, i int) time.Time // the time of entry i of session j
	marked      func(j, i int) bool      // whether entry i of session j carries Marker
}

// The sets, each in a namespace of its own so that one store can hold them all.
var (
	// Search: 1,000 sessions of 1,000 entries. Entry i of session j is at
	// Base + (i*1000 + j) ms, so sessions interleave in time, and carries
	// Marker when i*1000 + j is a multiple of MarkEvery.
	Search = Set{Name: "search", Namespace: store.Namespace{Agent: "search"}, Sessions: 1000, PerSession: 1000, seed: 1, interleaved: true,
		id:     numbered,
		at:     func(j, i int) time.Time { return Base.Add(time.Duration(i*1000+j) * time.Millisecond) },
		marked: func(j, i int) bool { return (i*1000+j)%MarkEvery == 0 },
	}
	// TailLong: one session, "long", of 100,000 entries a millisecond apart.
	TailLong = Set{Name: "tail-long", Namespace: store.Namespace{Agent: "tail"}, Sessions: 1, PerSession: 100_000, seed: 2,
		id: func(int) string { return "long" }, at: sequential, marked: never}
	// TailShort: one session, "short", of 1,000 entries.
	TailShort = Set{Name: "tail-short", Namespace: store.Namespace{Agent: "tail"}, Sessions: 1, PerSession: 1000, seed: 3,
		id: func(int) string { return "short" }, at: sequential, marked: never}
	// List: 10,000 sessions of 2 entries; session j starts at Base + j s.
	List = Set{Name: "list", Namespace: store.Namespace{Agent: "list"}, Sessions: 10_000, PerSession: 2, seed: 4,
		id: numbered,
		at: func(j, i int) time.Time {
			return Base.Add(time.Duration(j)*time.Second + time.Duration(i)*time.Millisecond)
		},
		marked: never,
	}
)

func numbered(j int) string         { return fmt.Sprintf("s%d", j) }
func sequential(_, i int) time.Time { return Base.Add(time.Duration(i) * time.Millisecond) }
func never(_, _ int) bool           { return false }

// Key returns the key of session j, 0 <= j < s.Sessions.
func (s Set) Key(j int) store.Key { return s.Namespace.Key(s.id(j)) }

// Keys returns the keys of every session, in order.
func (s Set) Keys() []store.Key {
	keys := make([]store.Key, s.Sessions)
	for j := range keys {
		keys[j] = s.Key(j)
	}
	return keys
}

// Total is the number of entries in the set.
func (s Set) Total() int { return s.Sessions * s.PerSession }

// Entries returns the entries of session j, in order.
func (s Set) Entries(j int) []transcript.Entry {
	g := s.gen(j)
	out := make([]transcript.Entry, s.PerSession)
	for i := range out {
		out[i] = g.Next(s.at(j, i), s.marked(j, i))
	}
	return out
}

// gen returns the generator of session j.
func (s Set) gen(j int) *Gen { return newGen(s.seed, uint64(j)) }

// All yields every entry of the set with the index of its session, in the
// order of their timestamps, as appends would arrive: position by
// position across the sessions of Search, whose sessions interleave, and
// session by session in the others. Either way, session j receives
// exactly Entries(j). A loader whose storage layout follows insertion
// order (a table's heap, a B-tree of time-ordered keys) uses All, so the
// layout is the one appends would leave.
func (s Set) All() iter.Seq2[int, transcript.Entry] {
	return func(yield func(int, transcript.Entry) bool) {
		if !s.interleaved {
			for j := range s.Sessions {
				for _, e := range s.Entries(j) {
					if !yield(j, e) {
						return
					}
				}
			}
			return
		}
		gens := make([]*Gen, s.Sessions)
		for j := range gens {
			gens[j] = s.gen(j)
		}
		for i := range s.PerSession {
			for j, g := range gens {
				if !yield(j, g.Next(s.at(j, i), s.marked(j, i))) {
					return
				}
			}
		}
	}
}

// Query is one search of the search set, with the number of hits every
// store must return for it.
type Query struct {
	Name    string
	Text    string
	Session string // only this session of Search, when set
	Hits    int
}

// SearchQuery returns q as a store.SearchQuery with the benchmarks' limit.
func (q Query) SearchQuery() store.SearchQuery {
	return store.SearchQuery{Text: q.Text, Session: q.Session, Limit: Limit}
}

// Queries are the searches of the search set.
var Queries = []Query{
	{Name: "rare", Text: Marker, Hits: Limit},                        // 100 entries match
	{Name: "common", Text: "order", Hits: Limit},                     // about 1 entry in 4
	{Name: "two-words", Text: "refund invoice", Hits: Limit},         // both words
	{Name: "no-match", Text: "qwertyuiop", Hits: 0},                  // proves absence
	{Name: "one-session-rare", Text: Marker, Session: "s0", Hits: 1}, // entry 0 of s0
	{Name: "one-session-common", Text: "order", Session: "s0", Hits: Limit},
	{Name: "short-word", Text: "ok", Hits: Limit}, // under a trigram
}
