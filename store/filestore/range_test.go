package filestore

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// checkRanges compares ReadRange and ReadTail with slices of all.
func checkRanges(t *testing.T, s *Store, key store.Key, all []transcript.Entry, full bool) {
	t.Helper()
	n := len(all)
	bounds := []int{-1, 0, 1, 255, 256, 513, n - 257, n - 256, n - 1, n, n + 5}
	if !full {
		bounds = []int{0, 257, n - 300, n - 1}
	}
	for _, a := range bounds {
		for _, b := range bounds {
			got, total, err := s.ReadRange(t.Context(), key, a, b)
			if err != nil || total != n {
				t.Fatalf("ReadRange(%d, %d): total %d, %v", a, b, total, err)
			}
			lo, hi := min(max(a, 0), n), min(max(b, 0), n)
			if hi < lo {
				hi = lo
			}
			sameEntries(t, got, all[lo:hi])
		}
		if a < 0 {
			continue
		}
		got, total, err := s.ReadTail(t.Context(), key, a)
		if err != nil || total != n {
			t.Fatalf("ReadTail(%d): total %d, %v", a, total, err)
		}
		sameEntries(t, got, all[n-min(a, n):])
	}
}

func TestRangesAndTails(t *testing.T) {
	root := t.TempDir()
	key := store.Key{Agent: "a", ID: "long"}
	// Long enough for several offsets, with lines of very different
	// lengths (two over a read chunk). Most of it is written directly:
	// a thousand synced appends take long on a busy disk.
	var all []transcript.Entry
	parent := ""
	for i := range 1000 {
		text := "short"
		if i%500 == 7 {
			text = string(bytes.Repeat([]byte("x"), 70<<10))
		}
		e := storetest.NewEntry(parent, t0.Add(time.Duration(i)*time.Millisecond), transcript.TypeUserMessage, transcript.UserMessage{Text: text})
		all = append(all, e)
		parent = e.ID
	}
	writeRaw(t, filepath.Join(root, "a", "long.jsonl"), lines(t, all...), 0)
	s := open(t, root)
	checkRanges(t, s, key, all, true)
	offs := filepath.Join(root, "a", "long.jsonl.off")
	if b, err := os.ReadFile(offs); err != nil || len(b) != 8*3 {
		t.Fatalf("offsets not built: %d bytes, %v", len(b), err)
	}
	// Appends past entry 1024 add its offset.
	all = append(all, seed(t, s, key, parent, t0.Add(time.Hour), 30)...)
	sf, _, err := s.openSession(t.Context(), s.indexes[key.Namespace()], key.ID, false, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := readOffset(sf, 4); !ok {
		t.Fatal("append did not record the offset of entry 1024")
	}
	sf.close()
	checkRanges(t, s, key, all, true)
	checkRanges(t, open(t, root), key, all, false)

	// Offsets file lost, or wrong: rebuilt from the transcript.
	os.Remove(offs)
	checkRanges(t, open(t, root), key, all, false)
	b, err := os.ReadFile(offs)
	if err != nil || len(b) != 8*4 {
		t.Fatalf("offsets not rebuilt: %d bytes, %v", len(b), err)
	}
	binary.LittleEndian.PutUint64(b[8:], 12345)
	writeRaw(t, offs, b, 0)
	checkRanges(t, open(t, root), key, all, false)
}

func TestRangesOfForeignFile(t *testing.T) {
	// Another program's transcript with blank lines (no entries, no
	// positions) and CRLF line ends.
	root := t.TempDir()
	all := storetest.Chain("", t0, 600)
	var b []byte
	for i, e := range all {
		line := lines(t, e)
		if i%50 == 0 {
			b = append(b, "\n  \r\n"...)
		}
		b = append(b, line[:len(line)-1]...)
		b = append(b, "\r\n"...)
	}
	writeRaw(t, filepath.Join(root, "a", "f.jsonl"), b, 0)
	s := open(t, root)
	key := store.Key{Agent: "a", ID: "f"}
	sameEntries(t, read(t, s, key), all)
	checkRanges(t, s, key, all, true)
}

// A tail whose lines are longer than the first chunk tailLines reads
// (4 KiB for one line) is read whole: the chunks grow until they hold it.
func TestTailOfLongLines(t *testing.T) {
	root := t.TempDir()
	key := store.Key{Agent: "a", ID: "long"}
	var all []transcript.Entry
	parent := ""
	for i, size := range []int{10, 5 << 10, 3 << 10, 70 << 10, 4<<10 - 100, 200 << 10} {
		text := string(bytes.Repeat([]byte{'a' + byte(i)}, size))
		e := storetest.NewEntry(parent, t0.Add(time.Duration(i)*time.Millisecond), transcript.TypeUserMessage, transcript.UserMessage{Text: text})
		all = append(all, e)
		parent = e.ID
	}
	for n := 1; n <= len(all); n++ {
		writeRaw(t, filepath.Join(root, "a", "long.jsonl"), lines(t, all[:n]...), 0)
		s := open(t, root)
		for k := 0; k <= n+1; k++ {
			got, total, err := s.ReadTail(t.Context(), key, k)
			if err != nil || total != n {
				t.Fatalf("%d entries, ReadTail(%d): total %d, %v", n, k, total, err)
			}
			sameEntries(t, got, all[n-min(k, n):n])
		}
	}
}
