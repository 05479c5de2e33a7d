//go:build js && wasm

package idbstore

import (
	"encoding/json"
	"errors"
	"strings"
	"syscall/js"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// TestListReadsNoTranscript deletes every entry behind the store's back:
// List and Stat must still give each session's full info, since they read
// only the list records, while Read reports the loss.
func TestListReadsNoTranscript(t *testing.T) {
	s := openTest(t, WithRetention(store.Retention{}))
	ns := store.Namespace{Agent: "chat", Owner: "ann"}
	start := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
	var want []store.SessionInfo
	for i, id := range []string{"a", "b", "c"} {
		key := ns.Key(id)
		want = append(want, storekit.Info(key, newSession(t, s, key, start.Add(time.Duration(i)*time.Minute), 4+i)))
	}
	storekit.SortSessions(want)
	rawWrite(t, s, entriesStore, func(os js.Value) { os.Call("clear") })

	page, err := s.List(t.Context(), ns, store.ListOptions{})
	if err != nil {
		t.Fatalf("List with every transcript gone: %v", err)
	}
	if len(page.Sessions) != len(want) {
		t.Fatalf("List shows %d sessions, want %d", len(page.Sessions), len(want))
	}
	for i, got := range page.Sessions {
		if got != want[i] {
			t.Errorf("List without transcripts: session %d is %+v, want %+v", i, got, want[i])
		}
		info, err := s.Stat(t.Context(), got.Key())
		if err != nil || info != want[i] {
			t.Errorf("Stat %s without its transcript: %+v, %v; want %+v", got.ID, info, err, want[i])
		}
	}
	_, err = s.Read(t.Context(), ns.Key("a"))
	var ce *store.CorruptError
	if !errors.As(err, &ce) || ce.Position != 0 {
		t.Errorf("Read of a session whose entries are gone must be a *store.CorruptError at entry 0; got %v", err)
	}
}

func TestCorruptEntries(t *testing.T) {
	s := openTest(t, WithRetention(store.Retention{}))
	key := store.Key{Agent: "chat", ID: "broken"}
	entries := newSession(t, s, key, time.Now().UTC().Add(-time.Hour), 6)
	other := entries[0]
	other.ID, other.ParentID = transcript.NewID(time.Now()), "somewhere-else"
	otherLine, _ := transcript.AppendJSON(nil, other)
	cases := []struct {
		name  string
		pos   int
		value any
		want  string
	}{
		{"not JSON", 2, "{not json", "transcript: not an entry"},
		{"a number", 3, 42, "a number, not an entry"},
		{"a broken parent link", 4, string(otherLine), "has parent"},
		{"missing", 1, nil, "entry missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			good, _ := transcript.AppendJSON(nil, entries[c.pos])
			rawWrite(t, s, entriesStore, func(os js.Value) {
				if c.value == nil {
					os.Call("delete", entryKey(key, c.pos))
				} else {
					os.Call("put", c.value, entryKey(key, c.pos))
				}
			})
			defer rawWrite(t, s, entriesStore, func(os js.Value) { os.Call("put", string(good), entryKey(key, c.pos)) })
			_, err := s.Read(t.Context(), key)
			var ce *store.CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("Read: %v; want a *store.CorruptError matching store.ErrCorrupt", err)
			}
			if ce.Key != key || ce.Position != c.pos || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Read: %v (key %s, position %d); want session %s, position %d, saying %q", err, ce.Key, ce.Position, key, c.pos, c.want)
			}
			// Reading around the damage still works.
			if got, _, err := s.ReadRange(t.Context(), key, c.pos+1, 6); err != nil || len(got) != 5-c.pos {
				t.Errorf("ReadRange past the damaged entry: %d entries, %v", len(got), err)
			}
		})
	}
	if got, err := s.Read(t.Context(), key); err != nil || len(got) != 6 {
		t.Errorf("Read after repair: %d entries, %v", len(got), err)
	}
}

func TestCorruptRecord(t *testing.T) {
	s := openTest(t, WithRetention(store.Retention{}))
	key := store.Key{Agent: "chat", Owner: "ann", ID: "broken"}
	entries := newSession(t, s, key, time.Now().UTC().Add(-time.Hour), 2)
	rawWrite(t, s, sessionsStore, func(os js.Value) {
		// Still indexed (the activity fields are intact), but the count is
		// a string.
		os.Call("put", js.ValueOf(map[string]any{
			"v": recordVersion, "agent": key.Agent, "owner": key.Owner, "id": key.ID,
			"startS": 1, "startN": 0, "actS": 2, "actN": 0, "title": "", "messages": 1,
			"pending": 0, "entries": "two", "head": storetest.Head(entries),
		}))
	})
	check := func(call string, err error) {
		t.Helper()
		var ce *store.CorruptError
		if !errors.As(err, &ce) || ce.Key != key || !strings.Contains(err.Error(), `"entries"`) {
			t.Errorf("%s of a session whose record is damaged: %v; want a *store.CorruptError naming %s and the field", call, err, key)
		}
	}
	_, err := s.Stat(t.Context(), key)
	check("Stat", err)
	_, err = s.List(t.Context(), key.Namespace(), store.ListOptions{})
	check("List", err)
	_, err = s.Read(t.Context(), key)
	check("Read", err)
	err = s.Append(t.Context(), key, storetest.Chain(storetest.Head(entries), time.Now().UTC(), 1)[0])
	check("Append", err)
	if err := s.Delete(t.Context(), key); err != nil {
		t.Errorf("Delete of a session whose record is damaged: %v", err)
	}
	if got := ids(t, s, key.Namespace()); len(got) != 0 {
		t.Errorf("after Delete, List shows %v", got)
	}
}

// TestInvalidUTF8 stores data holding bytes that are not UTF-8, which a
// JavaScript string cannot carry; Read must return them unchanged.
func TestInvalidUTF8(t *testing.T) {
	s := openTest(t, WithRetention(store.Retention{}))
	key := store.Key{Agent: "chat", ID: "bytes"}
	e := storetest.NewEntry("", time.Now().UTC(), "x.binary", nil)
	e.Data = json.RawMessage("{\"raw\":\"\xff\xfe ok\"}")
	if err := s.Append(t.Context(), key, e); err != nil {
		t.Skipf("the entry is refused before it reaches the store: %v", err)
	}
	got, err := s.Read(t.Context(), key)
	if err != nil || len(got) != 1 || string(got[0].Data) != string(e.Data) {
		t.Fatalf("Read: %v, %v; want data %q byte for byte", got, err, e.Data)
	}
}

func TestSchema(t *testing.T) {
	s := openTest(t)
	db := rawOpen(t, s.Name(), 0, nil)
	defer db.Call("close")
	if v := db.Get("version").Int(); v != schemaVersion {
		t.Errorf("database version %d, want %d", v, schemaVersion)
	}
	x := db.Call("transaction", []any{sessionsStore, entriesStore}, "readonly")
	idx := x.Call("objectStore", sessionsStore).Call("index", activityIndex)
	if got := js.Global().Get("JSON").Call("stringify", idx.Get("keyPath")).String(); got != `["agent","owner","actS","actN","id"]` {
		t.Errorf("activity index keyPath %s", got)
	}
	if kp := x.Call("objectStore", entriesStore).Get("keyPath"); !kp.IsNull() {
		t.Errorf("entries keyPath %v, want out-of-line keys", kp)
	}
}

func TestNewerDatabase(t *testing.T) {
	name := dbName()
	rawOpen(t, name, schemaVersion+4, func(db js.Value) { db.Call("createObjectStore", "future") }).Call("close")
	defer deleteDatabase(t, name)
	_, err := New(t.Context(), name)
	var de *DOMError
	if !errors.As(err, &de) || de.Name != "VersionError" || !strings.Contains(err.Error(), "newer schema") {
		t.Errorf("Open of a database a newer idbstore upgraded: %v; want a VersionError that says so", err)
	}
}

func TestForeignDatabase(t *testing.T) {
	name := dbName()
	rawOpen(t, name, schemaVersion, func(db js.Value) { db.Call("createObjectStore", "notes") }).Call("close")
	defer deleteDatabase(t, name)
	if _, err := New(t.Context(), name); err == nil || !strings.Contains(err.Error(), "not made by idbstore") {
		t.Errorf("Open of another application's database of the same name: %v; want a refusal", err)
	}
}

// TestVersionChange opens the database at a newer version elsewhere (as a
// newer page would): the store must close its connection so the upgrade
// is not blocked, and then refuse to work on the newer schema.
func TestVersionChange(t *testing.T) {
	s := openTest(t)
	key := store.Key{Agent: "chat", ID: "s"}
	newSession(t, s, key, time.Now().UTC(), 1)
	db := rawOpen(t, s.Name(), schemaVersion+1, nil) // fails the test if blocked
	db.Call("close")
	_, err := s.Read(t.Context(), key)
	var de *DOMError
	if !errors.As(err, &de) || de.Name != "VersionError" {
		t.Errorf("Read after a newer version took the database: %v; want a VersionError", err)
	}
}

func TestOpenURL(t *testing.T) {
	name := dbName()
	s, err := store.Open(t.Context(), "idb:"+name+"?max_sessions=2&max_age=0")
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	is := s.(*Store)
	defer deleteDatabase(t, name)
	defer is.Close()
	if is.Name() != name || is.cfg.retention != (store.Retention{MaxSessions: 2}) {
		t.Errorf("store.Open(idb:%s?max_sessions=2&max_age=0): name %q, retention %+v", name, is.Name(), is.cfg.retention)
	}
	for _, bad := range []string{"idb://host/x", "idb:x?max_sessions=-1", "idb:x?max_age=soon", "idb:x?ttl=1h"} {
		if s, err := store.Open(t.Context(), bad); err == nil {
			s.(*Store).Close()
			t.Errorf("store.Open(%q) must fail", bad)
		}
	}
}
