package filestore

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

// The appender process of TestCrashRounds: SPOOL_FILESTORE_CRASH is
// "root|sealed". It continues every session of crashKeys from its last
// entry, appending in turn until killed, and prints "ACK <id> <entry>" once
// each Append has returned.
const crashEnv = "SPOOL_FILESTORE_CRASH"

var crashKeys = []store.Key{
	{Agent: "a", ID: "one"},
	{Agent: "a", ID: "two"},
	{Agent: "a", Owner: "u", ID: "three"},
}

func crashOptions(sealed bool) []Option {
	opts := []Option{WithRetention(store.Retention{})}
	if sealed {
		opts = append(opts, WithProtector(newTestProtector(1)))
	}
	return opts
}

func TestCrashAppender(t *testing.T) {
	spec := os.Getenv(crashEnv)
	if spec == "" {
		t.Skip("the appender process of TestCrashRounds")
	}
	root, sealed, _ := strings.Cut(spec, "|")
	s, err := New(t.Context(), root, crashOptions(sealed == "1")...)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	ctx := context.Background()
	heads := map[store.Key]string{}
	for _, k := range crashKeys {
		tail, _, err := s.ReadTail(ctx, k, 1)
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		heads[k] = storetest.Head(tail)
	}
	fmt.Println("READY")
	for i := 0; ; i++ {
		k := crashKeys[i%len(crashKeys)]
		// Sizes from a few bytes to 16 KiB: long writes are more often
		// under way when the kill comes.
		text := strings.Repeat("x", rand.IntN(16<<10))
		e := storetest.NewEntry(heads[k], time.Now(), transcript.TypeUserMessage, transcript.UserMessage{Text: text})
		if err := s.Append(ctx, k, e); err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Printf("ACK %s %s\n", k, e.ID)
		heads[k] = e.ID
	}
}

// TestCrashRounds kills a process appending to several sessions with
// SIGKILL at random moments, 20 times, each round continuing the same
// sessions, and every fourth round leaves a torn last line as a power loss
// in the middle of a write would. After each round, every entry the
// appender saw acknowledged is there, in order, in one chain; the session
// opens, the torn line is set aside (never lost, never in the way), and the
// next round continues it.
func TestCrashRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, sealed := range []bool{false, true} {
		t.Run(fmt.Sprintf("sealed=%v", sealed), func(t *testing.T) {
			root := t.TempDir()
			acked := map[string][]string{}
			total := 0
			for round := range 20 {
				ids := crashRound(t, root, sealed, round)
				for _, line := range ids {
					k, id, _ := strings.Cut(line, " ")
					acked[k] = append(acked[k], id)
					total++
				}
				s, err := New(t.Context(), root, crashOptions(sealed)...)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range crashKeys {
					checkAcked(t, s, k, acked[k.String()], round+1)
				}
				if round%4 == 3 {
					tearLastLine(t, s, root, crashKeys[round%len(crashKeys)], sealed)
				}
				s.Close()
			}
			t.Logf("%d appends acknowledged over 20 rounds", total)
			if total < 20 {
				t.Fatalf("only %d appends in 20 rounds: the appender hardly ran", total)
			}
			// Every session continues, and a torn line went aside.
			s := open(t, root, crashOptions(sealed)...)
			for _, k := range crashKeys {
				got := read(t, s, k)
				seed(t, s, k, storetest.Head(got), time.Now(), 1)
			}
			torn, _ := filepath.Glob(filepath.Join(root, "a", "*"+tornExt))
			more, _ := filepath.Glob(filepath.Join(root, "a", "users", "u", "*"+tornExt))
			if len(torn)+len(more) == 0 {
				t.Fatal("no torn line was set aside")
			}
		})
	}
}

// crashRound runs the appender, kills it after a random time, and returns
// the "<key> <entry id>" of every append it acknowledged.
func crashRound(t *testing.T, root string, sealed bool, round int) []string {
	t.Helper()
	flag := "0"
	if sealed {
		flag = "1"
	}
	cmd, sc := spooltest.StartChild(t, "TestCrashAppender", "READY", crashEnv+"="+root+"|"+flag)
	lines := make(chan string)
	go func() {
		defer close(lines)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	kill := time.After(time.Duration(rand.IntN(150)) * time.Millisecond)
	var acked []string
	for {
		select {
		case <-kill:
			cmd.Process.Signal(syscall.SIGKILL)
			kill = nil
		case line, ok := <-lines:
			if !ok {
				cmd.Wait()
				return acked
			}
			id, found := strings.CutPrefix(line, "ACK ")
			if !found {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("round %d: the appender said %q", round, line)
			}
			acked = append(acked, id)
		}
	}
}

// checkAcked checks that the session holds every acknowledged entry in
// order, as one chain, with at most one entry per round that was written
// but not acknowledged before the kill.
func checkAcked(t *testing.T, s *Store, k store.Key, acked []string, rounds int) {
	t.Helper()
	got, err := s.Read(t.Context(), k)
	if err != nil {
		t.Fatalf("Read %s after the crash: %v", k, err)
	}
	next := 0
	for i, e := range got {
		want := ""
		if i > 0 {
			want = got[i-1].ID
		}
		if e.ParentID != want {
			t.Fatalf("%s: entry %d: parent %q, want %q: the chain broke", k, i, e.ParentID, want)
		}
		if next < len(acked) && e.ID == acked[next] {
			next++
		}
	}
	if next != len(acked) {
		t.Fatalf("%s: acknowledged entry %s (%d of %d) is missing or out of order; the session has %d entries", k, acked[next], next, len(acked), len(got))
	}
	if extra := len(got) - len(acked); extra > rounds {
		t.Fatalf("%s: %d entries nobody acknowledged in %d rounds", k, extra, rounds)
	}
}

// tearLastLine appends the first half of a valid next line to the
// session's transcript, without its newline: a write cut short.
func tearLastLine(t *testing.T, s *Store, root string, k store.Key, sealed bool) {
	t.Helper()
	tail, total, err := s.ReadTail(t.Context(), k, 1)
	if err != nil {
		t.Fatal(err)
	}
	e := storetest.NewEntry(storetest.Head(tail), time.Now(), transcript.TypeUserMessage, transcript.UserMessage{Text: "torn"})
	line, err := s.encodeLine(nil, k, total, e)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, k.Agent)
	if k.Owner != "" {
		dir = filepath.Join(dir, usersDir, k.Owner)
	}
	writeRaw(t, sessionPath(dir, k.ID), line[:len(line)/2], os.O_APPEND)
}
