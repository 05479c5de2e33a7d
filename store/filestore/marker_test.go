package filestore

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

func sameTree(t testing.TB, before, after map[string]string) {
	t.Helper()
	if maps.Equal(before, after) {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if before[k] != after[k] {
			t.Errorf("%s changed or appeared", k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			t.Errorf("%s disappeared", k)
		}
	}
	t.FailNow()
}

func TestMarkerWrittenByFirstSealedAppend(t *testing.T) {
	root := t.TempDir()
	sealedSession(t, root)
	path := filepath.Join(root, markerName)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no marker after a sealed append: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("marker mode %v, want 0600", st.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), markerHeader) || bytes.Contains(b, []byte(markerText)) {
		t.Fatalf("marker content %q", b)
	}
	// A plain store never gets one.
	plain := t.TempDir()
	seed(t, open(t, plain), store.Key{Agent: "a", ID: "s"}, "", t0, 2)
	if _, err := os.Stat(filepath.Join(plain, markerName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a plain store has a marker: %v", err)
	}
}

// TestMarkerRefusesOpen: an encrypted store opened without its key is
// refused by New, which changes nothing, so that nothing can write or
// prune (retention would see sealed sessions as idle since 1970).
func TestMarkerRefusesOpen(t *testing.T) {
	root := t.TempDir()
	sealedSession(t, root)
	before := spooltest.FileTree(t, root)
	opts := []Option{WithRetention(store.Retention{MaxSessions: 1, MaxAge: time.Hour})}

	_, err := New(t.Context(), root, opts...)
	if !errors.Is(err, ErrEncrypted) || !strings.Contains(err.Error(), "is encrypted") {
		t.Fatalf("New without a protector: %v", err)
	}
	_, err = New(t.Context(), root, append(opts, WithProtector(newTestProtector(2)))...)
	if !errors.Is(err, seal.ErrWrongKey) || !strings.Contains(err.Error(), "encrypted with another key") {
		t.Fatalf("New with another key: %v", err)
	}
	sameTree(t, before, spooltest.FileTree(t, root))

	// A keyring holding the key opens it.
	kr, _ := seal.NewKeyring(newTestProtector(2), newTestProtector(1))
	s := open(t, root, WithProtector(kr))
	if _, err := s.Read(t.Context(), store.Key{Agent: "a", Owner: "u", ID: "s"}); err != nil {
		t.Fatal(err)
	}
}

func TestMarkerDamaged(t *testing.T) {
	root := t.TempDir()
	sealedSession(t, root)
	writeRaw(t, filepath.Join(root, markerName), []byte("garbage\n"), os.O_TRUNC)
	if _, err := New(t.Context(), root); !errors.Is(err, ErrEncrypted) {
		t.Fatalf("New without a protector on a damaged marker: %v", err)
	}
	if _, err := New(t.Context(), root, WithProtector(newTestProtector(1))); !errors.Is(err, seal.ErrTampered) || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("New with the key on a damaged marker: %v", err)
	}
}

// TestMarkerLatePlainWriter: a plain Store opened before another process
// encrypted the (empty) store creates no session and prunes nothing.
func TestMarkerLatePlainWriter(t *testing.T) {
	root := t.TempDir()
	plain := open(t, root, WithRetention(store.Retention{MaxSessions: 1}))
	sealedSession(t, root)
	before := spooltest.FileTree(t, root)
	e := storetest.NewEntry("", t0, transcript.TypeUserMessage, transcript.UserMessage{Text: "plain"})
	if err := plain.Append(t.Context(), store.Key{Agent: "a", Owner: "u", ID: "new"}, e); !errors.Is(err, ErrEncrypted) {
		t.Fatalf("plain Append into a store encrypted since: %v", err)
	}
	if _, err := plain.Prune(t.Context(), store.Namespace{Agent: "a", Owner: "u"}, store.Retention{MaxSessions: 1}, time.Now()); !errors.Is(err, ErrEncrypted) {
		t.Fatalf("plain Prune of a store encrypted since: %v", err)
	}
	sameTree(t, before, spooltest.FileTree(t, root))
}

// TestMarkerRefusesMixing: a protector is never added to a store that
// holds plain sessions, and a store sealed before markers existed is
// marked only for its own key.
func TestMarkerRefusesMixing(t *testing.T) {
	t.Run("plain sessions", func(t *testing.T) {
		root := t.TempDir()
		plain := open(t, root)
		seed(t, plain, store.Key{Agent: "a", ID: "plain"}, "", t0, 2)
		before := spooltest.FileTree(t, root)
		if _, err := New(t.Context(), root, WithProtector(newTestProtector(1))); !errors.Is(err, ErrUnencrypted) || !strings.Contains(err.Error(), "a/plain") {
			t.Fatalf("New with a protector on a plain store: %v", err)
		}
		sameTree(t, before, spooltest.FileTree(t, root))

		// A sealed Store opened on the empty store before the plain
		// session appeared finds out at its first append.
		root = t.TempDir()
		sealed := open(t, root, WithProtector(newTestProtector(1)))
		seed(t, open(t, root), store.Key{Agent: "a", ID: "plain"}, "", t0, 2)
		before = spooltest.FileTree(t, root)
		err := sealed.Append(t.Context(), store.Key{Agent: "b", ID: "new"}, storetest.Chain("", t0, 1)[0])
		if !errors.Is(err, ErrUnencrypted) {
			t.Fatalf("sealed Append into a store with a plain session: %v", err)
		}
		sameTree(t, before, spooltest.FileTree(t, root))
	})
	t.Run("unmarked sealed store, another key", func(t *testing.T) {
		root := t.TempDir()
		key, want := sealedSession(t, root)
		os.Remove(filepath.Join(root, markerName))
		before := spooltest.FileTree(t, root)
		if _, err := New(t.Context(), root, WithProtector(newTestProtector(2))); !errors.Is(err, seal.ErrWrongKey) {
			t.Fatalf("New with another key on an unmarked sealed store: %v", err)
		}
		sameTree(t, before, spooltest.FileTree(t, root))
		// Its own key marks it again at the first append.
		s := open(t, root, WithProtector(newTestProtector(1)))
		seed(t, s, key, storetest.Head(want), t0.Add(time.Hour), 1)
		if _, err := New(t.Context(), root); !errors.Is(err, ErrEncrypted) {
			t.Fatalf("the store was not marked again: %v", err)
		}
	})
}

func TestFirstLine(t *testing.T) {
	dir := t.TempDir()
	long := "!" + strings.Repeat("QUJD", 40<<10) + "\n"
	for name, tc := range map[string]struct{ content, want string }{
		"empty":          {"", ""},
		"torn only":      {`{"id":`, ""},
		"blank then one": {"\n  \n{\"a\":1}\n", `{"a":1}`},
		"sealed":         {"!QUJD\n", "!QUJD"},
		"long sealed":    {long, long[:64<<10-(64<<10-1)%4]},
		"long plain":     {"{" + strings.Repeat("x", 70<<10) + "}\n", "{" + strings.Repeat("x", 64<<10-1)},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		writeRaw(t, path, []byte(tc.content), os.O_TRUNC)
		got, err := firstLine(path)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: firstLine = %.40q… (%d bytes), %v; want %.40q… (%d bytes)", name, got, len(got), err, tc.want, len(tc.want))
		}
	}
}
