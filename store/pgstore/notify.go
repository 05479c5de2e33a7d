package pgstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/spool-go/spool/store"
)

// Notifications (store.Notifier) go through LISTEN/NOTIFY.
//
// Each session key has a channel of its own, "spool_" and 40 hex digits
// of a SHA-256 of the schema and the key: no id ever reaches SQL, and two
// stores in two schemas of one database never hear each other. A Store
// listens on one connection of its own, made on the first Listen (not
// from the pool, so that it never holds a pool connection, nor waits for
// one), LISTENing to the channels that have listeners in the process and
// fanning each notification out to them through a store.Hub. When that
// connection drops, every listener is dropped (its channel closed, as the
// Notifier contract says of a listener that fell behind: what was notified
// meanwhile is lost, and it catches up another way) and the connection is
// made again.
//
// NOTIFY takes payloads below 8000 bytes; a message can be longer (a
// live turn's snapshot of its events so far). A message is sent as
// base64 in chunks of at most notifyChunk bytes, all of them from one
// transaction, so that they reach every listener together and in order,
// and the listening Store puts them back together. Each chunk says which
// Store sent it: a Store delivers its own messages to its own listeners
// at once, without the round trip through the server, and skips them when
// they come back.

// notifyChunk is the most base64 a NOTIFY payload carries, leaving room
// for the chunk's header below the server's 8000 bytes.
const notifyChunk = 7800

// notifyKeepAlive is how long the listening connection stays silent
// before it is checked with an empty query: a connection that died
// without a word (a network that dropped it) is found within it, and
// the check waits as long for its reply. A variable for tests.
var notifyKeepAlive = 30 * time.Second

var _ store.Notifier = (*Store)(nil)

// notifier is a Store's LISTEN connection and its listeners; the zero
// value is ready, and starts its connection on the first Listen.
type notifier struct {
	once sync.Once
	tag  string // this Store's mark on its messages
	seq  atomic.Uint64
	hub  store.Hub

	mu      sync.Mutex
	chans   map[string]*pgChannel // channels with listeners here, by name
	dirty   bool                  // chans changed since the loop last looked
	wait    context.CancelFunc    // ends the loop's current wait for a notification
	started bool
	closed  bool
	stop    context.CancelFunc
	done    chan struct{}

	// parts are messages whose first chunks came (the loop's own).
	parts map[string]*partial

	// The messages waiting for a flight, and whether one is in the air
	// (see send).
	sendMu sync.Mutex
	queue  []*note
	flying bool
}

// pgChannel is one LISTENed channel.
type pgChannel struct {
	key      store.Key
	n        int  // listeners
	listened bool // LISTENed on the current connection
	ready    *readiness
}

// readiness is closed when a channel is listened to, or could not be.
type readiness struct {
	done chan struct{}
	err  error
}

type partial struct {
	next   int
	chunks []string
}

func newReadiness() *readiness { return &readiness{done: make(chan struct{})} }

func (n *notifier) init() {
	n.once.Do(func() {
		var b [8]byte
		_, _ = rand.Read(b[:])
		n.tag = hex.EncodeToString(b[:])
		n.chans = map[string]*pgChannel{}
		n.parts = map[string]*partial{}
	})
}

// channelName is key's channel: a hash, never the ids themselves.
func (s *Store) channelName(key store.Key) string {
	h := sha256.New()
	for _, p := range []string{s.schema, key.Agent, key.Owner, key.ID} {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	return "spool_" + hex.EncodeToString(h.Sum(nil))[:40]
}

// Notify implements store.Notifier through NOTIFY: the store's listeners
// in this process get msg at once, those of other processes when the
// server passes it on. A message of any length is sent, in chunks when it
// is longer than a NOTIFY payload.
func (s *Store) Notify(ctx context.Context, key store.Key, msg []byte) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	n := &s.notify
	n.init()
	if err := n.hub.Notify(ctx, key, msg); err != nil {
		return err
	}
	if err := s.send(ctx, s.channelName(key), encodeChunks(n.tag, n.seq.Add(1), msg)); err != nil {
		return dbError("notify", key, err)
	}
	return nil
}

// A Store's notifications go to the server in flights: one pipeline of
// pg_notify calls ended by one Sync, which Postgres runs as one implicit
// transaction, so a flight is one round trip and a message's chunks reach
// each listener together, in order, and not at all if it fails. One flight
// is in the air at a time; what is notified meanwhile, from any session,
// waits for the next one and goes in it, so that N turns notifying at once
// cost one round trip, not N (as a group commit does). Flights are sent
// in the order their messages were notified, so each key's messages keep
// their order.

// flightBytes bounds the payload of one flight: a megabyte snapshot goes
// in a flight of its own, and the small messages queued after it wait for
// one round trip, not for the whole queue.
const flightBytes = 1 << 20

// flightTimeout bounds a flight: it is sent for every message in it, so
// it does not end with the context of the Notify that happened to send
// it.
const flightTimeout = 10 * time.Second

// note is one message waiting for a flight, as its chunks.
type note struct {
	channel string
	chunks  []string
	size    int
	done    chan error // the flight's outcome; buffered, so a flight never waits
}

// send queues chunks for channel and returns the outcome of the flight
// that carries them (or ctx's error, when it ends first: the message may
// still go). The Notify that finds no flight in the air sends the queue.
func (s *Store) send(ctx context.Context, channel string, chunks []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n := &s.notify
	m := &note{channel: channel, chunks: chunks, done: make(chan error, 1)}
	for _, c := range chunks {
		m.size += len(c)
	}
	n.sendMu.Lock()
	n.queue = append(n.queue, m)
	lead := !n.flying
	n.flying = true
	n.sendMu.Unlock()
	if lead {
		s.fly()
	}
	select {
	case err := <-m.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fly sends one flight from the queue, which is not empty (only the one
// flier takes from it), and hands what is queued meanwhile to a goroutine
// of its own: so the Notify that leads returns after the flight that
// carries its own message, and flights still go one at a time, in order.
func (s *Store) fly() {
	n := &s.notify
	n.sendMu.Lock()
	k, size := 0, 0
	for k < len(n.queue) && (k == 0 || size+n.queue[k].size <= flightBytes) {
		size += n.queue[k].size
		k++
	}
	flight := n.queue[:k:k]
	n.queue = append([]*note(nil), n.queue[k:]...)
	n.sendMu.Unlock()
	err := s.sendFlight(flight)
	var pe *pgconn.PgError
	if len(flight) > 1 && errors.As(err, &pe) {
		// The server refused a statement, and with it the flight:
		// each message goes again on its own, so that one the server
		// will not take fails alone.
		for _, m := range flight {
			m.done <- s.sendFlight([]*note{m})
		}
	} else {
		for _, m := range flight {
			m.done <- err
		}
	}
	n.sendMu.Lock()
	more := len(n.queue) > 0
	n.flying = more
	n.sendMu.Unlock()
	if more {
		go s.fly()
	}
}

// sendFlight sends the messages of one flight in one round trip.
func (s *Store) sendFlight(flight []*note) error {
	ctx, cancel := context.WithTimeout(context.Background(), flightTimeout)
	defer cancel()
	if len(flight) == 1 && len(flight[0].chunks) == 1 {
		_, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, flight[0].channel, flight[0].chunks[0])
		return err
	}
	b := &pgx.Batch{}
	for _, m := range flight {
		for _, c := range m.chunks {
			b.Queue(`SELECT pg_notify($1, $2)`, m.channel, c)
		}
	}
	return s.pool.SendBatch(ctx, b).Close()
}

// encodeChunks is msg as NOTIFY payloads: "TAG SEQ I N BASE64", the I-th
// of N pieces of the base64 of message SEQ of the Store marked TAG.
func encodeChunks(tag string, seq uint64, msg []byte) []string {
	b64 := base64.StdEncoding.EncodeToString(msg)
	count := max(1, (len(b64)+notifyChunk-1)/notifyChunk)
	out := make([]string, 0, count)
	for i := range count {
		piece := b64[i*notifyChunk : min(len(b64), (i+1)*notifyChunk)]
		out = append(out, tag+" "+strconv.FormatUint(seq, 10)+" "+strconv.Itoa(i)+" "+strconv.Itoa(count)+" "+piece)
	}
	return out
}

// decodeChunk takes one payload in; it returns the whole message when
// this chunk completed one, and whether it did. A chunk of this Store
// (tag own), or one that is not of this format, is nothing.
func (n *notifier) decodeChunk(own, payload string) ([]byte, bool) {
	f := strings.SplitN(payload, " ", 5)
	if len(f) != 5 || f[0] == own {
		return nil, false
	}
	i, err1 := strconv.Atoi(f[2])
	count, err2 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil || i < 0 || count < 1 || i >= count {
		return nil, false
	}
	id := f[0] + " " + f[1]
	if count == 1 {
		msg, err := base64.StdEncoding.DecodeString(f[4])
		return msg, err == nil
	}
	p := n.parts[id]
	if i == 0 {
		if len(n.parts) > 1024 {
			clear(n.parts) // pieces of messages that never completed
		}
		p = &partial{}
		n.parts[id] = p
	}
	if p == nil || p.next != i {
		delete(n.parts, id)
		return nil, false
	}
	p.chunks = append(p.chunks, f[4])
	p.next++
	if p.next < count {
		return nil, false
	}
	delete(n.parts, id)
	msg, err := base64.StdEncoding.DecodeString(strings.Join(p.chunks, ""))
	return msg, err == nil
}

// Listen implements store.Notifier through LISTEN on the Store's own
// connection; it returns once the server listens to key's channel for
// this process. The channel is closed when ctx ends, when the listener
// falls store.ListenBuffer messages behind, or when the listening
// connection drops (what was notified meanwhile is lost).
func (s *Store) Listen(ctx context.Context, key store.Key) (<-chan []byte, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := &s.notify
	n.init()
	name := s.channelName(key)
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, errors.New("pgstore: listen: the store is closed")
	}
	if !n.started {
		n.started = true
		lctx, stop := context.WithCancel(context.Background())
		n.stop, n.done = stop, make(chan struct{})
		go s.notifyLoop(lctx)
	}
	c := n.chans[name]
	if c == nil {
		c = &pgChannel{key: key, ready: newReadiness()}
		n.chans[name] = c
	}
	c.n++
	ready, listened := c.ready, c.listened
	n.pokeLocked()
	n.mu.Unlock()
	lctx, cancel := context.WithCancel(ctx)
	ch, err := n.hub.Listen(lctx, key)
	context.AfterFunc(lctx, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if c.n--; c.n == 0 {
			n.pokeLocked()
		}
	})
	if err != nil {
		cancel()
		return nil, err
	}
	if !listened {
		select {
		case <-ready.done:
			if ready.err != nil {
				cancel()
				return nil, dbError("listen", key, ready.err)
			}
		case <-ctx.Done():
			cancel()
			return nil, ctx.Err()
		}
	}
	context.AfterFunc(ctx, cancel) // the listener lasts as long as ctx
	return ch, nil
}

// pokeLocked has the loop bring its LISTENs in line with chans.
func (n *notifier) pokeLocked() {
	n.dirty = true
	if n.wait != nil {
		n.wait()
	}
}

// closeNotify ends the listening connection; listeners' channels close.
func (n *notifier) closeNotify() {
	n.mu.Lock()
	n.closed = true
	started := n.started
	n.mu.Unlock()
	if started {
		n.stop()
		<-n.done
	}
	n.hub.DropAll()
}

// notifyLoop owns the listening connection until ctx ends: it makes it
// (again), keeps its LISTENs those of chans, and waits for notifications,
// which the connection's OnNotification passes to deliver.
func (s *Store) notifyLoop(ctx context.Context) {
	n := &s.notify
	defer close(n.done)
	var conn *pgconn.PgConn
	defer func() {
		if conn != nil {
			closePg(conn)
		}
	}()
	failures := 0
	for ctx.Err() == nil {
		if conn == nil {
			c, err := s.listenConn(ctx)
			if err != nil {
				n.failWaiting(err)
				failures++
				select {
				case <-ctx.Done():
				case <-time.After(min(time.Duration(failures)*100*time.Millisecond, 5*time.Second)):
				}
				continue
			}
			conn, failures = c, 0
		}
		if err := n.syncListens(ctx, conn); err != nil {
			closePg(conn)
			conn = nil
			n.lost()
			continue
		}
		n.mu.Lock()
		if n.dirty {
			n.mu.Unlock()
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, notifyKeepAlive)
		n.wait = cancel
		n.mu.Unlock()
		err := conn.WaitForNotification(wctx)
		timedOut := errors.Is(wctx.Err(), context.DeadlineExceeded)
		n.mu.Lock()
		n.wait = nil
		n.mu.Unlock()
		cancel()
		switch {
		case err == nil || ctx.Err() != nil:
		case timedOut:
			// The check is bounded too: on a connection that hangs (a
			// network that drops packets without a reset) its reply never
			// comes, and waiting for it would leave every listener silent
			// for ever.
			cctx, ccancel := context.WithTimeout(ctx, notifyKeepAlive)
			err := conn.Exec(cctx, "").Close()
			ccancel()
			if err != nil && ctx.Err() == nil {
				closePg(conn)
				conn = nil
				n.lost()
			}
		case wctx.Err() != nil && !conn.IsClosed():
			// Woken to change the LISTENs.
		default:
			closePg(conn)
			conn = nil
			n.lost()
		}
	}
}

// listenConn makes the listening connection, from the pool's settings.
func (s *Store) listenConn(ctx context.Context) (*pgconn.PgConn, error) {
	cfg := s.pool.Config().ConnConfig.Copy()
	pc := cfg.Config
	n := &s.notify
	pc.OnNotification = func(_ *pgconn.PgConn, nt *pgconn.Notification) { n.deliver(nt.Channel, nt.Payload) }
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return pgconn.ConnectConfig(cctx, &pc)
}

func closePg(c *pgconn.PgConn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Close(ctx)
}

// deliver passes one payload of channel name on to its listeners.
func (n *notifier) deliver(name, payload string) {
	msg, ok := n.decodeChunk(n.tag, payload)
	if !ok {
		return
	}
	n.mu.Lock()
	c := n.chans[name]
	n.mu.Unlock()
	if c != nil {
		_ = n.hub.Notify(context.Background(), c.key, msg)
	}
}

// syncListens LISTENs to the channels that have listeners and are not
// listened to yet, and UNLISTENs those that have none any more.
func (n *notifier) syncListens(ctx context.Context, conn *pgconn.PgConn) error {
	n.mu.Lock()
	n.dirty = false
	var sql strings.Builder
	var listen []*pgChannel
	for name, c := range n.chans {
		switch {
		case c.n <= 0:
			if c.listened {
				fmt.Fprintf(&sql, "UNLISTEN %s;", pgx.Identifier{name}.Sanitize())
			}
			delete(n.chans, name)
		case !c.listened:
			fmt.Fprintf(&sql, "LISTEN %s;", pgx.Identifier{name}.Sanitize())
			listen = append(listen, c)
		}
	}
	n.mu.Unlock()
	if sql.Len() == 0 {
		return nil
	}
	if _, err := conn.Exec(ctx, sql.String()).ReadAll(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range listen {
		c.listened = true
		close(c.ready.done)
	}
	return nil
}

// lost is the listening connection gone: every listener is dropped, and
// each channel is to be LISTENed again on the next connection.
func (n *notifier) lost() {
	n.mu.Lock()
	for _, c := range n.chans {
		if c.listened {
			c.listened = false
			c.ready = newReadiness()
		}
	}
	clear(n.parts)
	n.mu.Unlock()
	n.hub.DropAll()
}

// failWaiting answers the Listens waiting for a channel with err: no
// connection could be made.
func (n *notifier) failWaiting(err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.chans {
		if !c.listened {
			c.ready.err = err
			close(c.ready.done)
			c.ready = newReadiness()
		}
	}
}
