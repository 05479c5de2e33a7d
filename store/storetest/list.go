package storetest

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

var listChecks = []check{
	{"List/NewestActivityFirst", testListOrder},
	{"List/PageSize", testPageSize},
	{"List/Paging", testPaging},
	{"List/Paging/WhileAppending", testPagingWhileAppending},
	{"List/InvalidCursor", testInvalidCursor},
	{"List/EmptyNamespace", testListEmpty},
}

// manySessions creates n one-entry sessions in the namespace, three to a timestamp
// (so that the order between them falls to the session id), and returns
// their infos in listing order.
func manySessions(t *testing.T, s store.Store, ns store.Namespace, n int) []store.SessionInfo {
	t.Helper()
	start := base()
	want := make([]store.SessionInfo, 0, n)
	for i := range n {
		key := ns.Key(name("sess"))
		entries := Chain("", start.Add(-time.Duration(i/3)*time.Second), 1)
		appendAll(t, s, key, entries...)
		want = append(want, storekit.Info(key, entries))
	}
	storekit.SortSessions(want)
	return want
}

// checkOrder fails t unless got is want, session for session.
func checkOrder(t *testing.T, got, want []store.SessionInfo, rule string) {
	t.Helper()
	if !slices.Equal(infoIDs(got), infoIDs(want)) {
		t.Errorf("%s:\n got  %v\n want %v", rule, infoIDs(got), infoIDs(want))
		return
	}
	for i := range got {
		if d := diffInfo(got[i], want[i]); d != "" {
			t.Errorf("%s: session %s: %s", rule, got[i].ID, d)
		}
	}
}

func testListOrder(t *testing.T, s store.Store) {
	ns := newNamespace()
	start := base()
	var want []store.SessionInfo
	// Sessions whose activity order differs from their creation order: the
	// oldest session gets the newest entry.
	for i := range 6 {
		key := ns.Key(name("sess"))
		entries := Chain("", start.Add(time.Duration(i)*time.Second), 2)
		if i == 0 {
			entries = append(entries, Chain(Head(entries), start.Add(time.Minute), 1)...)
		}
		appendAll(t, s, key, entries...)
		want = append(want, storekit.Info(key, entries))
	}
	// Two sessions with the same last activity: the higher id comes first.
	for range 2 {
		key := ns.Key(name("tie"))
		entries := Chain("", start.Add(30*time.Second), 1)
		appendAll(t, s, key, entries...)
		want = append(want, storekit.Info(key, entries))
	}
	// Another namespace's sessions never appear.
	seed(t, s, store.Namespace{Agent: ns.Agent, Owner: name("owner")}.Key(name("user")), start.Add(time.Hour), 1)
	seed(t, s, newNamespace().Key(name("agent2")), start.Add(time.Hour), 1)
	storekit.SortSessions(want)
	page, err := s.List(t.Context(), ns, store.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	checkOrder(t, page.Sessions, want, "List must order sessions by last activity, newest first, then by id, highest first (storekit.Less), with the info of each (storekit.Info)")
	if page.NextCursor != "" {
		t.Errorf("List of %d sessions with the default page size must return them all with an empty NextCursor; got cursor %q", len(want), page.NextCursor)
	}
}

func testPageSize(t *testing.T, s store.Store) {
	ns := newNamespace()
	want := manySessions(t, s, ns, store.DefaultListLimit+5)
	for _, limit := range []int{0, -1} {
		page, err := s.List(t.Context(), ns, store.ListOptions{Limit: limit})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		checkOrder(t, page.Sessions, want[:store.DefaultListLimit], "List with Limit 0 or less returns the first store.DefaultListLimit sessions")
		if page.NextCursor == "" {
			t.Errorf("List with Limit %d returned %d of %d sessions and no NextCursor", limit, len(page.Sessions), len(want))
		}
	}
	for _, limit := range []int{1, 7, len(want)} {
		page, err := s.List(t.Context(), ns, store.ListOptions{Limit: limit})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		checkOrder(t, page.Sessions, want[:limit], "List returns exactly Limit sessions when the namespace has more")
	}
	page, err := s.List(t.Context(), ns, store.ListOptions{Limit: len(want) + 1})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	checkOrder(t, page.Sessions, want, "List with a Limit above the number of sessions returns them all")
	if page.NextCursor != "" {
		t.Errorf("List returned every session on one page but also a NextCursor %q: the last page has none", page.NextCursor)
	}
}

func testPaging(t *testing.T, s store.Store) {
	ns := newNamespace()
	want := manySessions(t, s, ns, 120)
	for _, limit := range []int{40, 7, 120, 1000} {
		got := listAll(t, s, ns, limit)
		checkOrder(t, got, want, "walking every page of a listing must give every session exactly once, in order (pages never overlap or skip)")
	}
	// The cursor of a page is the same whether the walk began there or not.
	first, err := s.List(t.Context(), ns, store.ListOptions{Limit: 40})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		again, err := s.List(t.Context(), ns, store.ListOptions{Limit: 40, Cursor: first.NextCursor})
		if err != nil {
			t.Fatalf("List with a cursor used a second time: %v", err)
		}
		checkOrder(t, again.Sessions, want[40:80], "a cursor used again gives the same page")
	}
}

// testPagingWhileAppending walks a listing while sessions get new entries,
// both between pages and from another goroutine during the walk. A session
// written to may be missed (its new activity moves it ahead of the cursor);
// no session may appear twice, and every other session exactly once.
func testPagingWhileAppending(t *testing.T, s store.Store) {
	ns := newNamespace()
	const n = 120
	want := manySessions(t, s, ns, n)
	heads := map[string]string{}
	for _, info := range want {
		entries := read(t, s, info.Key())
		heads[info.ID] = Head(entries)
	}
	var (
		mu      sync.Mutex
		touched = map[string]bool{}
		clock   = base().Add(time.Hour)
	)
	// touch appends to session id with a newer timestamp than any before.
	touch := func(id string) error {
		mu.Lock()
		touched[id] = true
		clock = clock.Add(time.Millisecond)
		at := clock
		mu.Unlock()
		e := NewEntry(heads[id], at, transcript.TypeUserMessage, transcript.UserMessage{Text: "more"})
		if err := s.Append(t.Context(), ns.Key(id), e); err != nil {
			return err
		}
		heads[id] = e.ID
		return nil
	}
	// The goroutine writes the sessions at even positions of the original
	// order, the walk those at odd positions, so they never race on one.
	var even, odd []string
	for i, info := range want {
		if i%2 == 0 {
			even = append(even, info.ID)
		} else {
			odd = append(odd, info.ID)
		}
	}
	evenHeads := map[string]string{}
	for _, id := range even {
		evenHeads[id] = heads[id]
		delete(heads, id)
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if i >= 400 {
				<-stop
				done <- nil
				return
			}
			id := even[rng.IntN(len(even))]
			mu.Lock()
			touched[id] = true
			clock = clock.Add(time.Millisecond)
			at := clock
			mu.Unlock()
			e := NewEntry(evenHeads[id], at, transcript.TypeUserMessage, transcript.UserMessage{Text: "concurrent"})
			if err := s.Append(t.Context(), ns.Key(id), e); err != nil {
				done <- err
				return
			}
			evenHeads[id] = e.ID
			// New sessions appear during the walk too.
			if i%10 == 0 {
				key := ns.Key(name("new"))
				if err := s.Append(t.Context(), key, NewEntry("", at, transcript.TypeUserMessage, transcript.UserMessage{Text: "new"})); err != nil {
					done <- err
					return
				}
			}
		}
	}()
	rng := rand.New(rand.NewPCG(3, 4))
	seen := map[string]int{}
	opt := store.ListOptions{Limit: 10}
	var walkErr error
	for pages := 0; pages < 1000; pages++ {
		page, err := s.List(t.Context(), ns, opt)
		if err != nil {
			walkErr = err
			break
		}
		if !slices.IsSortedFunc(page.Sessions, func(a, b store.SessionInfo) int {
			if storekit.Less(a, b) {
				return -1
			}
			return 1
		}) {
			t.Errorf("while appending: page %d is not in listing order (storekit.Less): %v", pages+1, infoIDs(page.Sessions))
		}
		for _, info := range page.Sessions {
			seen[info.ID]++
		}
		if page.NextCursor == "" {
			break
		}
		opt.Cursor = page.NextCursor
		// Between pages, move two sessions to the front: one already
		// listed and one not yet.
		for range 2 {
			id := odd[rng.IntN(len(odd))]
			if err := touch(id); err != nil {
				t.Errorf("Append between pages: %v", err)
			}
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Errorf("Append during the walk: %v", err)
	}
	if walkErr != nil {
		t.Fatalf("List during appends: %v", walkErr)
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("while appending: session %s appeared on %d pages of one walk; pages must never overlap, even when sessions move", id, n)
		}
	}
	for _, info := range want {
		if !touched[info.ID] && seen[info.ID] != 1 {
			t.Errorf("while appending: session %s, not written to during the walk, appeared %d times, want exactly once (pages must never skip)", info.ID, seen[info.ID])
		}
	}
}

func testInvalidCursor(t *testing.T, s store.Store) {
	ns := newNamespace()
	manySessions(t, s, ns, 5)
	page, err := s.List(t.Context(), ns, store.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if page.NextCursor == "" {
		t.Fatalf("List of 5 sessions with Limit 2 returned no NextCursor")
	}
	owner := store.Namespace{Agent: ns.Agent, Owner: name("owner")}
	other := store.Namespace{Agent: name("agent"), Owner: owner.Owner}
	manySessions(t, s, owner, 5)
	manySessions(t, s, other, 5)
	ownerPage, err := s.List(t.Context(), owner, store.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	otherPage, err := s.List(t.Context(), other, store.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := page.NextCursor
	cases := []struct {
		what   string
		ns     store.Namespace
		cursor string
	}{
		{"a made-up cursor", ns, "not-a-cursor"},
		{"a cursor of base64 garbage", ns, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
		{"a truncated cursor", ns, c[:len(c)/2]},
		{"a cursor missing its last characters", ns, c[:len(c)-2]},
		{"a cursor with a character changed", ns, flip(c)},
		{"the project scope's cursor used for a user's listing", owner, c},
		{"a user's cursor used for the project scope", ns, ownerPage.NextCursor},
		{"another agent's cursor", owner, otherPage.NextCursor},
	}
	for _, tc := range cases {
		if tc.cursor == c && tc.ns == ns {
			t.Fatalf("bad test case %q", tc.what)
		}
		_, err := s.List(t.Context(), tc.ns, store.ListOptions{Limit: 2, Cursor: tc.cursor})
		if !errors.Is(err, store.ErrInvalidCursor) {
			t.Errorf("List with %s (%q) must fail with ErrInvalidCursor (errors.Is); got %v", tc.what, tc.cursor, err)
		}
	}
}

// flip changes one character in the middle of c to another valid base64
// character.
func flip(c string) string {
	b := []byte(c)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

func testListEmpty(t *testing.T, s store.Store) {
	for _, ns := range []store.Namespace{newNamespace(), {Agent: name("agent"), Owner: name("owner")}} {
		page, err := s.List(t.Context(), ns, store.ListOptions{})
		if err != nil || len(page.Sessions) != 0 || page.NextCursor != "" {
			t.Errorf("List of a namespace without sessions (%s) must return no sessions, no cursor, no error; got %d sessions, cursor %q, error %v",
				ns, len(page.Sessions), page.NextCursor, err)
		}
	}
}
