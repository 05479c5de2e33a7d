package filestore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/transcript"
)

// The turn-taking process of TestCrashRuntime: SPOOL_FILESTORE_TURNS is
// the store's root. It runs turns on two sessions in turn until killed and
// prints "TURN <session> <turn id>" once each Send has returned.
const turnsEnv = "SPOOL_FILESTORE_TURNS"

var turnSessions = []string{"left", "right"}

func TestCrashRuntimeChild(t *testing.T) {
	root := os.Getenv(turnsEnv)
	if root == "" {
		t.Skip("the turn-taking process of TestCrashRuntime")
	}
	ctx := context.Background()
	st, err := filestore.New(ctx, root, filestore.WithRetention(store.Retention{}))
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	a, err := spool.New(spool.Config{Store: st, Model: echo.New()})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Println("READY")
	for i := 0; ; i++ {
		s, err := a.Session(ctx, turnSessions[i%len(turnSessions)])
		if err == nil {
			var res *spool.Result
			res, err = s.Send(ctx, "prompt "+strconv.Itoa(i))
			if err == nil {
				fmt.Printf("TURN %s %s\n", s.ID(), res.TurnID)
				continue
			}
		}
		fmt.Println("ERR", err)
		os.Exit(1)
	}
}

// TestCrashRuntime kills a process running turns through the runtime on a
// file store with SIGKILL at random moments, 20 times. Each acknowledged
// turn is in the transcript, whole and ended ok; a turn the kill cut short
// is closed as cancelled by the next process; every transcript is one
// chain of whole turns, and the sessions continue.
func TestCrashRuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	root := t.TempDir()
	acked := map[string][]string{}
	n := 0
	for round := range 20 {
		cmd, sc := spooltest.StartChild(t, "TestCrashRuntimeChild", "READY", turnsEnv+"="+root)
		timer := time.AfterFunc(time.Duration(rand.IntN(150))*time.Millisecond, func() { cmd.Process.Signal(syscall.SIGKILL) })
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 || f[0] != "TURN" {
				cmd.Process.Kill()
				t.Fatalf("round %d: the child said %q", round, sc.Text())
			}
			acked[f[1]] = append(acked[f[1]], f[2])
			n++
		}
		timer.Stop()
		cmd.Wait()
	}
	t.Logf("%d turns acknowledged over 20 rounds", n)

	st, err := filestore.New(t.Context(), root, filestore.WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := spool.New(spool.Config{Store: st, Model: echo.New()})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range turnSessions {
		s, err := a.Session(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		// One more turn settles a turn the last kill cut short.
		if _, err := s.Send(t.Context(), "after the crashes"); err != nil {
			t.Fatalf("%s: Send after the crashes: %v", id, err)
		}
		entries, err := s.Transcript(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		ends := checkTurns(t, id, entries)
		for _, turn := range acked[id] {
			if ends[turn] != transcript.StatusOK {
				t.Fatalf("%s: acknowledged turn %s ended %q", id, turn, ends[turn])
			}
		}
		if _, err := s.History(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// checkTurns checks that entries are one chain of contiguous turns, each
// starting with the user's message and ended exactly once, ok or (cut
// short by a kill or a failing disk) cancelled or error, and returns each
// turn's end status.
func checkTurns(t *testing.T, id string, entries []transcript.Entry) map[string]transcript.Status {
	t.Helper()
	ends := map[string]transcript.Status{}
	turn := ""
	for i, e := range entries {
		if i > 0 && e.ParentID != entries[i-1].ID || i == 0 && e.ParentID != "" {
			t.Fatalf("%s: entry %d breaks the chain", id, i)
		}
		if e.TurnID != turn {
			if turn != "" && ends[turn] == "" {
				t.Fatalf("%s: turn %s has no end before turn %s starts", id, turn, e.TurnID)
			}
			if _, seen := ends[e.TurnID]; seen || e.Type != transcript.TypeUserMessage {
				t.Fatalf("%s: entry %d: turn %s starts again, or with %s", id, i, e.TurnID, e.Type)
			}
			turn = e.TurnID
			ends[turn] = ""
		}
		if e.Type == transcript.TypeTurnEnd {
			if ends[turn] != "" {
				t.Fatalf("%s: turn %s ended twice", id, turn)
			}
			if e.Status != transcript.StatusOK && e.Status != transcript.StatusCancelled && e.Status != transcript.StatusError {
				t.Fatalf("%s: turn %s ended %s", id, turn, e.Status)
			}
			ends[turn] = e.Status
		}
	}
	if ends[turn] == "" {
		t.Fatalf("%s: the last turn has no end", id)
	}
	return ends
}
