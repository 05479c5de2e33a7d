package filestore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// The child side of TestTwoProcesses: SPOOL_FILESTORE_CHILD is
// "root|name|count". It appends count entries to one session with
// conditional appends, retrying on conflict, and prints the id of every
// acknowledged entry.
const childEnv = "SPOOL_FILESTORE_CHILD"

var processKey = store.Key{Agent: "a", ID: "shared"}

func runChild(t *testing.T, spec string) {
	parts := strings.Split(spec, "|")
	root, name := parts[0], parts[1]
	count, _ := strconv.Atoi(parts[2])
	s, err := New(t.Context(), root, WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for !exists(filepath.Join(root, "go")) {
		time.Sleep(time.Millisecond)
	}
	ctx := context.Background()
	for acked := 0; acked < count; {
		tail, _, err := s.ReadTail(ctx, processKey, 1)
		if err != nil {
			t.Fatal(err)
		}
		e := storetest.NewEntry(storetest.Head(tail), time.Now(), transcript.TypeUserMessage, transcript.UserMessage{Text: name + " " + strconv.Itoa(acked)})
		switch err := s.Append(ctx, processKey, e); {
		case err == nil:
			fmt.Printf("ACK %s\n", e.ID)
			acked++
		case errors.Is(err, store.ErrConflict):
			fmt.Println("CONFLICT")
		default:
			t.Fatal(err)
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestTwoProcesses(t *testing.T) {
	if spec := os.Getenv(childEnv); spec != "" {
		runChild(t, spec)
		return
	}
	if testing.Short() {
		t.Skip("starts processes")
	}
	root := t.TempDir()
	const perChild = 120
	var outs [2]bytes.Buffer
	var cmds [2]*exec.Cmd
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTwoProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|child%d|%d", childEnv, root, i, perChild))
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	writeRaw(t, filepath.Join(root, "go"), nil, 0)
	acked := map[string]bool{}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i].String())
		}
		sc := bufio.NewScanner(&outs[i])
		n, conflicts := 0, 0
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "ACK "); ok {
				acked[id] = true
				n++
			}
			if sc.Text() == "CONFLICT" {
				conflicts++
			}
		}
		t.Logf("child %d: %d appends, %d conflicts", i, n, conflicts)
		if n != perChild {
			t.Fatalf("child %d acknowledged %d appends, want %d", i, n, perChild)
		}
	}
	entries := read(t, open(t, root), processKey)
	if len(entries) != 2*perChild {
		t.Fatalf("%d entries, want %d", len(entries), 2*perChild)
	}
	texts := map[string]int{}
	for i, e := range entries {
		want := ""
		if i > 0 {
			want = entries[i-1].ID
		}
		if e.ParentID != want {
			t.Fatalf("entry %d: parent %q, want %q: the chain broke", i, e.ParentID, want)
		}
		if !acked[e.ID] {
			t.Fatalf("entry %d (%s) was never acknowledged", i, e.ID)
		}
		var m transcript.UserMessage
		e.DecodeData(&m)
		who, _, _ := strings.Cut(m.Text, " ")
		texts[who]++
	}
	if texts["child0"] != perChild || texts["child1"] != perChild {
		t.Fatalf("entries per child: %v", texts)
	}
}
