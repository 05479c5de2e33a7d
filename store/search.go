package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/spool-go/spool/store/internal/rules"
)

// Search finds entries of ns whose text (what the user wrote and what the
// assistant answered) contains every word of q, ignoring case, newest
// first, with s's Searcher when it has one and otherwise by scanning
// transcripts: every session of ns, or only q.Session. The scan reads each
// transcript once and holds one at a time, and at most q.Limit hits.
func Search(ctx context.Context, s Store, ns Namespace, q SearchQuery) ([]SearchHit, error) {
	if err := ValidateNamespace(ns); err != nil {
		return nil, err
	}
	if q.Session != "" {
		if err := ValidateKey(ns.Key(q.Session)); err != nil {
			return nil, err
		}
	}
	terms := rules.Terms(q.Text)
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
	hits := rules.NewTop(limit, hitOrder)
	scan := func(id string) error {
		entries, err := s.Read(ctx, ns.Key(id))
		if err != nil {
			return err
		}
		for _, e := range entries {
			text, ok := rules.EntryText(e)
			if !ok {
				continue
			}
			if snip, ok := rules.Match(text, terms); ok {
				hits.Add(SearchHit{SessionID: id, EntryID: e.ID, Snippet: snip, Time: e.Timestamp})
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
					return nil, fmt.Errorf("store: search: %w", err)
				}
			}
			if page.NextCursor == "" {
				break
			}
			opt.Cursor = page.NextCursor
		}
	}
	return hits.Sorted(), nil
}

// hitOrder is the order of search hits: newest first, then entry id
// descending.
func hitOrder(a, b SearchHit) int { return rules.NewestFirst(a.Time, a.EntryID, b.Time, b.EntryID) }
