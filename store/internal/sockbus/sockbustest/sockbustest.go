// Package sockbustest checks the notifications of the stores that use
// package sockbus across Stores and processes sharing a store. Tests
// only.
package sockbustest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

// AcrossStores checks that what one notifies reaches the listeners of
// two (another Store on the same store, as another process has it)
// through its socket in dir, the socket folder (0700), and none of
// elsewhere's (a Store of another store); and that when two's socket is
// removed behind its back its listener is dropped and listens again
// (storetest.AfterDrop).
func AcrossStores(t *testing.T, one, two, elsewhere store.Notifier, dir string) {
	t.Helper()
	key := store.Key{Agent: "a", Owner: "o", ID: "s"}
	ch, err := two.Listen(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	far, err := elsewhere.Listen(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"one", "two"} {
		if err := one.Notify(t.Context(), key, []byte(m)); err != nil {
			t.Fatal(err)
		}
		if got := storetest.Receive(t, ch, m); string(got) != m {
			t.Fatalf("got %q, want %q", got, m)
		}
	}
	select {
	case msg := <-far:
		t.Fatalf("another store heard %q", msg)
	case <-time.After(50 * time.Millisecond):
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the socket folder %s: %v", dir, err)
	}
	socks, _ := filepath.Glob(filepath.Join(dir, "*.sock"))
	if len(socks) != 1 {
		t.Fatalf("sockets %v, want two's", socks)
	}
	if err := os.Remove(socks[0]); err != nil {
		t.Fatal(err)
	}
	storetest.AfterDrop(t, one, two, key, ch, 10*time.Second)
}

// childEnv names the store of the child side of AcrossProcesses.
const childEnv = "SPOOL_SOCKBUS_CHILD"

// AcrossProcesses checks that messages reach another process sharing
// the store at path and come back, in order and whole (1 MiB ones
// among them). It runs the test named test again as a child, which
// calls it too: open opens a Store of the store at path, closed with the
// test. In the child, it listens on a/in and passes every message back
// on a/out, until "end".
func AcrossProcesses(t *testing.T, test, path string, open func(t *testing.T, path string) store.Notifier) {
	in, out := store.Key{Agent: "a", ID: "in"}, store.Key{Agent: "a", ID: "out"}
	if path := os.Getenv(childEnv); path != "" {
		s := open(t, path)
		ch, err := s.Listen(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println("READY")
		for msg := range ch {
			if err := s.Notify(t.Context(), out, msg); err != nil || string(msg) == "end" {
				return
			}
		}
		t.Fatal("dropped")
	}
	s := open(t, path)
	back, err := s.Listen(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "READY\n" {
		t.Fatalf("child: %q %v", line, err)
	}
	var sent [][]byte
	for i := range 100 {
		msg := []byte(strconv.Itoa(i))
		if i%40 == 7 {
			msg = bytes.Repeat([]byte{byte(i), 0, 0xff}, 1<<20/3+1)[:1<<20]
		}
		sent = append(sent, msg)
	}
	sent = append(sent, []byte("end"))
	for _, msg := range sent {
		if err := s.Notify(t.Context(), in, msg); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range sent {
		if got := storetest.Receive(t, back, fmt.Sprintf("message %d", i)); !bytes.Equal(got, want) {
			t.Fatalf("message %d: %d bytes, want %d", i, len(got), len(want))
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}
