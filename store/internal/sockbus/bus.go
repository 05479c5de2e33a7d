//go:build unix

package sockbus

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spool-go/spool/store"
)

// queueBytes bounds the bytes queued for one other process (always
// allowing one message, however long).
const queueBytes = 64 << 20

// maxLost is how many keys a gap frame names; past it, it names none
// (any key).
const maxLost = 1024

// checkEvery is how often a listening Bus checks that its socket is
// still there.
var checkEvery = time.Second

// dialTries and dialPause bound how long a queue waits for a socket that
// refuses connections while its process lives (a full backlog).
const (
	dialTries = 100
	dialPause = 10 * time.Millisecond
)

// staleFor is how long a socket that could not be reached is left alone.
const staleFor = 5 * time.Second

// Bus is the notifications of one store among the processes that share
// it; it implements store.Notifier's methods. Open makes one; Close ends
// it. It is safe for concurrent use.
type Bus struct {
	preferred, storePath string
	closedErr            error

	hub store.Hub

	mu       sync.Mutex
	dir      string // the socket folder, once resolved
	inStore  bool   // dir is preferred
	checked  bool   // dir was found private
	closed   bool
	ln       *net.UnixListener
	self     string // ln's socket name
	lnDone   chan struct{}
	keys     map[keyHash]*keyRef // the keys listened to here
	peers    map[string]*peer    // the other sockets, by name
	accepted map[net.Conn]struct{}
	stale    map[string]time.Time // sockets not to try before then
	listings uint64               // the listings of the folder Notify began
	wg       sync.WaitGroup
}

// afterList and beforeListen, when set (by tests), run in Notify between
// its listing of the folder and its use of it, and in Listen before it
// adds the listener to the hub.
var afterList, beforeListen func()

type keyRef struct {
	key store.Key
	n   int
}

// Open returns the Bus of the store at storePath (a folder or a file),
// whose sockets go in preferred when their paths fit a socket address
// (see the package documentation). Calls after Close fail with
// closedErr. Open touches nothing: the folder is made at the first
// Listen.
func Open(preferred, storePath string, closedErr error) *Bus {
	return &Bus{
		preferred: preferred, storePath: storePath, closedErr: closedErr,
		keys: map[keyHash]*keyRef{}, peers: map[string]*peer{},
		accepted: map[net.Conn]struct{}{}, stale: map[string]time.Time{},
	}
}

// folderLocked resolves the socket folder, once the store exists (before,
// nobody listens: a listener makes the store's folder first).
func (b *Bus) folderLocked() (string, bool, error) {
	if b.dir != "" {
		return b.dir, true, nil
	}
	if _, err := os.Stat(b.storePath); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("sockbus: %w", err)
	}
	dir, inStore, err := resolve(b.preferred, b.storePath)
	if err != nil {
		return "", false, err
	}
	b.dir, b.inStore = dir, inStore
	return dir, true, nil
}

// Dir returns the socket folder, or "" while the store does not exist.
func (b *Bus) Dir() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	dir, _, _ := b.folderLocked()
	return dir
}

// Notify implements store.Notifier: b's listeners get msg at once, and
// msg is queued for every other socket of the folder.
func (b *Bus) Notify(ctx context.Context, key store.Key, msg []byte) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	if len(msg) > MaxMessage {
		return fmt.Errorf("sockbus: a message of %d bytes (at most %d)", len(msg), MaxMessage)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return b.closedErr
	}
	dir, ok, err := b.folderLocked()
	checked, inStore := b.checked, b.inStore
	b.listings++
	listing := b.listings
	b.mu.Unlock()
	if err != nil || !ok {
		return err
	}
	if err := b.hub.Notify(ctx, key, msg); err != nil {
		return err
	}
	if !checked {
		// Never send into a folder another user could listen in.
		if err := checkPrivate(dir, inStore); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // nobody listens yet
			}
			return err
		}
		b.mu.Lock()
		b.checked = true
		b.mu.Unlock()
	}
	names, err := socketNames(dir)
	if err != nil {
		return err
	}
	if afterList != nil {
		afterList()
	}
	k := hashKey(key)
	fr := appendMessage(make([]byte, 0, headerLen+1+hashLen+len(msg)), k, msg)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return b.closedErr
	}
	now := time.Now()
	present := make(map[string]bool, len(names))
	for _, name := range names {
		present[name] = true
		if name == b.self {
			continue
		}
		p := b.peers[name]
		if p == nil {
			if until, ok := b.stale[name]; ok && now.Before(until) {
				continue
			}
			delete(b.stale, name)
			p = newPeer(b, name)
			p.listing = listing
			b.peers[name] = p
			b.wg.Add(1)
			go p.write()
		}
		p.enqueue(fr, k)
	}
	for name, p := range b.peers {
		// A peer that a later listing found (a Notify that listed the
		// folder after this one and took the lock before it) is not
		// missing from this listing: its socket came after it.
		if !present[name] && p.listing <= listing {
			p.stop() // its socket is gone: so is its listener
			delete(b.peers, name)
		}
	}
	for name := range b.stale {
		if !present[name] {
			delete(b.stale, name)
		}
	}
	return nil
}

// socketNames lists the sockets of dir, none when it does not exist.
func socketNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("sockbus: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		// A link is never followed (connect would): it could name a
		// socket outside the private folder.
		if _, ok := socketPID(e.Name()); ok && e.Type()&fs.ModeType == fs.ModeSocket {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// socketPID is the process of a socket named "PID.RANDOM.sock".
func socketPID(name string) (int, bool) {
	base, ok := strings.CutSuffix(name, ".sock")
	if !ok {
		return 0, false
	}
	pid, random, ok := strings.Cut(base, ".")
	if !ok || len(random) != 8 {
		return 0, false
	}
	n, err := strconv.Atoi(pid)
	return n, err == nil && n > 0
}

// Listen implements store.Notifier: it returns once b's socket is bound,
// when every Notify of any process sharing the store reaches it.
func (b *Bus) Listen(ctx context.Context, key store.Key) (<-chan []byte, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := hashKey(key)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, b.closedErr
	}
	if err := b.bindLocked(); err != nil {
		b.mu.Unlock()
		return nil, err
	}
	ref := b.keys[k]
	if ref == nil {
		ref = &keyRef{key: key}
		b.keys[k] = ref
	}
	ref.n++
	b.mu.Unlock()
	if beforeListen != nil {
		beforeListen()
	}
	ch, err := b.hub.Listen(ctx, key)
	release := func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if ref.n--; ref.n == 0 && b.keys[k] == ref {
			delete(b.keys, k)
		}
	}
	if err != nil {
		release()
		return nil, err
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		// Close came between: its DropAll may have missed ch, which
		// would then stay open until ctx ends.
		release()
		b.hub.Drop(key)
		return nil, b.closedErr
	}
	context.AfterFunc(ctx, release)
	return ch, nil
}

// bindLocked binds b's socket unless it is bound.
func (b *Bus) bindLocked() error {
	if b.ln != nil {
		return nil
	}
	if b.storeIsFolder() {
		if err := os.MkdirAll(b.storePath, 0o700); err != nil {
			return fmt.Errorf("sockbus: %w", err)
		}
	}
	dir, ok, err := b.folderLocked()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("sockbus: the store %s does not exist", b.storePath)
	}
	if err := makePrivate(dir, b.inStore); err != nil {
		return err
	}
	b.checked = true
	var ln *net.UnixListener
	var name string
	for range 10 {
		var r [4]byte
		_, _ = rand.Read(r[:])
		name = fmt.Sprintf("%d.%08x.sock", os.Getpid(), binary.BigEndian.Uint32(r[:]))
		ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, name), Net: "unix"})
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("sockbus: %w", err)
	}
	// The folder keeps others out already; the socket is the user's too.
	if err := os.Chmod(filepath.Join(dir, name), 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("sockbus: %w", err)
	}
	b.ln, b.self, b.lnDone = ln, name, make(chan struct{})
	b.wg.Add(2)
	go b.accept(ln)
	go b.watchSocket(ln, filepath.Join(dir, name), b.lnDone)
	return nil
}

// storeIsFolder: the store is a folder (a file store) rather than a file.
func (b *Bus) storeIsFolder() bool {
	return filepath.Dir(b.preferred) == filepath.Clean(b.storePath)
}

// accept takes the connections of other processes until ln closes.
func (b *Bus) accept(ln *net.UnixListener) {
	defer b.wg.Done()
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // out of descriptors, say
			continue
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			c.Close()
			return
		}
		b.accepted[c] = struct{}{}
		b.wg.Add(1)
		b.mu.Unlock()
		go b.read(c)
	}
}

// watchSocket closes ln and drops every listener when its socket is
// removed (by a cleaner of temporary files, say): nobody could reach it.
func (b *Bus) watchSocket(ln *net.UnixListener, path string, done chan struct{}) {
	defer b.wg.Done()
	t := time.NewTicker(checkEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		b.mu.Lock()
		if b.ln == ln {
			ln.SetUnlinkOnClose(false) // another's, if the name came back
			ln.Close()
			b.ln, b.self = nil, ""
			close(b.lnDone)
		}
		b.mu.Unlock()
		b.hub.DropAll()
		return
	}
}

// read passes the messages of one connection on to their listeners.
func (b *Bus) read(c net.Conn) {
	defer b.wg.Done()
	defer func() {
		b.mu.Lock()
		delete(b.accepted, c)
		b.mu.Unlock()
		c.Close()
	}()
	r := bufio.NewReaderSize(c, 64<<10)
	var m [len(magic)]byte
	if _, err := io.ReadFull(r, m[:]); err != nil || string(m[:]) != magic {
		return
	}
	for {
		f, err := readFrame(r)
		if err != nil {
			if err != io.EOF && !errors.Is(err, net.ErrClosed) {
				// A frame cut off (its process died writing it) or
				// garbage: what was lost is unknown.
				b.hub.DropAll()
			}
			return
		}
		switch f.kind {
		case kindMsg:
			b.mu.Lock()
			ref := b.keys[f.key]
			b.mu.Unlock()
			if ref != nil {
				_ = b.hub.Notify(context.Background(), ref.key, f.payload)
			}
		case kindGap:
			if len(f.lost) == 0 {
				b.hub.DropAll()
				continue
			}
			for _, k := range f.lost {
				b.mu.Lock()
				ref := b.keys[k]
				b.mu.Unlock()
				if ref != nil {
					b.hub.Drop(ref.key)
				}
			}
		}
	}
}

// Close closes b's socket and connections, after writing what is queued
// for other processes (waiting at most a second for them); b's
// listeners' channels close.
func (b *Bus) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	if b.ln != nil {
		b.ln.Close()
		close(b.lnDone)
		b.ln = nil
	}
	for c := range b.accepted {
		c.Close()
	}
	peers := b.peers
	b.peers = map[string]*peer{}
	b.mu.Unlock()
	for _, p := range peers {
		p.finish()
	}
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		for _, p := range peers {
			p.stop()
		}
		<-done
	}
	b.hub.DropAll()
	return nil
}

// peer is the connection to another process's socket and its queue.
type peer struct {
	b       *Bus
	name    string
	listing uint64 // the Notify listing that found its socket

	mu       sync.Mutex
	queue    [][]byte
	bytes    int
	keys     []keyHash // of queue's frames
	lost     map[keyHash]struct{}
	lostAll  bool
	finished bool // write what is queued, then end
	stopped  bool // end now
	conn     net.Conn
	wake     chan struct{}
}

func newPeer(b *Bus, name string) *peer {
	return &peer{b: b, name: name, wake: make(chan struct{}, 1)}
}

// enqueue queues frame fr (of key k); on a full queue, what is queued is
// discarded and a gap goes next.
func (p *peer) enqueue(fr []byte, k keyHash) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.finished {
		return
	}
	if len(p.queue) >= store.ListenBuffer || (len(p.queue) > 0 && p.bytes+len(fr) > queueBytes) {
		if p.lost == nil {
			p.lost = map[keyHash]struct{}{}
		}
		for _, q := range append(p.keys, k) {
			p.lost[q] = struct{}{}
		}
		if len(p.lost) > maxLost {
			p.lostAll = true
		}
		p.queue, p.keys, p.bytes = nil, nil, 0
	} else {
		p.queue = append(p.queue, fr)
		p.keys = append(p.keys, k)
		p.bytes += len(fr)
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// finish has p end once its queue is written.
func (p *peer) finish() {
	p.mu.Lock()
	p.finished = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// stop ends p now, closing its connection.
func (p *peer) stop() {
	p.mu.Lock()
	p.stopped = true
	c := p.conn
	p.mu.Unlock()
	if c != nil {
		c.Close()
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// write connects to p's socket and writes its queue until p ends.
func (p *peer) write() {
	defer p.b.wg.Done()
	path := filepath.Join(p.b.dir, p.name)
	c, err := p.dial(path)
	if err != nil {
		p.gone(err == errStale)
		return
	}
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.conn = c
	p.mu.Unlock()
	defer c.Close()
	bufs := net.Buffers{[]byte(magic)}
	for {
		p.mu.Lock()
		for len(p.queue) == 0 && p.lost == nil && !p.stopped && !p.finished {
			p.mu.Unlock()
			<-p.wake
			p.mu.Lock()
		}
		if p.stopped || (p.finished && len(p.queue) == 0 && p.lost == nil) {
			p.mu.Unlock()
			return
		}
		if p.lost != nil {
			var lost []keyHash
			if !p.lostAll {
				for k := range p.lost {
					lost = append(lost, k)
				}
			}
			bufs = append(bufs, appendGap(nil, lost))
			p.lost, p.lostAll = nil, false
		}
		bufs = append(bufs, p.queue...)
		p.queue, p.keys, p.bytes = nil, nil, 0
		p.mu.Unlock()
		if _, err := bufs.WriteTo(c); err != nil {
			// Its process closed the connection: its store closed,
			// or it died; its socket goes with it.
			p.gone(false)
			return
		}
		bufs = net.Buffers{}
	}
}

var errStale = errors.New("sockbus: stale socket")

// dial connects to the socket at path, waiting a little while it
// refuses connections but its process lives (a full backlog).
func (p *peer) dial(path string) (net.Conn, error) {
	pid, _ := socketPID(p.name)
	if err := ownSocket(path); err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			return c, nil
		}
		switch {
		case errors.Is(err, syscall.ENOENT):
			return nil, err
		case errors.Is(err, syscall.ECONNREFUSED) && !alive(pid):
			// Its process died without closing it.
			_ = os.Remove(path)
			return nil, errStale
		case !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.EAGAIN):
			return nil, err
		}
		p.mu.Lock()
		stopped := p.stopped
		p.mu.Unlock()
		if stopped || try >= dialTries {
			return nil, err
		}
		time.Sleep(dialPause)
	}
}

// ownSocket checks that path is a socket, not a link, of the user's:
// a folder found open to others was made private (see private), but
// what others put in it before stays, and is never written to.
func ownSocket(path string) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if st.Mode().Type() != fs.ModeSocket || !ok || int(sys.Uid) != os.Getuid() {
		return fmt.Errorf("sockbus: %s is not a socket of this user's: not writing to it", path)
	}
	return nil
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// gone forgets p: its socket could not be reached, or closed. A socket
// that is still there (removed is false) is left alone for a while.
func (p *peer) gone(removed bool) {
	b := p.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.peers[p.name] == p {
		delete(b.peers, p.name)
		if !removed {
			b.stale[p.name] = time.Now().Add(staleFor)
		}
	}
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}

// Once is a Bus made at its first use, for a store that may never need
// one; the zero Once is ready. After Close, its Bus fails every call.
type Once struct {
	mu     sync.Mutex
	bus    *Bus
	closed bool
}

// Bus returns the Bus, opening it (Open's arguments) at the first call.
func (o *Once) Bus(preferred, storePath string, closedErr error) *Bus {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.bus == nil {
		o.bus = Open(preferred, storePath, closedErr)
		if o.closed {
			o.bus.Close()
		}
	}
	return o.bus
}

// Close closes the Bus, if one was opened.
func (o *Once) Close() error {
	o.mu.Lock()
	o.closed = true
	b := o.bus
	o.mu.Unlock()
	if b == nil {
		return nil
	}
	return b.Close()
}
