package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

var keyChecks = []check{
	{"Keys/Invalid", testInvalidKeys},
	{"Keys/ValidEdgeCases", testValidKeys},
	{"Keys/CaseNeverMixes", testCase},
}

// badIDs are never valid as an agent, owner or session id.
var badIDs = []struct{ label, id string }{
	{"dotdot-slash", "../x"},
	{"slash", "a/b"},
	{"backslash", `a\b`},
	{"empty", ""},
	{"129-chars", strings.Repeat("a", store.MaxIDLength+1)},
	{"200-chars", strings.Repeat("b", 200)},
	{"NUL", "a\x00b"},
	{"dot", "."},
	{"dotdot", ".."},
	{"colon", "a:b"},
	{"cyrillic-a", "s\u0430ss"}, // looks like "sass"
	{"space", "a b"},
	{"newline", "a\nb"},
	{"percent-escape", "a%2Fb"},
	{"glob", "a*"},
	{"braces", "{a}"},
}

// testInvalidKeys puts each bad id in each part of a key and expects
// ErrInvalidKey from every method, with nothing stored.
func testInvalidKeys(t *testing.T, s store.Store) {
	agent, owner := name("agent"), name("owner")
	ctx := t.Context()
	e := NewEntry("", base(), transcript.TypeUserMessage, transcript.UserMessage{Text: "must not be stored"})
	for _, part := range []string{"agent", "owner", "session id"} {
		for _, bad := range badIDs {
			if part == "owner" && bad.id == "" {
				continue // the project scope
			}
			key := store.Key{Agent: agent, Owner: owner, ID: name("sess")}
			switch part {
			case "agent":
				key.Agent = bad.id
			case "owner":
				key.Owner = bad.id
			default:
				key.ID = bad.id
			}
			expect := func(call string, err error) {
				t.Helper()
				if !errors.Is(err, store.ErrInvalidKey) {
					t.Errorf("%s with the %s %q (%s) must fail with ErrInvalidKey (errors.Is); got %v", call, part, bad.id, bad.label, err)
				}
			}
			expect("Append", s.Append(ctx, key, e))
			entries, err := s.Read(ctx, key)
			expect("Read", err)
			if len(entries) != 0 {
				t.Errorf("Read with the %s %q (%s) returned %d entries", part, bad.id, bad.label, len(entries))
			}
			expect("Delete", s.Delete(ctx, key))
			if part != "session id" {
				_, err := s.List(ctx, key.Namespace(), store.ListOptions{})
				expect("List", err)
			}
			invalidKeyCapabilities(t, s, key, part != "session id", expect)
		}
	}
	for _, ns := range []store.Namespace{{Agent: agent}, {Agent: agent, Owner: owner}} {
		if got := listAll(t, s, ns, 0); len(got) != 0 {
			t.Errorf("appends with invalid keys must store nothing, but List of %s shows %v", ns, infoIDs(got))
		}
	}
	if sl, ok := s.(store.NamespaceLister); ok {
		namespaces, err := sl.Namespaces(ctx)
		if err != nil {
			t.Fatalf("Namespaces: %v", err)
		}
		for _, sc := range namespaces {
			if store.ValidateNamespace(sc) != nil {
				t.Errorf("appends with invalid keys must store nothing, but Namespaces lists the invalid namespace %q/%q", sc.Agent, sc.Owner)
			}
		}
	}
}

// invalidKeyCapabilities checks that the optional methods refuse key too.
func invalidKeyCapabilities(t *testing.T, s store.Store, key store.Key, badNamespace bool, expect func(string, error)) {
	t.Helper()
	ctx := t.Context()
	if rr, ok := s.(store.RangeReader); ok {
		_, _, err := rr.ReadRange(ctx, key, 0, 10)
		expect("ReadRange", err)
	}
	if tr, ok := s.(store.TailReader); ok {
		_, _, err := tr.ReadTail(ctx, key, 10)
		expect("ReadTail", err)
	}
	if st, ok := s.(store.Stater); ok {
		_, err := st.Stat(ctx, key)
		expect("Stat", err)
	}
	if l, ok := s.(store.Locker); ok {
		unlock, err := l.Lock(ctx, key)
		expect("Lock", err)
		if err == nil {
			unlock()
		}
	}
	if !badNamespace {
		return
	}
	if p, ok := s.(store.Pruner); ok {
		_, err := p.Prune(ctx, key.Namespace(), store.Retention{MaxSessions: 1}, base())
		expect("Prune", err)
	}
	if sr, ok := s.(store.Searcher); ok {
		_, err := sr.Search(ctx, key.Namespace(), store.SearchQuery{Text: "stored"})
		expect("Search", err)
	}
}

// edgeIDs are valid ids chosen to meet the names a store might use for
// itself (folders, index and lock files, suffixes) or that an OS treats
// specially; each must be a session, owner or agent of its own.
var edgeIDs = []string{
	strings.Repeat("x", store.MaxIDLength),
	"a.b_c@d-e", "...", ".hidden", "trailing.", "-dash", "@", "_", "0",
	"index", "index.json", "index.jsonl", "_index", ".index", "users", "owners", "sessions",
	"lock", ".lock", "x.lock", "x.jsonl", "x.tmp", "x.torn", "CON", "nul", "aux.txt",
}

func testValidKeys(t *testing.T, s store.Store) {
	agent := name("agent")
	type made struct {
		key     store.Key
		entries []transcript.Entry
	}
	var sessions []made
	add := func(key store.Key) {
		e := NewEntry("", base(), transcript.TypeUserMessage, transcript.UserMessage{Text: "I am " + key.String()})
		if err := s.Append(t.Context(), key, e); err != nil {
			t.Errorf("Append to %s, a valid key (store.ValidateKey accepts it): %v", key, err)
			return
		}
		sessions = append(sessions, made{key, []transcript.Entry{e}})
	}
	for _, id := range edgeIDs {
		add(store.Key{Agent: agent, ID: id})
		add(store.Key{Agent: agent, Owner: id, ID: id})
		add(store.Key{Agent: agent, Owner: id, ID: "s"})
	}
	add(store.Key{Agent: name("x") + ".jsonl", ID: "index"})
	add(store.Key{Agent: strings.Repeat("y", store.MaxIDLength), Owner: strings.Repeat("z", store.MaxIDLength), ID: strings.Repeat("w", store.MaxIDLength)})
	byNamespace := map[store.Namespace][]string{}
	for _, m := range sessions {
		checkRead(t, s, m.key, m.entries, "every valid key is a session of its own")
		byNamespace[m.key.Namespace()] = append(byNamespace[m.key.Namespace()], m.key.ID)
	}
	for ns, want := range byNamespace {
		got := infoIDs(listAll(t, s, ns, 0))
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("List of %s shows %q, want %q (every valid key is a session of its own namespace)", ns, got, want)
		}
	}
}

// testCase writes "X…" and then "x…" in each part of a key. The second may
// be a separate session or be refused with ErrInvalidKey; it may never
// reach the first's data.
func testCase(t *testing.T, s store.Store) {
	for _, part := range []string{"session id", "owner", "agent"} {
		upper := store.Key{Agent: name("Agent"), Owner: name("Owner"), ID: name("Sess")}
		lower := upper
		switch part {
		case "session id":
			lower.ID = strings.ToLower(upper.ID)
		case "owner":
			lower.Owner = strings.ToLower(upper.Owner)
		default:
			lower.Agent = strings.ToLower(upper.Agent)
		}
		first := seed(t, s, upper, base(), 3)
		e := NewEntry("", base(), transcript.TypeUserMessage, transcript.UserMessage{Text: "lower case"})
		err := s.Append(t.Context(), lower, e)
		switch {
		case err == nil:
			checkRead(t, s, lower, []transcript.Entry{e}, "two "+part+"s differing only in case are separate sessions")
		case errors.Is(err, store.ErrInvalidKey):
			got, err := s.Read(t.Context(), lower)
			if err != nil && !errors.Is(err, store.ErrInvalidKey) {
				t.Errorf("Read of %s, refused because of case: got %v, want no entries or ErrInvalidKey", lower, err)
			}
			if len(got) != 0 {
				t.Errorf("the %s %s was refused for differing from %s only in case, but Read of it returns %d entries: sessions mixed", part, lower, upper, len(got))
			}
		case errors.Is(err, store.ErrConflict):
			t.Errorf("the first entry of %s was refused with ErrConflict: the store mixes it with %s, whose %s differs only in case", lower, upper, part)
		default:
			t.Errorf("Append to %s (differs from %s only in case): %v; want success or ErrInvalidKey", lower, upper, err)
		}
		if err := s.Delete(t.Context(), lower); err != nil && !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Delete %s: %v", lower, err)
		}
		checkRead(t, s, upper, first, "Delete of a key whose "+part+" differs only in case leaves the other session alone")
	}
}
