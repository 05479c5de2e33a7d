package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// basic has the four required methods and nothing else, so the package
// functions must fall back to them. It counts calls to Read.
type basic struct {
	s     *memstore.Store
	reads int
}

func (b *basic) Append(ctx context.Context, k store.Key, e transcript.Entry) error {
	return b.s.Append(ctx, k, e)
}
func (b *basic) Read(ctx context.Context, k store.Key) ([]transcript.Entry, error) {
	b.reads++
	return b.s.Read(ctx, k)
}
func (b *basic) List(ctx context.Context, sc store.Namespace, o store.ListOptions) (store.SessionPage, error) {
	return b.s.List(ctx, sc, o)
}
func (b *basic) Delete(ctx context.Context, k store.Key) error { return b.s.Delete(ctx, k) }

// rangeStat has RangeReader and Stater but no TailReader: ReadTail's
// middle path.
type rangeStat struct {
	*basic
}

func (r rangeStat) ReadRange(ctx context.Context, k store.Key, start, end int) ([]transcript.Entry, int, error) {
	return r.s.ReadRange(ctx, k, start, end)
}
func (r rangeStat) Stat(ctx context.Context, k store.Key) (store.SessionInfo, error) {
	return r.s.Stat(ctx, k)
}

// fill appends a session of n chained user messages "m0", "m1", … a second
// apart from at.
func fill(t *testing.T, s store.Store, key store.Key, at time.Time, n int) []transcript.Entry {
	t.Helper()
	var es []transcript.Entry
	parent := ""
	for i := range n {
		e := storetest.NewEntry(parent, at.Add(time.Duration(i)*time.Second), transcript.TypeUserMessage, transcript.UserMessage{Text: fmt.Sprintf("m%d", i)})
		if err := s.Append(t.Context(), key, e); err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
		parent = e.ID
	}
	return es
}

func entryIDs(es []transcript.Entry) []string {
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	return ids
}

func TestReadRangeAndTailFallbacks(t *testing.T) {
	b := &basic{s: memstore.New()}
	key := store.Key{Agent: "a", ID: "s"}
	all := fill(t, b, key, time.Now(), 5)
	stores := map[string]store.Store{"required methods only": b, "RangeReader and Stater": rangeStat{b}, "every capability": b.s}
	for name, s := range stores {
		for start := -1; start <= 6; start++ {
			for end := -1; end <= 6; end++ {
				got, total, err := store.ReadRange(t.Context(), s, key, start, end)
				lo, hi := min(max(start, 0), 5), min(max(end, start, 0), 5)
				if err != nil || total != 5 || !slices.Equal(entryIDs(got), entryIDs(all[lo:hi])) {
					t.Errorf("%s: ReadRange(%d, %d) = %v, %d, %v; want %v, 5", name, start, end, entryIDs(got), total, err, entryIDs(all[lo:hi]))
				}
			}
		}
		for n := -1; n <= 6; n++ {
			got, total, err := store.ReadTail(t.Context(), s, key, n)
			lo := 5 - min(max(n, 0), 5)
			if err != nil || total != 5 || !slices.Equal(entryIDs(got), entryIDs(all[lo:])) {
				t.Errorf("%s: ReadTail(%d) = %v, %d, %v; want %v, 5", name, n, entryIDs(got), total, err, entryIDs(all[lo:]))
			}
		}
		got, total, err := store.ReadTail(t.Context(), s, store.Key{Agent: "a", ID: "unknown"}, 3)
		if err != nil || total != 0 || len(got) != 0 {
			t.Errorf("%s: ReadTail of an unknown session = %d entries, %d, %v", name, len(got), total, err)
		}
	}
	// The fallback's slice must not let an append of the caller's reach
	// past the range into the rest of the transcript.
	part, _, _ := store.ReadRange(t.Context(), b, key, 0, 2)
	_ = append(part, transcript.Entry{ID: "overwrite"})
	if again, _ := b.Read(t.Context(), key); again[2].ID != all[2].ID {
		t.Error("appending to a ReadRange result changed the transcript")
	}
	before := b.reads
	store.ReadTail(t.Context(), rangeStat{b}, key, 2)
	if b.reads != before {
		t.Error("ReadTail read the whole transcript though the store has RangeReader and Stater")
	}
}

func TestStatFallback(t *testing.T) {
	b := &basic{s: memstore.New()}
	key := store.Key{Agent: "a", Owner: "o", ID: "s"}
	all := fill(t, b, key, time.Now(), 3)
	info, err := store.Stat(t.Context(), b, key)
	if err != nil || info != storekit.Info(key, all) {
		t.Errorf("Stat = %+v, %v; want %+v", info, err, storekit.Info(key, all))
	}
	if _, err := store.Stat(t.Context(), b, store.Key{Agent: "a", ID: "s"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Stat of an unknown session = %v, want ErrNotFound", err)
	}
	if _, err := store.Stat(t.Context(), b, store.Key{Agent: "a", ID: "../s"}); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Stat of an invalid key = %v, want ErrInvalidKey", err)
	}
}

func TestPruneFallback(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	tests := []struct {
		r    store.Retention
		kept []string // newest first
	}{
		{store.Retention{}, []string{"s0", "s1", "s2", "s3", "s4", "s5"}},
		{store.Retention{MaxSessions: 2}, []string{"s0", "s1"}},
		{store.Retention{MaxAge: 3*day + day/2}, []string{"s0", "s1", "s2", "s3"}},
		{store.Retention{MaxSessions: 3, MaxAge: 1*day + day/2}, []string{"s0", "s1"}},
		{store.Retention{MaxSessions: 100, MaxAge: 100 * day}, []string{"s0", "s1", "s2", "s3", "s4", "s5"}},
	}
	for _, tt := range tests {
		b := &basic{s: memstore.New()}
		ns := store.Namespace{Agent: "a", Owner: "o"}
		other := store.Namespace{Agent: "a"}
		for i := range 6 {
			fill(t, b, ns.Key(fmt.Sprintf("s%d", i)), now.Add(-time.Duration(i)*day), 1)
			fill(t, b, other.Key(fmt.Sprintf("s%d", i)), now.Add(-time.Duration(i)*day), 1)
		}
		n, err := store.Prune(t.Context(), b, ns, tt.r, now)
		if err != nil || n != 6-len(tt.kept) {
			t.Errorf("Prune(%+v) = %d, %v; want %d", tt.r, n, err, 6-len(tt.kept))
		}
		page, _ := b.List(t.Context(), ns, store.ListOptions{})
		var got []string
		for _, info := range page.Sessions {
			got = append(got, info.ID)
		}
		if !slices.Equal(got, tt.kept) {
			t.Errorf("after Prune(%+v): %v, want %v", tt.r, got, tt.kept)
		}
		if page, _ := b.List(t.Context(), other, store.ListOptions{}); len(page.Sessions) != 6 {
			t.Errorf("Prune(%+v) of %s touched %s", tt.r, ns, other)
		}
	}
	if _, err := store.Prune(t.Context(), &basic{s: memstore.New()}, store.Namespace{Agent: "a:b"}, store.Retention{MaxSessions: 1}, now); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Prune of an invalid namespace = %v, want ErrInvalidKey", err)
	}
}

func TestSearchFallback(t *testing.T) {
	b := &basic{s: memstore.New()}
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	alice := store.Namespace{Agent: "a", Owner: "alice"}
	bob := store.Namespace{Agent: "a", Owner: "bob"}
	put := func(key store.Key, at time.Time, texts ...string) []transcript.Entry {
		var es []transcript.Entry
		for i, text := range texts {
			typ, data := transcript.TypeUserMessage, any(transcript.UserMessage{Text: text})
			if i%2 == 1 {
				typ, data = transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: text}
			}
			parent := ""
			if len(es) > 0 {
				parent = es[len(es)-1].ID
			}
			e := storetest.NewEntry(parent, at.Add(time.Duration(i)*time.Second), typ, data)
			if err := b.Append(t.Context(), key, e); err != nil {
				t.Fatal(err)
			}
			es = append(es, e)
		}
		return es
	}
	s1 := put(alice.Key("s1"), at, "The Quick brown FOX", "a lazy DOG", "ÉCOLE élève")
	s2 := put(alice.Key("s2"), at.Add(time.Hour), "quick fox again")
	put(bob.Key("s1"), at.Add(2*time.Hour), "bob's quick fox")
	search := func(ns store.Namespace, q store.SearchQuery) []string {
		t.Helper()
		hits, err := store.Search(t.Context(), b, ns, q)
		if err != nil {
			t.Fatalf("Search(%+v): %v", q, err)
		}
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.SessionID+"/"+h.EntryID)
		}
		return ids
	}
	id := func(session string, e transcript.Entry) string { return session + "/" + e.ID }
	tests := []struct {
		q    store.SearchQuery
		want []string
	}{
		{store.SearchQuery{Text: "quick FOX"}, []string{id("s2", s2[0]), id("s1", s1[0])}},
		{store.SearchQuery{Text: "dog"}, []string{id("s1", s1[1])}},
		{store.SearchQuery{Text: "quick dog"}, nil},
		{store.SearchQuery{Text: "école"}, []string{id("s1", s1[2])}},
		{store.SearchQuery{Text: "fox", Session: "s1"}, []string{id("s1", s1[0])}},
		{store.SearchQuery{Text: "fox", Limit: 1}, []string{id("s2", s2[0])}},
	}
	for _, tt := range tests {
		if got := search(alice, tt.q); !slices.Equal(got, tt.want) {
			t.Errorf("Search(%+v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if got := search(bob, store.SearchQuery{Text: "dog"}); len(got) != 0 {
		t.Errorf("bob finds alice's text: %v", got)
	}
	hits, _ := store.Search(t.Context(), b, alice, store.SearchQuery{Text: "dog"})
	if len(hits) != 1 || hits[0].Snippet != "a lazy DOG" || !hits[0].Time.Equal(s1[1].Timestamp) {
		t.Errorf("hit = %+v", hits)
	}
	for _, bad := range []struct {
		ns   store.Namespace
		q    store.SearchQuery
		want error
	}{
		{store.Namespace{Agent: "a/b"}, store.SearchQuery{Text: "x"}, store.ErrInvalidKey},
		{alice, store.SearchQuery{Text: "x", Session: ".."}, store.ErrInvalidKey},
	} {
		if _, err := store.Search(t.Context(), b, bad.ns, bad.q); !errors.Is(err, bad.want) {
			t.Errorf("Search(%+v, %+v) = %v, want %v", bad.ns, bad.q, err, bad.want)
		}
	}
	if _, err := store.Search(t.Context(), b, alice, store.SearchQuery{Text: " \t"}); err == nil {
		t.Error("Search with an empty query succeeded")
	}
}
