package storetest

import (
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

var contextChecks = []check{
	{"Context/Cancelled", testCancelled},
}

// testCancelled calls every method with a context that is already
// cancelled. The suite demands only what every store can give: the call
// returns, and an Append is all or nothing (its error says whether the
// entry was stored). Whether each call failed is logged.
func testCancelled(t *testing.T, s store.Store) {
	ns := newNamespace()
	key := ns.Key(name("sess"))
	entries := seed(t, s, key, base(), 2)
	ctx := cancelled(t)
	report := func(call string, err error) {
		if err != nil {
			t.Logf("with a cancelled context, %s failed: %v", call, err)
		} else {
			t.Logf("with a cancelled context, %s succeeded", call)
		}
	}

	e := NewEntry(Head(entries), base().Add(time.Second), transcript.TypeUserMessage, transcript.UserMessage{Text: "cancelled"})
	var err error
	if !returns(t, "Append with a cancelled context", func() { err = s.Append(ctx, key, e) }) {
		return
	}
	report("Append", err)
	if err == nil {
		entries = append(entries, e)
		checkRead(t, s, key, entries, "Append with a cancelled context returned no error, so the entry must be stored")
	} else {
		checkRead(t, s, key, entries, "Append with a cancelled context failed, so the entry must not be stored")
	}

	fresh := ns.Key(name("fresh"))
	first := NewEntry("", base(), transcript.TypeUserMessage, transcript.UserMessage{Text: "new"})
	if !returns(t, "Append of a new session with a cancelled context", func() { err = s.Append(ctx, fresh, first) }) {
		return
	}
	report("Append of a new session", err)
	if err == nil {
		checkRead(t, s, fresh, []transcript.Entry{first}, "Append of a new session with a cancelled context returned no error, so the entry must be stored")
	} else {
		checkRead(t, s, fresh, nil, "Append of a new session with a cancelled context failed, so nothing must be stored")
		if _, n := find(listAll(t, s, ns, 0), fresh.ID); n != 0 {
			t.Errorf("Append of a new session with a cancelled context failed, but List shows the session")
		}
	}

	calls := []namedCall{
		{"Read", func() error { _, err := s.Read(ctx, key); return err }},
		{"List", func() error { _, err := s.List(ctx, ns, store.ListOptions{}); return err }},
		{"Delete", func() error { return s.Delete(ctx, ns.Key(name("gone"))) }},
	}
	if rr, ok := s.(store.RangeReader); ok {
		calls = append(calls, namedCall{"ReadRange", func() error { _, _, err := rr.ReadRange(ctx, key, 0, 1); return err }})
	}
	if tr, ok := s.(store.TailReader); ok {
		calls = append(calls, namedCall{"ReadTail", func() error { _, _, err := tr.ReadTail(ctx, key, 1); return err }})
	}
	if st, ok := s.(store.Stater); ok {
		calls = append(calls, namedCall{"Stat", func() error { _, err := st.Stat(ctx, key); return err }})
	}
	if p, ok := s.(store.Pruner); ok {
		calls = append(calls, namedCall{"Prune", func() error {
			_, err := p.Prune(ctx, store.Namespace{Agent: name("agent")}, store.Retention{MaxSessions: 1}, base())
			return err
		}})
	}
	if sl, ok := s.(store.NamespaceLister); ok {
		calls = append(calls, namedCall{"Namespaces", func() error { _, err := sl.Namespaces(ctx); return err }})
	}
	if sr, ok := s.(store.Searcher); ok {
		calls = append(calls, namedCall{"Search", func() error { _, err := sr.Search(ctx, ns, store.SearchQuery{Text: "message"}); return err }})
	}
	for _, c := range calls {
		var err error
		if returns(t, c.name+" with a cancelled context", func() { err = c.call() }) {
			report(c.name, err)
		}
	}
	checkRead(t, s, key, entries, "calls with a cancelled context leave the session as it was")
}

// namedCall is a store call with the name a failure message gives it.
type namedCall struct {
	name string
	call func() error
}
