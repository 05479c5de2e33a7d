package filestore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

// FuzzParseUnsure splits arbitrary U and V mark bodies: what it accepts
// has a nonce and an id a path can be made of (store.ValidID), and is the
// body unsureBody writes for them; what unsureBody writes it accepts back.
func FuzzParseUnsure(f *testing.F) {
	f.Add("feedface\ts1")
	f.Add("feedface\t../outside")
	f.Add("\ts1")
	f.Add("feedface")
	f.Add("a\tb\tc")
	f.Add("0123456789abcdef\t01JABCDEFGHJKMNPQRSTVWXYZ0")
	f.Fuzz(func(t *testing.T, body string) {
		nonce, id, ok := parseUnsure(body)
		if ok {
			if nonce == "" || !store.ValidID(id) {
				t.Fatalf("parseUnsure(%q) accepts nonce %q, id %q", body, nonce, id)
			}
			if got := unsureBody(nonce, id); got != body {
				t.Fatalf("parseUnsure(%q) = %q, %q, which unsureBody writes as %q", body, nonce, id, got)
			}
		}
		// The writer's side: a nonce without a tab and a valid id.
		nonce, id, _ = strings.Cut(body, "\t")
		if nonce == "" || strings.Contains(nonce, "\t") || !store.ValidID(id) {
			return
		}
		n, i, ok := parseUnsure(unsureBody(nonce, id))
		if !ok || n != nonce || i != id {
			t.Fatalf("unsureBody(%q, %q) reads back as %q, %q, %v", nonce, id, n, i, ok)
		}
	})
}

var fuzzIndexIDs = []string{"s1", "s2", "s3"}

// fuzzIndexFolder returns the transcripts of three sessions of agent "a"
// and the index a Store writes for them.
func fuzzIndexFolder(f *testing.F) (map[string][]byte, []byte) {
	root := f.TempDir()
	s, err := New(f.Context(), root, WithRetention(store.Retention{}))
	if err != nil {
		f.Fatal(err)
	}
	for i, id := range fuzzIndexIDs {
		seed(f, s, store.Key{Agent: "a", ID: id}, "", t0.Add(time.Duration(i)*time.Second), 2+i)
	}
	if _, err := s.List(f.Context(), store.Namespace{Agent: "a"}, store.ListOptions{}); err != nil {
		f.Fatal(err)
	}
	ix, err := s.index(f.Context(), store.Namespace{Agent: "a"}, false)
	if err != nil {
		f.Fatal(err)
	}
	if err := ix.rewrite(); err != nil {
		f.Fatal(err)
	}
	if err := s.Close(); err != nil {
		f.Fatal(err)
	}
	files := map[string][]byte{}
	for _, id := range fuzzIndexIDs {
		b, err := os.ReadFile(filepath.Join(root, "a", id+".jsonl"))
		if err != nil {
			f.Fatal(err)
		}
		files[id] = b
	}
	index, err := os.ReadFile(filepath.Join(root, "a", indexName))
	if err != nil {
		f.Fatal(err)
	}
	return files, index
}

// FuzzLoadIndex puts an index file of arbitrary bytes (torn, damaged or
// another version's) beside three intact transcripts. loadLocked never
// panics nor fails on a readable file, and takes the file for an index
// only when it starts with the store's header; the Store then lists
// exactly the three sessions, with their true entry counts: a damaged
// index neither loses nor invents a session. The index the writer wrote
// loads back with one record per session.
func FuzzLoadIndex(f *testing.F) {
	files, index := fuzzIndexFolder(f)
	header := (&Store{}).indexHeader()
	f.Add(index)
	f.Add(index[:len(index)-9])
	f.Add(index[:len(header)+20])
	f.Add([]byte(header))
	f.Add([]byte("spool-index\t1\tplain\n"))
	f.Add([]byte("spool-index\t2\tsealed\n"))
	f.Add([]byte("spool-index\t2\tplain\nS\tdeadbeef\tgarbage\n"))
	f.Add(append([]byte(header), appendMark(nil, 'U', unsureBody("feedface", "../outside"))...))
	f.Add(append([]byte(header), appendMark(nil, 'P', "999999")...))
	f.Add(append(bytes.Clone(index), "D\t00000000\ts2\n"...))
	f.Add(bytes.ReplaceAll(index, []byte("s2"), []byte("s9")))
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		for id, b := range files {
			writeRaw(t, filepath.Join(root, "a", id+".jsonl"), b, os.O_TRUNC)
		}
		writeRaw(t, filepath.Join(root, "a", indexName), data, os.O_TRUNC)

		s := open(t, root)
		ns := store.Namespace{Agent: "a"}
		ix := newIndex(s, ns, s.namespaceDir(ns))
		ix.mu.Lock()
		ok, err := ix.loadLocked(nil)
		n := len(ix.recs)
		ix.mu.Unlock()
		if err != nil {
			t.Fatalf("loadLocked of a readable file: %v", err)
		}
		if ok != bytes.HasPrefix(data, []byte(header)) {
			t.Fatalf("loadLocked = %v of a file starting %q", ok, data[:min(len(data), len(header))])
		}
		if bytes.Equal(data, index) && n != len(fuzzIndexIDs) {
			t.Fatalf("the writer's index loads %d records, want %d", n, len(fuzzIndexIDs))
		}

		// A Store opened cold lists what is in the folder.
		list := listAll(t, s, ns)
		var ids []string
		for _, info := range list {
			ids = append(ids, info.ID)
			want := 2 + slices.Index(fuzzIndexIDs, info.ID)
			if info.Entries != want {
				t.Fatalf("%s listed with %d entries, want %d", info.ID, info.Entries, want)
			}
		}
		slices.Sort(ids)
		if !slices.Equal(ids, fuzzIndexIDs) {
			t.Fatalf("listed %q, want %q", ids, fuzzIndexIDs)
		}
		for _, id := range fuzzIndexIDs {
			if _, err := s.Stat(t.Context(), ns.Key(id)); err != nil {
				t.Fatalf("Stat %s: %v", id, err)
			}
		}
	})
}

// FuzzReadMarker reads an encryption marker of arbitrary bytes: readMarker
// never panics; it returns the sealed line that follows the header, or
// says the store is encrypted (ErrEncrypted without a protector,
// seal.ErrTampered with one) and never that it is not. The marker
// writeMarker writes reads back and checks out for its key.
func FuzzReadMarker(f *testing.F) {
	p := newTestProtector(1)
	root := f.TempDir()
	if err := (&Store{root: root}).writeMarker(p, false); err != nil {
		f.Fatal(err)
	}
	valid, err := os.ReadFile(filepath.Join(root, markerName))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid, false)
	f.Add(valid, true)
	f.Add(valid[:len(valid)-1], true)
	f.Add(valid[:len(valid)/2], true)
	f.Add([]byte(markerHeader), false)
	f.Add([]byte("garbage\n"), true)
	f.Add([]byte(markerHeader+"!AAAA\n"), true)
	f.Add(append(bytes.Repeat([]byte("x"), markerMax), '\n'), false)
	f.Fuzz(func(t *testing.T, data []byte, keyed bool) {
		s := &Store{root: t.TempDir()}
		if keyed {
			s.cfg.protector = p
		}
		writeRaw(t, s.markerPath(), data, os.O_TRUNC)
		line, err := s.readMarker()
		switch {
		case err == nil:
			if !bytes.HasPrefix(data, []byte(markerHeader)) || !seal.IsSealedLine(line) || bytes.ContainsRune(line, '\n') {
				t.Fatalf("readMarker of %q = %q", data, line)
			}
			want, _, _ := bytes.Cut(data[len(markerHeader):], []byte("\n"))
			if len(data) <= markerMax && !bytes.Equal(line, want) {
				t.Fatalf("readMarker of %q = %q, want %q", data, line, want)
			}
		case keyed && errors.Is(err, seal.ErrTampered):
		case !keyed && errors.Is(err, ErrEncrypted):
		default:
			t.Fatalf("readMarker of %q: %v", data, err)
		}
		if keyed {
			found, err := s.checkMarker()
			if !found && err == nil {
				t.Fatalf("checkMarker of %q: no marker, no error", data)
			}
			if err == nil && !bytes.Equal(data, valid) {
				// Only the sealed text under this key checks out: the
				// same line, whatever follows it.
				got, _ := s.readMarker()
				want, _, _ := bytes.Cut(valid[len(markerHeader):], []byte("\n"))
				if _, oerr := seal.OpenLine(p, got, markerAD()); oerr != nil || len(want) == 0 {
					t.Fatalf("checkMarker accepts %q", data)
				}
			}
			if bytes.Equal(data, valid) && err != nil {
				t.Fatalf("checkMarker of the writer's marker: %v", err)
			}
		}
	})
}

// FuzzIndexTornTail cuts the index a Store left at an arbitrary byte and
// adds an arbitrary tail without a newline (an append a crash cut short),
// while the folder keeps the mtime its last F mark names: a Store opened
// cold still lists exactly the three sessions, since the writer whose C
// mark is lost counts as dead and the folder is compared. Every iteration
// restores the index and the folder's mtime.
func FuzzIndexTornTail(f *testing.F) {
	root := f.TempDir()
	s, err := New(f.Context(), root, WithRetention(store.Retention{}))
	if err != nil {
		f.Fatal(err)
	}
	ns := store.Namespace{Agent: "a"}
	heads := map[string]string{}
	for i, id := range fuzzIndexIDs {
		heads[id] = storetest.Head(seed(f, s, ns.Key(id), "", t0.Add(time.Duration(i)*time.Second), 1))
	}
	ix, err := s.index(f.Context(), ns, false)
	if err != nil {
		f.Fatal(err)
	}
	if err := ix.rewrite(); err != nil {
		f.Fatal(err)
	}
	// Records after the rewrite's, which alone know the last entries.
	for i, id := range fuzzIndexIDs {
		seed(f, s, ns.Key(id), heads[id], t0.Add(time.Minute+time.Duration(i)*time.Second), 1+i)
	}
	if err := s.Close(); err != nil {
		f.Fatal(err)
	}
	dir := filepath.Join(root, "a")
	path := filepath.Join(dir, indexName)
	index, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, cut := range []int{len(index) - 1, len(index) - 20, bytes.LastIndexByte(index[:len(index)-1], '\n') + 1, 40} {
		f.Add(uint16(cut), []byte(nil))
	}
	f.Add(uint16(len(index)-1), []byte("C\t00000000\tfeedface"))
	f.Add(uint16(60), []byte("\xff\x00"))
	f.Fuzz(func(t *testing.T, cut uint16, tail []byte) {
		data := append(bytes.Clone(index[:int(cut)%len(index)]), bytes.ReplaceAll(tail, []byte("\n"), nil)...)
		writeRaw(t, path, data, os.O_TRUNC)
		if err := os.Chtimes(dir, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
		defer func() {
			writeRaw(t, path, index, os.O_TRUNC)
			os.Chtimes(dir, st.ModTime(), st.ModTime())
		}()
		s, err := New(t.Context(), root, WithRetention(store.Retention{}))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var ids []string
		for _, info := range listAll(t, s, ns) {
			ids = append(ids, info.ID)
			if want := 2 + slices.Index(fuzzIndexIDs, info.ID); info.Entries != want {
				t.Fatalf("%s listed with %d entries, want %d", info.ID, info.Entries, want)
			}
		}
		slices.Sort(ids)
		if !slices.Equal(ids, fuzzIndexIDs) {
			t.Fatalf("index cut at %d of %d and %q added: listed %q, want %q", int(cut)%len(index), len(index), tail, ids, fuzzIndexIDs)
		}
	})
}
