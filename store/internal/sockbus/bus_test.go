//go:build unix

package sockbus

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/internal/sockbus/sockbustest"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/store/storetest"
)

var errTestClosed = fmt.Errorf("test bus closed")

// open returns a Bus on the store folder root, closed with the test.
func open(t testing.TB, root string) *Bus {
	t.Helper()
	b := Open(filepath.Join(root, "+live"), root, errTestClosed)
	t.Cleanup(func() { b.Close() })
	return b
}

// pair is a store whose notifications go from one Bus to another, as
// from one process to another.
type pair struct {
	*memstore.Store
	from, to *Bus
}

func (p pair) Notify(ctx context.Context, key store.Key, msg []byte) error {
	return p.from.Notify(ctx, key, msg)
}

func (p pair) Listen(ctx context.Context, key store.Key) (<-chan []byte, error) {
	return p.to.Listen(ctx, key)
}

// The Notifier contract holds between two Buses on one folder: each
// message goes through a socket.
func TestConformanceAcrossBuses(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		root := t.TempDir()
		return pair{Store: memstore.New(), from: open(t, root), to: open(t, root)}
	})
}

// A Bus's own messages reach its listeners once, not again through its
// socket; the folder is 0700 and the socket 0600.
func TestOwnOnceAndModes(t *testing.T) {
	root := t.TempDir()
	b := open(t, root)
	key := store.Key{Agent: "a", ID: "s"}
	ch, err := b.Listen(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	other := open(t, root)
	if _, err := other.Listen(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"one", "two"} {
		if err := b.Notify(t.Context(), key, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"one", "two"} {
		if got := storetest.Receive(t, ch, want); string(got) != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	// A marker through the other Bus comes after anything b's socket
	// could have passed back.
	if err := other.Notify(t.Context(), key, []byte("marker")); err != nil {
		t.Fatal(err)
	}
	if got := storetest.Receive(t, ch, "marker"); string(got) != "marker" {
		t.Fatalf("an own message came twice: %q", got)
	}
	st, err := os.Stat(b.Dir())
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("socket folder: %v %v", st.Mode(), err)
	}
	names, _ := socketNames(b.Dir())
	if len(names) != 2 {
		t.Fatalf("sockets %v, want two", names)
	}
	for _, n := range names {
		st, err := os.Lstat(filepath.Join(b.Dir(), n))
		if err != nil || st.Mode().Perm() != 0o600 || st.Mode().Type() != os.ModeSocket {
			t.Fatalf("socket %s: %v %v", n, st.Mode(), err)
		}
	}
	b.Close()
	if err := b.Notify(t.Context(), key, nil); err != errTestClosed {
		t.Fatalf("Notify after Close: %v", err)
	}
	if names, _ := socketNames(b.Dir()); len(names) != 1 {
		t.Fatalf("after Close, sockets %v", names)
	}
}

// A socket left by a process that died is removed by the next Notify
// that finds it; its messages go on to the live ones.
func TestStaleSocketRemoved(t *testing.T) {
	root := t.TempDir()
	b, live := open(t, root), open(t, root)
	key := store.Key{Agent: "a", ID: "s"}
	ch, err := live.Listen(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(live.Dir(), strconv.Itoa(cmd.Process.Pid)+".0badf00d.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: dead, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if err := b.Notify(t.Context(), key, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if got := storetest.Receive(t, ch, "hi"); string(got) != "hi" {
		t.Fatalf("got %q", got)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Lstat(dead); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead process's socket is still there")
		}
	}
}

// A store whose socket paths would not fit a socket address has its
// sockets in a private folder under XDG_RUNTIME_DIR named by its path's
// hash, where every Bus of the store finds them; a folder there that is
// not the user's is refused.
func TestLongPath(t *testing.T) {
	runtime := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", runtime)
	root := filepath.Join(t.TempDir(), strings.Repeat("long-folder-name/", 8))
	one, two := open(t, root), open(t, root)
	key := store.Key{Agent: "a", ID: "s"}
	ch, err := two.Listen(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	dir := two.Dir()
	if !strings.HasPrefix(dir, filepath.Join(runtime, "spool-"+strconv.Itoa(os.Getuid()))+"/") || len(filepath.Base(dir)) != 16 {
		t.Fatalf("socket folder %s", dir)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if st, err := os.Lstat(d); err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", d, st.Mode(), err)
		}
	}
	msg := bytes.Repeat([]byte{0, 1, 0xff}, 1<<19)
	if err := one.Notify(t.Context(), key, msg); err != nil {
		t.Fatal(err)
	}
	if got := storetest.Receive(t, ch, "message"); !bytes.Equal(got, msg) {
		t.Fatalf("%d bytes", len(got))
	}
	// A store not made yet has no folder yet.
	if other := open(t, root+"x"); other.Dir() != "" {
		t.Fatalf("a store that does not exist has socket folder %s", other.Dir())
	}
	// A link in the place of the user's folder is refused.
	evil := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", evil)
	if err := os.Symlink(runtime, filepath.Join(evil, "spool-"+strconv.Itoa(os.Getuid()))); err != nil {
		t.Fatal(err)
	}
	if _, err := open(t, root).Listen(t.Context(), key); err == nil || !strings.Contains(err.Error(), "not a folder of this user's") {
		t.Fatalf("Listen through a link: %v", err)
	}
}

// When a Bus's socket is removed behind its back, its listeners are
// dropped, and a new Listen binds another.
func TestSocketRemoved(t *testing.T) {
	checkEvery = 10 * time.Millisecond
	t.Cleanup(func() { checkEvery = time.Second })
	root := t.TempDir()
	one, two := open(t, root), open(t, root)
	key := store.Key{Agent: "a", ID: "s"}
	ch, err := two.Listen(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	two.mu.Lock()
	self := two.self
	two.mu.Unlock()
	if err := os.Remove(filepath.Join(two.Dir(), self)); err != nil {
		t.Fatal(err)
	}
	storetest.AfterDrop(t, one, two, key, ch, 10*time.Second)
}

// A gap frame closes the listeners of the keys it names, and only
// those; a listener made again gets what comes next.
func TestGapDrops(t *testing.T) {
	root := t.TempDir()
	one, two := open(t, root), open(t, root)
	key, other := store.Key{Agent: "a", ID: "s"}, store.Key{Agent: "a", ID: "t"}
	ch, err := two.Listen(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	stays, err := two.Listen(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("unix", filepath.Join(two.Dir(), two.self))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw := appendGap([]byte(magic), []keyHash{hashKey(key)})
	raw = appendMessage(raw, hashKey(other), []byte("after the gap"))
	if _, err := c.Write(raw); err != nil {
		t.Fatal(err)
	}
	if got := storetest.Receive(t, stays, "the other key's message"); string(got) != "after the gap" {
		t.Fatalf("got %q", got)
	}
	storetest.AfterDrop(t, one, two, key, ch, 10*time.Second)
}

// A process that does not read: what is queued for it past the bound is
// discarded and a gap naming its keys goes next; Notify never waits.
func TestOverflowSendsGap(t *testing.T) {
	root := t.TempDir()
	b := open(t, root)
	if err := makePrivate(filepath.Join(root, "+live"), true); err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(root, "+live", strconv.Itoa(os.Getpid())+".00000001.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	key := store.Key{Agent: "a", ID: "s"}
	payload := bytes.Repeat([]byte("x"), 4096)
	const count = 3 * store.ListenBuffer // tens of MB: far more than any socket buffer
	for i := range count {
		if err := b.Notify(t.Context(), key, append([]byte(strconv.Itoa(i)+" "), payload...)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Notify(t.Context(), key, []byte("last")); err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if _, err := io.ReadFull(r, make([]byte, len(magic))); err != nil {
		t.Fatal(err)
	}
	next, gaps := 0, 0
	for {
		f, err := readFrame(r)
		if err != nil {
			t.Fatal(err)
		}
		if f.kind == kindGap {
			if len(f.lost) != 1 || f.lost[0] != hashKey(key) {
				t.Fatalf("gap %v", f.lost)
			}
			gaps++
			continue
		}
		if string(f.payload) == "last" {
			break
		}
		n, _ := strconv.Atoi(string(f.payload[:bytes.IndexByte(f.payload, ' ')]))
		if n < next || (n > next && gaps == 0) {
			t.Fatalf("message %d after %d (gaps %d)", n, next, gaps)
		}
		next = n + 1
	}
	if gaps == 0 {
		t.Fatal("no gap")
	}
}

// Messages reach another process and come back, in order and whole.
func TestAcrossProcesses(t *testing.T) {
	sockbustest.AcrossProcesses(t, "TestAcrossProcesses", t.TempDir(), func(t *testing.T, root string) store.Notifier { return open(t, root) })
}

// Notify writes only to sockets of the folder, not to what a link there
// names (connect follows links: a link to a socket elsewhere would carry
// the messages out of the private folder), nor, when the test can make
// one, to a socket of another user's.
func TestOnlyOwnSockets(t *testing.T) {
	root := t.TempDir()
	b := open(t, root)
	key := store.Key{Agent: "a", ID: "s"}
	if _, err := b.Listen(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	// The sockets elsewhere listen without accepting, so that a
	// connection Notify made waits in their backlogs to be counted.
	listen := func(path string) int {
		// Made non-blocking apart: SOCK_NONBLOCK is Linux's (and the
		// BSDs'), not macOS's.
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Close(fd) })
		if err := syscall.SetNonblock(fd, true); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Listen(fd, 8); err != nil {
			t.Fatal(err)
		}
		return fd
	}
	elsewhere := filepath.Join(t.TempDir(), "x.sock")
	fds := []int{listen(elsewhere)}
	if err := os.Symlink(elsewhere, filepath.Join(b.Dir(), strconv.Itoa(os.Getpid())+".11111111.sock")); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		foreign := filepath.Join(b.Dir(), strconv.Itoa(os.Getpid())+".22222222.sock")
		fds = append(fds, listen(foreign))
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Notify(t.Context(), key, []byte("secret")); err != nil {
		t.Fatal(err)
	}
	b.Close() // returns once every connection is written and closed
	for i, fd := range fds {
		if nfd, _, err := syscall.Accept(fd); err == nil {
			syscall.Close(nfd)
			t.Errorf("socket %d: Notify connected to it", i)
		} else if err != syscall.EAGAIN {
			t.Fatal(err)
		}
	}
}

// A Notify that listed the folder before a socket was bound, and takes
// the lock only after a later Notify found that socket and queued a
// message for it, does not take the socket for gone: the listener,
// which listened before the later Notify was called, gets its message.
func TestStaleListingKeepsNewPeer(t *testing.T) {
	root := t.TempDir()
	a, recv := open(t, root), open(t, root)
	key := store.Key{Agent: "a", ID: "s"}
	if _, err := a.Listen(t.Context(), key); err != nil { // makes the folder
		t.Fatal(err)
	}
	var ch <-chan []byte
	var hookErr error
	afterList = func() {
		afterList = nil // the Notify below lists and sends as usual
		if ch, hookErr = recv.Listen(t.Context(), key); hookErr != nil {
			return
		}
		hookErr = a.Notify(t.Context(), key, []byte("two"))
	}
	t.Cleanup(func() { afterList = nil })
	if err := a.Notify(t.Context(), key, []byte("one")); err != nil || hookErr != nil {
		t.Fatal(err, hookErr)
	}
	a.mu.Lock()
	n := len(a.peers)
	a.mu.Unlock()
	if n != 1 {
		t.Errorf("after the earlier listing, %d peers, want recv's", n)
	}
	if err := a.Notify(t.Context(), key, []byte("three")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"two", "three"} {
		if got := storetest.Receive(t, ch, want); string(got) != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

// A Listen that Close overtakes fails with the closed error rather than
// return a channel that Close's drop missed (open until its context
// ends).
func TestListenOvertakenByClose(t *testing.T) {
	b := open(t, t.TempDir())
	beforeListen = func() {
		beforeListen = nil
		b.Close()
	}
	t.Cleanup(func() { beforeListen = nil })
	ch, err := b.Listen(t.Context(), store.Key{Agent: "a", ID: "s"})
	if err != errTestClosed {
		t.Fatalf("Listen: %v, %v; want the closed error", ch, err)
	}
}
