package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spool-go/spool/transcript"
)

// SearchText returns the text of e that search looks at: what the user
// wrote and what the assistant answered. Other entries have none.
func SearchText(e transcript.Entry) (string, bool) {
	switch e.Type {
	case transcript.TypeUserMessage:
		var m transcript.UserMessage
		if e.DecodeData(&m) == nil && m.Text != "" {
			return m.Text, true
		}
	case transcript.TypeAssistantMessage:
		var m transcript.AssistantMessage
		if e.DecodeData(&m) == nil && m.Text != "" {
			return m.Text, true
		}
	}
	return "", false
}

// SearchTerms splits a query into the lower-cased words an entry must all
// contain to match.
func SearchTerms(query string) []string {
	return strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return unicode.IsSpace(r)
	})
}

// MatchText reports whether text contains every term (from SearchTerms),
// ignoring case, and returns a snippet around the first term's first
// occurrence.
func MatchText(text string, terms []string) (string, bool) {
	if len(terms) == 0 {
		return "", false
	}
	lower := strings.ToLower(text)
	first := -1
	for _, t := range terms {
		i := strings.Index(lower, t)
		if i < 0 {
			return "", false
		}
		if first < 0 {
			first = i
		}
	}
	// lower and text have the same byte offsets only when lowering kept
	// every rune's width; otherwise snip from the lowered text.
	src := text
	if len(lower) != len(text) {
		src = lower
	}
	return Snippet(src, first, 40), true
}

// Snippet returns about width runes of text on each side of byte offset at,
// on one line, with "…" where it was cut.
func Snippet(text string, at, width int) string {
	start := at
	for n := 0; start > 0 && n < width; n++ {
		_, size := utf8.DecodeLastRuneInString(text[:start])
		start -= size
	}
	end := at
	for n := 0; end < len(text) && n < 2*width; n++ {
		_, size := utf8.DecodeRuneInString(text[end:])
		end += size
	}
	s := strings.Join(strings.Fields(text[start:end]), " ")
	if start > 0 {
		s = "…" + s
	}
	if end < len(text) {
		s += "…"
	}
	return s
}

// Search finds entries of ns whose text (SearchText) contains every word
// of q, newest first, with s's Searcher when it has one and otherwise by
// scanning transcripts: every session of the namespace, or only q.Session. The
// scan reads each transcript once and holds one at a time, and at most
// q.Limit hits.
func Search(ctx context.Context, s Store, ns Namespace, q SearchQuery) ([]SearchHit, error) {
	if err := ValidateNamespace(ns); err != nil {
		return nil, err
	}
	if q.Session != "" {
		if err := ValidateKey(ns.Key(q.Session)); err != nil {
			return nil, err
		}
	}
	terms := SearchTerms(q.Text)
	if len(terms) == 0 {
		return nil, errors.New("store: empty search query")
	}
	if sr, ok := s.(Searcher); ok {
		return sr.Search(ctx, ns, q)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	hits := newTopHits(limit)
	scan := func(id string) error {
		entries, err := s.Read(ctx, ns.Key(id))
		if err != nil {
			return err
		}
		for _, e := range entries {
			text, ok := SearchText(e)
			if !ok {
				continue
			}
			if snip, ok := MatchText(text, terms); ok {
				hits.add(SearchHit{SessionID: id, EntryID: e.ID, Snippet: snip, Time: e.Timestamp})
			}
		}
		return nil
	}
	if q.Session != "" {
		if err := scan(q.Session); err != nil {
			return nil, err
		}
	} else {
		opt := ListOptions{Limit: MaxListLimit}
		for {
			page, err := s.List(ctx, ns, opt)
			if err != nil {
				return nil, err
			}
			for _, info := range page.Sessions {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if err := scan(info.ID); err != nil {
					return nil, fmt.Errorf("search: %w", err)
				}
			}
			if page.NextCursor == "" {
				break
			}
			opt.Cursor = page.NextCursor
		}
	}
	return hits.sorted(), nil
}

// hitOrder is SortHits' order: newest first, then entry id descending.
func hitOrder(a, b SearchHit) int {
	if c := b.Time.Compare(a.Time); c != 0 {
		return c
	}
	return strings.Compare(b.EntryID, a.EntryID)
}

// topHits keeps the first limit hits in hitOrder, in a heap whose root is
// the last of them, so a scan holds limit hits, not every match.
type topHits struct {
	limit int
	h     []SearchHit
}

func newTopHits(limit int) *topHits { return &topHits{limit: limit} }

func (t *topHits) add(x SearchHit) {
	if len(t.h) < t.limit {
		t.h = append(t.h, x)
		t.up(len(t.h) - 1)
		return
	}
	if hitOrder(x, t.h[0]) >= 0 {
		return // after every hit kept
	}
	t.h[0] = x
	t.down(0)
}

// worse reports whether hit i comes after hit j: the heap's root is the
// one that comes last.
func (t *topHits) worse(i, j int) bool { return hitOrder(t.h[i], t.h[j]) > 0 }

func (t *topHits) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.worse(i, p) {
			return
		}
		t.h[i], t.h[p] = t.h[p], t.h[i]
		i = p
	}
}

func (t *topHits) down(i int) {
	for {
		w := i
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < len(t.h) && t.worse(c, w) {
				w = c
			}
		}
		if w == i {
			return
		}
		t.h[i], t.h[w] = t.h[w], t.h[i]
		i = w
	}
}

func (t *topHits) sorted() []SearchHit {
	out := slices.Clone(t.h)
	SortHits(out)
	return out
}

// SortHits orders hits newest first, then by entry id descending.
func SortHits(h []SearchHit) { slices.SortFunc(h, hitOrder) }
