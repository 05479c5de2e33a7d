package filestore

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// open returns a store on root with no retention unless opts say otherwise.
func open(t testing.TB, root string, opts ...Option) *Store {
	t.Helper()
	s, err := New(t.Context(), root, append([]Option{WithRetention(store.Retention{})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// seed appends n chained entries to key after parent and returns them.
func seed(t testing.TB, s store.Store, key store.Key, parent string, start time.Time, n int) []transcript.Entry {
	t.Helper()
	entries := storetest.Chain(parent, start, n)
	for i, e := range entries {
		if err := s.Append(t.Context(), key, e); err != nil {
			t.Fatalf("Append %d to %s: %v", i, key, err)
		}
	}
	return entries
}

func read(t testing.TB, s store.Store, key store.Key) []transcript.Entry {
	t.Helper()
	got, err := s.Read(t.Context(), key)
	if err != nil {
		t.Fatalf("Read %s: %v", key, err)
	}
	return got
}

func sameEntries(t testing.TB, got, want []transcript.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range got {
		if !got[i].Equal(want[i]) {
			t.Fatalf("entry %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func listAll(t testing.TB, s store.Store, ns store.Namespace) []store.SessionInfo {
	t.Helper()
	var all []store.SessionInfo
	opt := store.ListOptions{Limit: 7}
	for {
		page, err := s.List(t.Context(), ns, opt)
		if err != nil {
			t.Fatalf("List %s: %v", ns, err)
		}
		all = append(all, page.Sessions...)
		if page.NextCursor == "" {
			return all
		}
		opt.Cursor = page.NextCursor
	}
}

// writeLines writes raw text to a transcript path as another program
// would, making its folder.
func writeRaw(t testing.TB, path string, data []byte, flag int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, flag|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func lines(t testing.TB, entries ...transcript.Entry) []byte {
	t.Helper()
	var b []byte
	for _, e := range entries {
		var err error
		if b, err = transcript.AppendLine(b, e); err != nil {
			t.Fatal(err)
		}
	}
	return b
}
