package filestore

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// testProtector is a toy protector for the store's hook: XOR for secrecy
// (enough to keep words out of the files) and an HMAC for integrity and
// binding. Never use it for anything else.
type testProtector struct{ key []byte }

func newTestProtector(id byte) *testProtector {
	return &testProtector{key: bytes.Repeat([]byte{id}, 32)}
}

func (p *testProtector) mac(ad, body []byte) []byte {
	m := hmac.New(sha256.New, p.key)
	m.Write(ad)
	m.Write(body)
	return m.Sum(nil)[:16]
}

func (p *testProtector) Seal(plaintext, ad []byte) ([]byte, error) {
	out := []byte{p.key[0]}
	for i, c := range plaintext {
		out = append(out, c^p.key[i%len(p.key)]^0x5a)
	}
	return append(out, p.mac(ad, out)...), nil
}

func (p *testProtector) Open(sealed, ad []byte) ([]byte, error) {
	if len(sealed) < 17 {
		return nil, seal.ErrTampered
	}
	if sealed[0] != p.key[0] {
		return nil, seal.ErrWrongKey
	}
	body, mac := sealed[:len(sealed)-16], sealed[len(sealed)-16:]
	if !hmac.Equal(mac, p.mac(ad, body)) {
		return nil, seal.ErrTampered
	}
	out := make([]byte, 0, len(body)-1)
	for i, c := range body[1:] {
		out = append(out, c^p.key[i%len(p.key)]^0x5a)
	}
	return out, nil
}

const secret = "the launch code is swordfish"

func sealedSession(t *testing.T, root string) (store.Key, []transcript.Entry) {
	t.Helper()
	s := open(t, root, WithProtector(newTestProtector(1)))
	key := store.Key{Agent: "a", Owner: "u", ID: "s"}
	first := storetest.NewEntry("", t0, transcript.TypeUserMessage, transcript.UserMessage{Text: secret})
	if err := s.Append(t.Context(), key, first); err != nil {
		t.Fatal(err)
	}
	rest := seed(t, s, key, first.ID, t0.Add(time.Second), 5)
	return key, append([]transcript.Entry{first}, rest...)
}

func TestSealedRoundTrip(t *testing.T) {
	root := t.TempDir()
	key, want := sealedSession(t, root)
	for _, s := range []*Store{open(t, root, WithProtector(newTestProtector(1)))} {
		sameEntries(t, read(t, s, key), want)
		tail, total, err := s.ReadTail(t.Context(), key, 2)
		if err != nil || total != len(want) {
			t.Fatal(total, err)
		}
		sameEntries(t, tail, want[len(want)-2:])
		page, err := s.List(t.Context(), key.Namespace(), store.ListOptions{})
		if err != nil || len(page.Sessions) != 1 || page.Sessions[0].Title != store.Title(secret) {
			t.Fatalf("List of an encrypted store: %+v %v", page, err)
		}
	}
	// No file holds the words, and every transcript line is sealed.
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte("swordfish")) || bytes.Contains(b, []byte("message 1")) {
			t.Errorf("%s holds plaintext", path)
		}
		if strings.HasSuffix(path, ".jsonl") {
			for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
				if !seal.IsSealedLine(line) {
					t.Errorf("%s: unsealed line %q", path, line)
				}
			}
		}
		return nil
	})
}

func TestSealedWrongKeyOrNone(t *testing.T) {
	root := t.TempDir()
	// New refuses both on an encrypted store (marker_test.go); Stores
	// opened before it was encrypted find out at each read.
	other := open(t, root, WithProtector(newTestProtector(2)))
	plain := open(t, root)
	key, _ := sealedSession(t, root)

	_, err := other.Read(t.Context(), key)
	if !errors.Is(err, seal.ErrWrongKey) || errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "encrypted with another key") {
		t.Fatalf("Read with another key: %v", err)
	}
	if _, err := other.List(t.Context(), key.Namespace(), store.ListOptions{}); !errors.Is(err, seal.ErrWrongKey) {
		t.Fatalf("List with another key: %v", err)
	}
	if _, err := plain.Read(t.Context(), key); !errors.Is(err, ErrEncrypted) {
		t.Fatalf("Read without a protector: %v", err)
	}
	if _, _, err := plain.ReadTail(t.Context(), key, 1); !errors.Is(err, ErrEncrypted) {
		t.Fatalf("ReadTail without a protector: %v", err)
	}
	// Nothing got mixed in: the right key still reads it all.
	if _, err := open(t, root, WithProtector(newTestProtector(1))).Read(t.Context(), key); err != nil {
		t.Fatal(err)
	}
}

func TestSealedLinesAreBound(t *testing.T) {
	edits := map[string]func(t *testing.T, root string, lines [][]byte) [][]byte{
		"two lines swapped": func(t *testing.T, root string, l [][]byte) [][]byte {
			l[1], l[2] = l[2], l[1]
			return l
		},
		"a line from another session": func(t *testing.T, root string, l [][]byte) [][]byte {
			b, _ := os.ReadFile(filepath.Join(root, "a", "users", "u", "other.jsonl"))
			l[1] = bytes.SplitN(b, []byte("\n"), 3)[1]
			return l
		},
		"a plain line slipped in": func(t *testing.T, root string, l [][]byte) [][]byte {
			l[1] = []byte(strings.TrimSuffix(string(lines(t, storetest.Chain("", t0, 1)...)), "\n"))
			return l
		},
		"a changed byte": func(t *testing.T, root string, l [][]byte) [][]byte {
			l[1][10] ^= 1
			return l
		},
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			key, _ := sealedSession(t, root)
			s := open(t, root, WithProtector(newTestProtector(1)))
			seed(t, s, store.Key{Agent: "a", Owner: "u", ID: "other"}, "", t0, 3)
			path := filepath.Join(root, "a", "users", "u", "s.jsonl")
			b, _ := os.ReadFile(path)
			l := edit(t, root, bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")))
			writeRaw(t, path, append(bytes.Join(l, []byte("\n")), '\n'), os.O_TRUNC)
			_, err := open(t, root, WithProtector(newTestProtector(1))).Read(t.Context(), key)
			var ce *store.CorruptError
			if !errors.As(err, &ce) || ce.Position != 1 || ce.Where != path+":2" {
				t.Fatalf("Read: %v, want a CorruptError at entry 1 (%s:2)", err, path)
			}
		})
	}
}

func TestSealedTornLine(t *testing.T) {
	root := t.TempDir()
	key, want := sealedSession(t, root)
	path := filepath.Join(root, "a", "users", "u", "s.jsonl")
	b, _ := os.ReadFile(path)
	last := b[bytes.LastIndexByte(b[:len(b)-1], '\n')+1:]
	writeRaw(t, path, last[:len(last)-1], os.O_APPEND) // a whole sealed line but its newline
	s := open(t, root, WithProtector(newTestProtector(1)))
	sameEntries(t, read(t, s, key), want)
	seed(t, s, key, storetest.Head(want), t0.Add(time.Hour), 1)
}
