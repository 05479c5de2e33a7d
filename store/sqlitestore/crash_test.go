package sqlitestore

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

var crashKey = store.Key{Agent: "crash", ID: "s"}

// TestCrashKeepsAcknowledgedAppends kills a writing process at a random
// moment (SIGKILL, mid-transaction as often as not) and reopens the
// database: every append the writer saw succeed is there, in one chain,
// and the session continues.
func TestCrashKeepsAcknowledgedAppends(t *testing.T) {
	if os.Getenv("SPOOL_SQLITESTORE_CRASH_WRITER") != "" {
		t.Skip("the writer process runs TestCrashWriter only")
	}
	path := filepath.Join(t.TempDir(), "spool.db")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestCrashWriter$")
	cmd.Env = append(os.Environ(), "SPOOL_SQLITESTORE_CRASH_WRITER="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]bool{}
	lines := bufio.NewScanner(out)
	for len(acked) < 40 && lines.Scan() {
		acked[lines.Text()] = true
	}
	cmd.Process.Kill()
	cmd.Wait()
	if len(acked) < 40 {
		t.Fatalf("the writer stopped after %d appends", len(acked))
	}

	s := openAt(t, path)
	got, err := s.Read(t.Context(), crashKey)
	if err != nil {
		t.Fatalf("Read after the crash: %v", err)
	}
	for id := range acked {
		found := false
		for _, e := range got {
			found = found || e.ID == id
		}
		if !found {
			t.Fatalf("acknowledged entry %s is missing after the crash (%d entries read)", id, len(got))
		}
	}
	more := storetest.NewEntry(storetest.Head(got), time.Now(), transcript.TypeUserMessage, transcript.UserMessage{Text: "after the crash"})
	appendAll(t, s, crashKey, more)
	if info, err := s.Stat(t.Context(), crashKey); err != nil || info.Entries != len(got)+1 {
		t.Fatalf("Stat after continuing: %+v, %v", info, err)
	}
}

// TestCrashWriter is the writer process of TestCrashKeepsAcknowledgedAppends:
// it appends until killed, printing each entry id once Append returns.
func TestCrashWriter(t *testing.T) {
	path := os.Getenv("SPOOL_SQLITESTORE_CRASH_WRITER")
	if path == "" {
		t.Skip("runs as the writer process of TestCrashKeepsAcknowledgedAppends")
	}
	s, err := New(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	g := newEntryGen(3)
	head := ""
	for i := 0; ; i++ {
		e := g.entry(head, i, time.Now(), false)
		if err := s.Append(t.Context(), crashKey, e); err != nil {
			t.Fatal(err)
		}
		fmt.Println(e.ID)
		head = e.ID
	}
}
