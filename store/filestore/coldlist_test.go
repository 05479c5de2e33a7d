package filestore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

// TestColdFirstPage: the first page a new Store lists without loading the
// index (coldFirst) is the page the loaded index gives, for every page
// size, over an index holding superseded records, deletions, a session
// deleted and made again, equal last activities, and sealed titles; and
// a damaged record sends the listing to the full load, which answers the
// same.
func TestColdFirstPage(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		t.Run(fmt.Sprint("sealed=", sealed), func(t *testing.T) {
			var opts []Option
			if sealed {
				opts = append(opts, WithProtector(newTestProtector(3)))
			}
			root := t.TempDir()
			ns := store.Namespace{Agent: "a"}
			w := open(t, root, opts...)
			heads := map[string]string{}
			for i := range 30 {
				id := fmt.Sprintf("s%02d", i)
				// Every third pair shares its last activity: the id decides.
				es := seed(t, w, ns.Key(id), "", t0.Add(time.Duration(i/3)*time.Minute), 1+i%3)
				heads[id] = storetest.Head(es)
			}
			ix, err := w.index(t.Context(), ns, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := ix.rewrite(); err != nil {
				t.Fatal(err)
			}
			// After the rewrite: superseded records, a deletion, a session
			// deleted and made again.
			for _, id := range []string{"s03", "s17", "s03"} {
				es := seed(t, w, ns.Key(id), heads[id], t0.Add(time.Hour+time.Duration(len(heads[id]))*time.Second), 1)
				heads[id] = storetest.Head(es)
			}
			for _, id := range []string{"s05", "s11"} {
				if err := w.Delete(t.Context(), ns.Key(id)); err != nil {
					t.Fatal(err)
				}
			}
			seed(t, w, ns.Key("s11"), "", t0.Add(2*time.Hour), 2)
			w.Close()

			want := func(n int) store.SessionPage {
				s := open(t, root, opts...)
				ix, err := s.index(t.Context(), ns, false)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.ready(t.Context(), ix); err != nil { // loaded: not the cold path
					t.Fatal(err)
				}
				page, err := s.List(t.Context(), ns, store.ListOptions{Limit: n})
				if err != nil {
					t.Fatal(err)
				}
				return page
			}
			cold := func(n int) (store.SessionPage, bool) {
				s := open(t, root, opts...)
				page, err := s.List(t.Context(), ns, store.ListOptions{Limit: n})
				if err != nil {
					t.Fatal(err)
				}
				ix := s.indexes[ns]
				if ix.peeked && !ix.loaded && !ix.coldSorted {
					t.Errorf("Limit %d: the cold first page read every record of a rewritten index", n)
				}
				return page, ix.peeked && !ix.loaded
			}
			for _, n := range []int{1, 2, 5, 27, 28, 29, 100} {
				got, quick := cold(n)
				if !quick {
					t.Fatalf("Limit %d: the cold first page loaded the index", n)
				}
				if w := want(n); fmt.Sprint(got) != fmt.Sprint(w) {
					t.Fatalf("Limit %d: cold\n%+v\nloaded\n%+v", n, got, w)
				}
				if len(got.Sessions) != min(n, 29) {
					t.Fatalf("Limit %d: %d sessions", n, len(got.Sessions))
				}
			}

			// A damaged record: the full load answers, the same.
			want5 := want(5)
			path := filepath.Join(root, "a", indexName)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			i := bytes.Index(b, []byte("\nS\t"))
			if i < 0 {
				t.Fatal("no record in the index")
			}
			b[i+20] ^= 1 // in the first record's body: its checksum fails
			writeRaw(t, path, b, os.O_TRUNC)
			got, quick := func() (store.SessionPage, bool) {
				s := open(t, root, opts...)
				page, err := s.List(t.Context(), ns, store.ListOptions{Limit: 5})
				if err != nil {
					t.Fatal(err)
				}
				return page, s.indexes[ns].peeked && !s.indexes[ns].loaded
			}()
			if quick {
				t.Fatal("a damaged index answered without the full load")
			}
			if fmt.Sprint(got) != fmt.Sprint(want5) {
				t.Fatalf("damaged index: cold\n%+v\nloaded\n%+v", got, want5)
			}
		})
	}
}
