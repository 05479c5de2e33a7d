package sqlitestore

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

// A read gathers its bodies in one buffer sized from the first body: a
// long first entry (a pasted document) in a long session must not make
// it the first body's length times the entries (300 x 256 KiB here, 77
// MB; a 1 MB prompt in a session of ten thousand entries asked 10 GB, and
// the process died out of memory), only about what the bodies hold.
func TestReadLongFirstEntry(t *testing.T) {
	s := openTest(t)
	key := store.Key{Agent: "a", ID: "s"}
	entries := storetest.Chain("", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), 300)
	text, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", 256<<10)})
	entries[0].Data = text
	appendAll(t, s, key, entries...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := s.Read(t.Context(), key)
	runtime.ReadMemStats(&after)
	if err != nil || !sameEntries(got, entries) {
		t.Fatalf("Read: %d entries, %v", len(got), err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Errorf("a read of %d KiB of bodies allocated %d MiB", (256<<10+300*200)>>10, n>>20)
	}
}
