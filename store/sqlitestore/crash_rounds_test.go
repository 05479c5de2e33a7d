package sqlitestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// The appender of TestCrashRounds: SPOOL_SQLITESTORE_ROUNDS is the
// database's path. It continues each of roundKeys from its last entry, in
// turn, until killed, and prints "<key> <entry id>" once Append returns.
const roundsEnv = "SPOOL_SQLITESTORE_ROUNDS"

var roundKeys = []store.Key{{Agent: "a", ID: "one"}, {Agent: "a", ID: "two"}, {Agent: "a", Owner: "u", ID: "three"}}

func TestCrashRoundsAppender(t *testing.T) {
	path := os.Getenv(roundsEnv)
	if path == "" {
		t.Skip("the appender process of TestCrashRounds")
	}
	ctx := context.Background()
	s, err := New(ctx, path, WithProtector(testProtector{key: 0x5a}))
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	heads := map[store.Key]string{}
	for _, k := range roundKeys {
		tail, _, err := s.ReadTail(ctx, k, 1)
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		heads[k] = storetest.Head(tail)
	}
	fmt.Println("READY")
	for i := 0; ; i++ {
		k := roundKeys[i%len(roundKeys)]
		e := storetest.NewEntry(heads[k], time.Now(), transcript.TypeUserMessage, transcript.UserMessage{Text: strings.Repeat("y", rand.IntN(8<<10))})
		if err := s.Append(ctx, k, e); err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Printf("%s %s\n", k, e.ID)
		heads[k] = e.ID
	}
}

// TestCrashRounds kills a process appending to several sealed sessions
// with SIGKILL at random moments, 20 times, each round continuing the same
// sessions: every acknowledged entry is there, in order, in one chain, and
// every session opens and continues.
func TestCrashRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), "spool.db")
	acked := map[string][]string{}
	total := 0
	for round := range 20 {
		cmd, sc := spooltest.StartChild(t, "TestCrashRoundsAppender", "READY", roundsEnv+"="+path)
		timer := time.AfterFunc(time.Duration(rand.IntN(150))*time.Millisecond, func() { cmd.Process.Signal(syscall.SIGKILL) })
		for sc.Scan() {
			k, id, ok := strings.Cut(sc.Text(), " ")
			if !ok || k == "ERR" {
				cmd.Process.Kill()
				t.Fatalf("round %d: the appender said %q", round, sc.Text())
			}
			acked[k] = append(acked[k], id)
			total++
		}
		timer.Stop()
		cmd.Wait()

		s := openAt(t, path, WithProtector(testProtector{key: 0x5a}))
		for _, k := range roundKeys {
			got, err := s.Read(t.Context(), k)
			if err != nil {
				t.Fatalf("round %d: Read %s: %v", round, k, err)
			}
			next := 0
			for i, e := range got {
				if i > 0 && e.ParentID != got[i-1].ID {
					t.Fatalf("round %d: %s: entry %d breaks the chain", round, k, i)
				}
				if next < len(acked[k.String()]) && e.ID == acked[k.String()][next] {
					next++
				}
			}
			if next != len(acked[k.String()]) {
				t.Fatalf("round %d: %s: acknowledged entry %d of %d is missing or out of order", round, k, next, len(acked[k.String()]))
			}
		}
		s.Close()
	}
	t.Logf("%d appends acknowledged over 20 rounds", total)
	s := openAt(t, path, WithProtector(testProtector{key: 0x5a}))
	for _, k := range roundKeys {
		tail, _, err := s.ReadTail(t.Context(), k, 1)
		if err != nil {
			t.Fatal(err)
		}
		appendAll(t, s, k, storetest.NewEntry(storetest.Head(tail), time.Now(), transcript.TypeUserMessage, transcript.UserMessage{Text: "after"}))
	}
}
