// Package rules holds the parts of the store contract that are code, for
// the two packages that apply them: store, whose fallbacks search and
// prune any store through its four methods, and storekit, through which
// stores that search or prune natively keep the same rules. It knows
// nothing of store's types, so that both can import it.
package rules

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spool-go/spool/transcript"
)

// EntryText returns the text of e that search looks at: what the user
// wrote and what the assistant answered. Other entries have none.
func EntryText(e transcript.Entry) (string, bool) {
	if !HasText(e.Type) {
		return "", false
	}
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

// HasText reports whether entries of type t can have text that EntryText
// returns; it returns none for the others, whatever their data.
func HasText(t transcript.Type) bool {
	return t == transcript.TypeUserMessage || t == transcript.TypeAssistantMessage
}

// Terms splits a query into the lower-cased words an entry must all
// contain to match.
func Terms(query string) []string {
	return strings.FieldsFunc(strings.ToLower(query), unicode.IsSpace)
}

// Match reports whether text contains every term (from Terms), ignoring
// case, and returns a snippet around the first term's first occurrence.
func Match(text string, terms []string) (string, bool) {
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

// NewestFirst is the order of search hits: newest first, then entry id
// descending.
func NewestFirst(aTime time.Time, aID string, bTime time.Time, bID string) int {
	if c := bTime.Compare(aTime); c != 0 {
		return c
	}
	return strings.Compare(bID, aID)
}

// Top keeps the first Limit values in the order cmp, in a heap whose root
// is the last of them, so that a scan holds Limit values, not every match.
type Top[T any] struct {
	limit int
	cmp   func(a, b T) int
	h     []T
}

// NewTop returns a Top of the first limit values in the order cmp.
func NewTop[T any](limit int, cmp func(a, b T) int) *Top[T] {
	return &Top[T]{limit: limit, cmp: cmp}
}

// Add offers x.
func (t *Top[T]) Add(x T) {
	if len(t.h) < t.limit {
		t.h = append(t.h, x)
		t.up(len(t.h) - 1)
		return
	}
	if t.cmp(x, t.h[0]) >= 0 {
		return // after every value kept
	}
	t.h[0] = x
	t.down(0)
}

// worse reports whether value i comes after value j: the heap's root is
// the one that comes last.
func (t *Top[T]) worse(i, j int) bool { return t.cmp(t.h[i], t.h[j]) > 0 }

func (t *Top[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.worse(i, p) {
			return
		}
		t.h[i], t.h[p] = t.h[p], t.h[i]
		i = p
	}
}

func (t *Top[T]) down(i int) {
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

// Sorted returns the values kept, in order.
func (t *Top[T]) Sorted() []T {
	out := slices.Clone(t.h)
	slices.SortFunc(out, t.cmp)
	return out
}

// Expired reports whether a session last active at lastActivity is idle
// past maxAge as of now; a maxAge of zero or less never expires one.
func Expired(lastActivity time.Time, maxAge time.Duration, now time.Time) bool {
	return maxAge > 0 && now.Sub(lastActivity) > maxAge
}

// Victims walks a listing, newest activity first, one page at a time from
// next (an empty cursor for the first page; an empty next cursor ends
// it), and returns the sessions a retention of maxSessions (0: no limit)
// and maxAge does not keep as of now: the expired ones, and those beyond
// the newest maxSessions kept.
func Victims[T any](ctx context.Context, next func(ctx context.Context, cursor string) (page []T, nextCursor string, err error),
	lastActivity func(T) time.Time, maxSessions int, maxAge time.Duration, now time.Time) ([]T, error) {
	var victims []T
	kept := 0
	cursor := ""
	for {
		page, nextCursor, err := next(ctx, cursor)
		if err != nil {
			return nil, err
		}
		for _, s := range page {
			if Expired(lastActivity(s), maxAge, now) || (maxSessions > 0 && kept >= maxSessions) {
				victims = append(victims, s)
				continue
			}
			kept++
		}
		if nextCursor == "" {
			return victims, nil
		}
		cursor = nextCursor
	}
}

// ParseURL parses a store URL. Its error leaves the URL out (url.Parse
// quotes it), since a store URL may hold a password: it says only what is
// wrong with it. It leaves out the piece of the URL url.Parse quotes as
// well (invalid port ":…" after host, invalid URL escape "%…", invalid
// character "…" in host name): a password holding a '/', '?' or '#' ends
// the userinfo there, and what came before it is quoted as the port.
func ParseURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, unquoted(err)
	}
	return u, nil
}

// unquoted returns err without the text it quotes, err itself when it
// quotes nothing.
func unquoted(err error) error {
	msg := err.Error()
	i, j := strings.IndexByte(msg, '"'), strings.LastIndexByte(msg, '"')
	if i < 0 || j <= i {
		return err
	}
	return errors.New(strings.Join(strings.Fields(msg[:i]+msg[j+1:]), " "))
}
