package storekit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
)

var cursorNamespaces = []store.Namespace{
	{Agent: "a"},
	{Agent: "a", Owner: "o"},
	{Agent: "a", Owner: "p"},
	{Agent: "b", Owner: "o"},
	{Agent: "ao"}, // agent+owner run together must not collide with {a, o}
}

func TestListCursorRoundTrip(t *testing.T) {
	times := []time.Time{
		time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC),
		time.Date(2026, 11, 29, 11, 0, 0, 0, time.FixedZone("CET", 3600)),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),                 // before 1970
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), // after UnixNano's end (2262)
	}
	for _, ns := range cursorNamespaces {
		for _, at := range times {
			for _, id := range []string{"s", "01JF0000000000000000000000", "x@y.z-_"} {
				p := storekit.ListPosition{LastActivity: at, ID: id}
				c := storekit.EncodeListCursor(ns, p)
				got, err := storekit.DecodeListCursor(ns, c)
				if err != nil {
					t.Fatalf("DecodeListCursor(%s, cursor of %+v): %v", ns, p, err)
				}
				if !got.LastActivity.Equal(at) || got.ID != id || got.LastActivity.Location() != time.UTC {
					t.Errorf("cursor of %+v decodes to %+v", p, got)
				}
				for _, other := range cursorNamespaces {
					if other == ns {
						continue
					}
					if _, err := storekit.DecodeListCursor(other, c); !errors.Is(err, store.ErrInvalidCursor) {
						t.Errorf("a cursor of namespace %s decodes for namespace %s: %v", ns, other, err)
					}
				}
			}
		}
	}
}

func TestListCursorGarbage(t *testing.T) {
	ns := store.Namespace{Agent: "a", Owner: "o"}
	c := storekit.EncodeListCursor(ns, storekit.ListPosition{LastActivity: time.Now(), ID: "session-1"})
	bad := []string{
		"", "x", "not a cursor", "!!!!", "AAAA", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		c + "A", c + "AAAA", c + "=", "=" + c, c[1:], string(make([]byte, 4000)),
	}
	for n := 1; n < len(c); n++ {
		bad = append(bad, c[:n]) // every truncation
	}
	for i := range len(c) { // every one-character change
		b := []byte(c)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		bad = append(bad, string(b))
	}
	for _, g := range bad {
		p, err := storekit.DecodeListCursor(ns, g)
		if !errors.Is(err, store.ErrInvalidCursor) {
			t.Errorf("DecodeListCursor(%q) = %+v, %v; want ErrInvalidCursor", g, p, err)
		}
	}
}

func TestListOrder(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := store.SessionInfo{ID: "a", LastActivity: at}
	b := store.SessionInfo{ID: "b", LastActivity: at}
	newer := store.SessionInfo{ID: "a", LastActivity: at.Add(time.Nanosecond)}
	if !storekit.Less(newer, b) || storekit.Less(b, newer) {
		t.Error("Less: newer activity must come first")
	}
	if !storekit.Less(b, a) || storekit.Less(a, b) || storekit.Less(a, a) {
		t.Error("Less: on equal activity the higher id comes first, and Less is strict")
	}
	// Before agrees with Less: a session belongs after the position of
	// the session before it.
	s := []store.SessionInfo{a, newer, b}
	storekit.SortSessions(s)
	if s[0] != newer || s[1] != b || s[2] != a {
		t.Errorf("SortSessions = %v", s)
	}
	for i := range s {
		p := storekit.ListPosition{LastActivity: s[i].LastActivity, ID: s[i].ID}
		for j := range s {
			if got, want := p.Before(s[j].LastActivity, s[j].ID), j > i; got != want {
				t.Errorf("position of %d: Before(%d) = %v, want %v", i, j, got, want)
			}
		}
	}
	// Equal instants in other zones are the same activity.
	p := storekit.ListPosition{LastActivity: at.In(time.FixedZone("X", 3600)), ID: "b"}
	if p.Before(at, "b") || !p.Before(at, "a") {
		t.Error("Before must compare instants, not zones")
	}
}

// FuzzDecodeListCursor: any input decodes to a position or fails with
// ErrInvalidCursor, never panics; what decodes for one namespace decodes for
// no other, and a decoded position encodes back to a cursor that decodes
// to it.
func FuzzDecodeListCursor(f *testing.F) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 5, time.UTC)
	for _, s := range cursorNamespaces {
		f.Add(s.Agent, s.Owner, storekit.EncodeListCursor(s, storekit.ListPosition{LastActivity: at, ID: "s1"}))
	}
	f.Add("a", "", "garbage")
	f.Add("a", "o", "")
	f.Fuzz(func(t *testing.T, agent, owner, c string) {
		ns := store.Namespace{Agent: agent, Owner: owner}
		p, err := storekit.DecodeListCursor(ns, c)
		if err != nil {
			if !errors.Is(err, store.ErrInvalidCursor) {
				t.Fatalf("error %v does not match ErrInvalidCursor", err)
			}
			return
		}
		if !store.ValidID(p.ID) {
			t.Fatalf("decoded an invalid id %q", p.ID)
		}
		for _, other := range append(cursorNamespaces, store.Namespace{Agent: agent + "x", Owner: owner}, store.Namespace{Agent: agent, Owner: owner + "x"}) {
			if other == ns {
				continue
			}
			if _, err := storekit.DecodeListCursor(other, c); err == nil {
				t.Fatalf("cursor %q decodes for %+v and for %+v", c, ns, other)
			}
		}
		back, err := storekit.DecodeListCursor(ns, storekit.EncodeListCursor(ns, p))
		if err != nil || !back.LastActivity.Equal(p.LastActivity) || back.ID != p.ID {
			t.Fatalf("re-encoded position %+v decodes to %+v, %v", p, back, err)
		}
	})
}
