package filestore

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// TestVersion1IndexRebuilt writes the index as version 1 wrote it, with
// no compactions field, and checks that a Store loads the listing with
// the true count of compactions (rebuilt from the transcripts, as for any
// index of another version) and writes the index again as version 2.
func TestVersion1IndexRebuilt(t *testing.T) {
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	s := open(t, root)
	want := fill(t, s, ns, 3)
	for i, id := range []string{"s01", "s01", "s02"} {
		e := storetest.NewEntry(storetest.Head(want[id]), t0.Add(time.Hour+time.Duration(i)*time.Second),
			transcript.TypeCompaction, transcript.Compaction{Summary: "so far", FirstTurn: "t1", LastTurn: "t1", Turns: 1})
		if err := s.Append(t.Context(), ns.Key(id), e); err != nil {
			t.Fatal(err)
		}
		want[id] = append(want[id], e)
	}
	checkListing(t, s, ns, want)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(root, "a", indexName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("spool-index\t2\tplain\n")) {
		t.Fatalf("index header: %q", b[:min(len(b), 40)])
	}
	// Version 1: the same records without <compactions> (field 9 of S).
	old := []byte("spool-index\t1\tplain\n")
	records := 0
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")[1:] {
		f := strings.Split(line, "\t")
		if f[0] != "S" {
			continue
		}
		f = append(f[:9], f[10:]...)
		body := strings.Join(f[2:], "\t")
		rec := []byte("S\t00000000\t" + body)
		putCRC(rec[2:10], rec[11:])
		old = append(append(old, rec...), '\n')
		records++
	}
	if records < 3 {
		t.Fatalf("%d S records in %q", records, b)
	}
	writeRaw(t, path, old, os.O_TRUNC)

	s = open(t, root)
	checkListing(t, s, ns, want) // compares Compactions too
	for _, info := range listAll(t, s, ns) {
		if n := map[string]int{"s01": 2, "s02": 1}[info.ID]; info.Compactions != n {
			t.Errorf("%s: %d compactions, want %d", info.ID, info.Compactions, n)
		}
	}
	seed(t, s, ns.Key("s00"), storetest.Head(want["s00"]), t0.Add(2*time.Hour), 1) // an append writes a record
	b, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("spool-index\t2\tplain\n")) {
		t.Fatalf("index not written again as version 2: %q", b[:min(len(b), 40)])
	}
}
