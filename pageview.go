package spool

import (
	"container/list"
	"context"
	"sync"

	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// pageView is what the markers of a part of a session's transcript say:
// those at positions from to to (exclusive), the end of the transcript
// when it was read, whose last entry was head. A page needs the markers
// after it (which turns are on the active branch, and their versions), and
// the agent keeps them from page to page, so that paging back through a
// long session reads each entry once.
type pageView struct {
	marks    *history.Branches
	from, to int
	head     string
}

// pageViews keeps the pageViews of the sessions paged most recently.
type pageViews struct {
	mu    sync.Mutex
	views map[store.Key]*list.Element // of viewEntry
	lru   *list.List                  // least recently used at the front
	max   int
}

type viewEntry struct {
	key  store.Key
	view pageView
}

func newPageViews(max int) *pageViews {
	return &pageViews{views: map[store.Key]*list.Element{}, lru: list.New(), max: max}
}

// get returns a copy of k's view, which the caller may add to.
func (v *pageViews) get(k store.Key) (pageView, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	el, ok := v.views[k]
	if !ok {
		return pageView{}, false
	}
	v.lru.MoveToBack(el)
	pv := el.Value.(*viewEntry).view
	pv.marks = pv.marks.Markers()
	return pv, true
}

// put keeps pv as k's view.
func (v *pageViews) put(k store.Key, pv pageView) {
	pv.marks = pv.marks.Markers()
	v.mu.Lock()
	defer v.mu.Unlock()
	if el, ok := v.views[k]; ok {
		el.Value.(*viewEntry).view = pv
		v.lru.MoveToBack(el)
		return
	}
	v.views[k] = v.lru.PushBack(&viewEntry{key: k, view: pv})
	for v.lru.Len() > v.max {
		old := v.lru.Remove(v.lru.Front()).(*viewEntry)
		delete(v.views, old.key)
	}
}

// drop forgets k's view (the session was deleted).
func (v *pageViews) drop(k store.Key) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if el, ok := v.views[k]; ok {
		v.lru.Remove(el)
		delete(v.views, k)
	}
}

// markers returns the view of the session's markers from position from to
// the end (total entries): the agent's, brought up to date with what was
// appended since and extended back to from, or read afresh when the
// transcript is no longer the one it saw.
func (s *Session) markers(ctx context.Context, from, total int) (pageView, error) {
	st := s.a.cfg.Store
	v, ok := s.a.views.get(s.key)
	if ok && v.to > 0 && v.to <= total {
		newer, _, err := store.ReadRange(ctx, st, s.key, v.to-1, total)
		if err != nil {
			return pageView{}, err
		}
		if len(newer) > 0 && newer[0].ID == v.head {
			addMarkers(v.marks, v.to, newer[1:])
			v.to += len(newer) - 1
			v.head = newer[len(newer)-1].ID
		} else {
			ok = false
		}
	} else {
		ok = false
	}
	if !ok || v.to != total {
		v = pageView{marks: &history.Branches{}, from: total, to: total}
	}
	if from < v.from {
		older, _, err := store.ReadRange(ctx, st, s.key, from, v.from)
		if err != nil {
			return pageView{}, err
		}
		addMarkers(v.marks, from, older)
		if v.head == "" && len(older) > 0 && from+len(older) == v.to {
			v.head = older[len(older)-1].ID
		}
		v.from = from
	}
	return v, nil
}

// addMarkers gives br the markers of entries, which start at position pos.
func addMarkers(br *history.Branches, pos int, entries []transcript.Entry) {
	for i, e := range entries {
		if e.Type == transcript.TypeBranch {
			br.Add(pos+i, e)
		}
	}
}

// peekBack gives br the markers of turn turnID's entries just before
// position from, reading back while the entries are the turn's (a new
// version's own marker comes right before its question), and returns the
// position it read back to.
func (s *Session) peekBack(ctx context.Context, br *history.Branches, from int, turnID string) (int, error) {
	for from > 0 {
		entries, _, err := store.ReadRange(ctx, s.a.cfg.Store, s.key, from-8, from)
		if err != nil || len(entries) == 0 {
			return from, err
		}
		start := from - len(entries)
		for i := len(entries) - 1; i >= 0; i-- {
			if entries[i].TurnID != turnID {
				return start + i + 1, nil
			}
			if entries[i].Type == transcript.TypeBranch {
				br.Add(start+i, entries[i])
			}
		}
		from = start
	}
	return from, nil
}
