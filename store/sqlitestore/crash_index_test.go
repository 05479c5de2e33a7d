package sqlitestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// The writer of TestCrashIndex: SPOOL_SQLITESTORE_INDEX_CRASH is the
// database's path. It appends "parcel" messages to a few sessions, deletes
// and starts one again now and then, and indexes in small batches, until
// killed; it prints each append once it returns.
const indexCrashEnv = "SPOOL_SQLITESTORE_INDEX_CRASH"

func TestCrashIndexWriter(t *testing.T) {
	path := os.Getenv(indexCrashEnv)
	if path == "" {
		t.Skip("the writer process of TestCrashIndex")
	}
	indexBatch, passRows = 5, 7
	ctx := context.Background()
	s, err := New(ctx, path)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	ns := store.Namespace{Agent: "a"}
	heads := map[string]string{}
	fmt.Println("READY")
	for i := 0; ; i++ {
		id := fmt.Sprint("s", rand.IntN(4))
		key := ns.Key(id)
		if rand.IntN(40) == 0 {
			if err := s.Delete(ctx, key); err != nil {
				fmt.Println("ERR", err)
				os.Exit(1)
			}
			heads[id] = ""
			continue
		}
		if _, ok := heads[id]; !ok {
			tail, _, err := s.ReadTail(ctx, key, 1)
			if err != nil {
				fmt.Println("ERR", err)
				os.Exit(1)
			}
			heads[id] = storetest.Head(tail)
		}
		e := storetest.NewEntry(heads[id], time.Now(), transcript.TypeUserMessage, transcript.UserMessage{Text: fmt.Sprint("parcel ", i)})
		if err := s.Append(ctx, key, e); err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		heads[id] = e.ID
		fmt.Println(e.ID)
	}
}

// TestCrashIndex kills a process that appends, deletes and indexes with
// SIGKILL at random moments, 15 times on one database: each time, the
// index, once caught up, holds every stored entry's text exactly once and
// nothing of a deleted one, and Search matches the scan before and after
// it catches up.
func TestCrashIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	byHand(t)
	path := filepath.Join(t.TempDir(), "spool.db")
	ns := store.Namespace{Agent: "a"}
	acked := 0
	for round := range 15 {
		cmd, sc := spooltest.StartChild(t, "TestCrashIndexWriter", "READY", indexCrashEnv+"="+path)
		timer := time.AfterFunc(time.Duration(20+rand.IntN(150))*time.Millisecond, func() { cmd.Process.Signal(syscall.SIGKILL) })
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ERR") {
				cmd.Process.Kill()
				t.Fatalf("round %d: the writer said %q", round, sc.Text())
			}
			acked++
		}
		timer.Stop()
		cmd.Wait()

		s := openAt(t, path)
		searchIDs(t, s, ns, "parcel")
		catchUp(t, s)
		searchIDs(t, s, ns, "parcel")
		if got, want := indexed(t, s, "parcel"), holding(t, s, "parcel"); !slices.Equal(got, want) {
			t.Fatalf("round %d: %d index rows for parcel, want the %d stored entries once", round, len(got), len(want))
		}
		s.Close()
	}
	t.Logf("%d appends acknowledged over 15 rounds", acked)
}
