package filestore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

func keyring(t testing.TB, current seal.Protector, previous ...seal.Protector) *seal.Keyring {
	t.Helper()
	k, err := seal.NewKeyring(current, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// resealFixture is an encrypted store (key 1) with sessions in a project
// and a user scope, one long enough for the offsets file.
func resealFixture(t *testing.T) (string, map[store.Key][]transcript.Entry) {
	t.Helper()
	root := t.TempDir()
	s := open(t, root, WithProtector(newTestProtector(1)))
	want := map[store.Key][]transcript.Entry{}
	for i, key := range []store.Key{
		{Agent: "a", ID: "one"}, {Agent: "a", ID: "two"},
		{Agent: "a", Owner: "u", ID: "three"}, {Agent: "b", ID: "long"},
	} {
		n := 3 + i
		if key.ID == "long" {
			n = 2*offsetEvery + 10
		}
		first := storetest.NewEntry("", t0, transcript.TypeUserMessage, transcript.UserMessage{Text: secret + " " + key.ID})
		if err := s.Append(t.Context(), key, first); err != nil {
			t.Fatal(err)
		}
		want[key] = append([]transcript.Entry{first}, seed(t, s, key, first.ID, t0.Add(time.Second), n)...)
	}
	// Read a range once, so the long session has an offsets file.
	if _, _, err := s.ReadRange(t.Context(), store.Key{Agent: "b", ID: "long"}, offsetEvery+3, offsetEvery+5); err != nil {
		t.Fatal(err)
	}
	return root, want
}

func checkAll(t *testing.T, s *Store, want map[store.Key][]transcript.Entry) {
	t.Helper()
	for key, entries := range want {
		sameEntries(t, read(t, s, key), entries)
		got, total, err := s.ReadRange(t.Context(), key, len(entries)-3, len(entries)-1)
		if err != nil || total != len(entries) {
			t.Fatalf("ReadRange %s: %d, %v", key, total, err)
		}
		sameEntries(t, got, entries[len(entries)-3:len(entries)-1])
		if key.ID == "long" {
			got, _, err := s.ReadRange(t.Context(), key, offsetEvery+3, offsetEvery+5)
			if err != nil {
				t.Fatal(err)
			}
			sameEntries(t, got, entries[offsetEvery+3:offsetEvery+5])
		}
		info, err := s.Stat(t.Context(), key)
		if err != nil || info.Title != store.Title(secret+" "+key.ID) || info.Entries != len(entries) {
			t.Fatalf("Stat %s: %+v, %v", key, info, err)
		}
	}
}

func TestReseal(t *testing.T) {
	root, want := resealFixture(t)
	before, _ := os.ReadFile(filepath.Join(root, "a", "one.jsonl"))

	s := open(t, root, WithProtector(keyring(t, newTestProtector(2), newTestProtector(1))))
	var rewritten []string
	err := s.Reseal(t.Context(), newTestProtector(2), func(k store.Key, done bool) {
		if done {
			rewritten = append(rewritten, k.String())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rewritten) != len(want) {
		t.Fatalf("rewrote %v, want all %d sessions", rewritten, len(want))
	}
	checkAll(t, s, want)

	// Only the new key opens it now, and it reads everything.
	if _, err := New(t.Context(), root, WithProtector(newTestProtector(1))); !errors.Is(err, seal.ErrWrongKey) {
		t.Fatalf("the old key still opens the store: %v", err)
	}
	fresh := open(t, root, WithProtector(newTestProtector(2)))
	checkAll(t, fresh, want)
	page, err := fresh.List(t.Context(), store.Namespace{Agent: "a"}, store.ListOptions{})
	if err != nil || len(page.Sessions) != 2 {
		t.Fatalf("List: %+v, %v", page, err)
	}
	after, _ := os.ReadFile(filepath.Join(root, "a", "one.jsonl"))
	if bytes.Equal(before, after) || bytes.Contains(after, []byte("swordfish")) {
		t.Fatal("the transcript was not rewritten, or holds plaintext")
	}
	// No temporary file is left.
	matches, _ := filepath.Glob(filepath.Join(root, "*", "*.tmp"))
	if len(matches) > 0 {
		t.Fatalf("left behind: %v", matches)
	}

	// Again: nothing is left to rewrite.
	n := 0
	if err := fresh.Reseal(t.Context(), newTestProtector(2), func(_ store.Key, done bool) {
		if done {
			n++
		}
	}); err != nil || n != 0 {
		t.Fatalf("second Reseal rewrote %d sessions, %v", n, err)
	}
}

// TestResealResumes: a rotation interrupted half-way (some sessions under
// the new key, the marker and the rest under the old one) reads with both
// keys, and running it again finishes it.
func TestResealResumes(t *testing.T) {
	root, want := resealFixture(t)
	kr := keyring(t, newTestProtector(2), newTestProtector(1))
	s := open(t, root, WithProtector(kr))
	ix, err := s.index(t.Context(), store.Namespace{Agent: "a"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if done, err := s.resealSession(t.Context(), ix, store.Key{Agent: "a", ID: "one"}, newTestProtector(2)); err != nil || !done {
		t.Fatal(done, err)
	}
	// A temporary file left by a crash just before the rename.
	writeRaw(t, filepath.Join(root, "a", "two.jsonl.0123456789ab.tmp"), []byte("!half"), os.O_TRUNC)

	if _, err := New(t.Context(), root, WithProtector(newTestProtector(2))); !errors.Is(err, seal.ErrWrongKey) {
		t.Fatalf("the new key alone opened a store still partly under the old one: %v", err)
	}
	checkAll(t, open(t, root, WithProtector(kr)), want)
	n := 0
	if err := s.Reseal(t.Context(), newTestProtector(2), func(_ store.Key, done bool) {
		if done {
			n++
		}
	}); err != nil {
		t.Fatal(err)
	}
	if n != len(want)-1 {
		t.Fatalf("the second run rewrote %d sessions, want %d", n, len(want)-1)
	}
	checkAll(t, open(t, root, WithProtector(newTestProtector(2))), want)
	if _, err := os.Stat(filepath.Join(root, "a", "two.jsonl.0123456789ab.tmp")); err == nil {
		t.Fatal("the interrupted run's temporary file is still there")
	}
}

func TestResealRefuses(t *testing.T) {
	root, _ := resealFixture(t)
	s := open(t, root, WithProtector(newTestProtector(1)))
	if err := s.Reseal(t.Context(), newTestProtector(2), nil); err == nil || !strings.Contains(err.Error(), "NewKeyring") {
		t.Fatalf("Reseal on a store opened with the old key only: %v", err)
	}
	plainRoot := t.TempDir()
	seed(t, open(t, plainRoot), store.Key{Agent: "a", ID: "s"}, "", t0, 1)
	if err := open(t, plainRoot).Reseal(t.Context(), newTestProtector(2), nil); err == nil {
		t.Fatal("Reseal of a plain store succeeded")
	}

	// A corrupt line stops it, naming the session; nothing is lost.
	path := filepath.Join(root, "a", "two.jsonl")
	b, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(b, []byte("\n"))
	lines[2] = []byte("!garbage\n")
	writeRaw(t, path, bytes.Join(lines, nil), os.O_TRUNC)
	kr := open(t, root, WithProtector(keyring(t, newTestProtector(2), newTestProtector(1))))
	err := kr.Reseal(t.Context(), newTestProtector(2), nil)
	var ce *store.CorruptError
	if !errors.As(err, &ce) || ce.Key.ID != "two" || ce.Position != 2 {
		t.Fatalf("Reseal over a corrupt line: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, bytes.Join(lines, nil)) {
		t.Fatal("the corrupt session was changed")
	}
}

// TestResealWithAppends: appends running during the rotation all land,
// each session whole under one key or the other at every moment.
func TestResealWithAppends(t *testing.T) {
	root, want := resealFixture(t)
	kr := keyring(t, newTestProtector(2), newTestProtector(1))
	s := open(t, root, WithProtector(kr))
	writer := open(t, root, WithProtector(kr))
	key := store.Key{Agent: "a", ID: "two"}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		head := storetest.Head(want[key])
		for i := range 40 {
			e := storetest.NewEntry(head, t0.Add(time.Duration(i)*time.Minute), transcript.TypeUserMessage, transcript.UserMessage{Text: "during"})
			if err := writer.Append(t.Context(), key, e); err != nil {
				t.Error(err)
				return
			}
			want[key] = append(want[key], e)
			head = e.ID
		}
	}()
	if err := s.Reseal(t.Context(), newTestProtector(2), nil); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	// Appends after the session was rewritten went in under key 2 anyway.
	checkAll(t, open(t, root, WithProtector(newTestProtector(2))), want)
}
