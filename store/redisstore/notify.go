package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/store"
)

// Notifications (store.Notifier) go through Redis pub/sub.
//
// Each session key has a channel, {P:agent:owner}:s:ID:live:DB (the
// namespace's hash tag, like every key of the session, and the database
// number, since pub/sub is not scoped by database). A Store subscribes on
// a connection of its own (one go-redis PubSub), made on the first
// Listen, to the channels that have listeners in the process, and fans
// each message out to them through a store.Hub. Messages are published
// with PUBLISH; the Store's own come back to it like any others, so its
// listeners get them in the same order as everyone.
//
// go-redis reconnects a dropped pub/sub connection and subscribes again;
// what was published meanwhile is lost, so when a channel is confirmed a
// second time its listeners are dropped (their channels closed, as the
// Notifier contract says of a listener that fell behind) and they catch
// up another way.
//
// A connection that hangs (a network that drops its packets without a
// reset: a NAT or a firewall that forgot it, a failover that moved the
// server's address) fails no read, and go-redis's own health check only
// writes a PING, which the socket takes: it would be trusted until TCP
// gave up, and its listeners would hear nothing meanwhile. So the Store
// reads the connection itself: after notifyKeepAlive of silence it sends
// a PING, and a connection that does not answer within notifyKeepAlive
// more is closed and replaced by a new one, subscribed to the same
// channels, whose confirmations drop the listeners as above.
//
// On Redis Cluster a session's messages are published, and its channel
// subscribed, on the primary that owns the channel's slot: a Store has a
// pub/sub connection for each primary its listeners need. PUBLISH reaches
// the subscribers of every node, but those of other nodes through the
// cluster bus, later than the publisher's reply: a message published
// before Listen returned could then reach the new listener, and messages
// published through two nodes could cross
// (TestClusterConformance/Notifier). On the slot's primary a message
// reaches exactly the subscriptions made before it, in order. Sharded
// pub/sub (SPUBLISH) would also keep the traffic off the other nodes, but
// drops subscriptions when slots move, and is not used.
//
// When a primary fails over (its replica promoted, at another address),
// the connection to the old address, refused or hung, never subscribes
// again. So a cluster's pub/sub connection that keeps failing (refused,
// or a new connection's handshake or PING timing out) asks, every
// notifyMoveCheck, which primary owns its channels' slots now (having the
// cluster client read the cluster's state again, which it otherwise does
// only when a command of its own fails, or once a minute), moves the
// channels whose primary changed to that primary's connection, dropping
// their listeners, and closes once it has no channel left. (A connection
// that hangs is first found by the keep-alive check, as any hang.)
//
// No network I/O is done holding the notifier's mutex, which every
// Listen, unlisten and received message takes: on a cluster, a primary
// that hangs would hold up the connections of every other one for as
// long as a dial or a command may take. A connection's own mutex is held
// instead, from the change of the channels it carries out to the
// SUBSCRIBE or UNSUBSCRIBE sent for it, so that a channel's commands
// still reach Redis in the order of those changes.

var _ store.Notifier = (*Store)(nil)

// notifyKeepAlive is how long a pub/sub connection stays silent before
// it is checked with a PING, and how long the PING's answer may take: a
// connection that hung is found, and replaced, within twice that. A
// variable for tests, atomic: a test sets it while the receive loops of
// other tests' stores may still read it.
var notifyKeepAlive atomic.Int64 // a time.Duration

func init() { notifyKeepAlive.Store(int64(30 * time.Second)) }

// keepAlive is notifyKeepAlive.
func keepAlive() time.Duration { return time.Duration(notifyKeepAlive.Load()) }

// notifier is a Store's pub/sub connections and their listeners; the zero
// value is ready.
type notifier struct {
	hub store.Hub

	mu     sync.Mutex
	conns  map[string]*pubsubConn   // by node address ("" off a cluster)
	chans  map[string]*redisChannel // by channel name
	closed bool
}

// pubsubConn is one pub/sub connection and the subscribe replies it has
// to come.
type pubsubConn struct {
	node    redis.UniversalClient // the client that made ps
	addr    string                // node's address, conn's key in notifier.conns
	cluster *redis.ClusterClient  // the Store's client on a cluster, else nil
	done    chan struct{}         // closed when receive returns

	// mu is held while a command goes out on ps, from the change of
	// notifier.chans it carries out on, so that the commands of one
	// channel go in the order of those changes; only this connection
	// waits when its primary hangs. It is taken before notifier.mu,
	// never while holding it, and never with another connection's.
	mu   sync.Mutex
	ps   *redis.PubSub  // replaced by receive when it hung, holding mu and notifier.mu; read holding either, or by receive
	sent map[string]int // subscribe replies to come, by channel; under notifier.mu
}

type redisChannel struct {
	key       store.Key
	conn      *pubsubConn
	n         int
	replies   int // subscribe replies to come for this channel before its own
	confirmed bool
	ready     chan struct{} // closed when the subscription is confirmed, or failed (err)
	err       error         // why its SUBSCRIBE could not be sent, set before ready is closed
}

// settle ends the wait of c's Listens, unless it ended: confirmed (err
// nil), or failed with err. notifier.mu is held.
func (c *redisChannel) settle(err error) {
	if !c.confirmed {
		c.err, c.confirmed = err, true
		close(c.ready)
	}
}

// liveChannel is key's pub/sub channel.
func (s *Store) liveChannel(key store.Key) string {
	db := 0
	if c, ok := s.c.(*redis.Client); ok {
		db = c.Options().DB
	}
	return keysFor(s.prefix, key.Namespace()).sessionPrefix() + key.ID + ":live:" + strconv.Itoa(db)
}

// channelNode is the client that publishes and subscribes channel name,
// and its address: on a cluster, the primary owning the channel's slot;
// otherwise the Store's client, address "".
func (s *Store) channelNode(ctx context.Context, name string) (redis.UniversalClient, string, error) {
	cc, ok := s.c.(*redis.ClusterClient)
	if !ok {
		return s.c, "", nil
	}
	node, err := cc.MasterForKey(ctx, name)
	if err != nil {
		return nil, "", err
	}
	return node, node.Options().Addr, nil
}

// Notify implements store.Notifier with PUBLISH on the session's channel.
// On a cluster, a Notify that fails has the client read the cluster's
// state again, so that the next one reaches the primary of a failover.
func (s *Store) Notify(ctx context.Context, key store.Key, msg []byte) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	name := s.liveChannel(key)
	node, _, err := s.channelNode(ctx, name)
	if err != nil {
		return redisError("notify", key, err)
	}
	if err := node.Publish(ctx, name, msg).Err(); err != nil {
		if cc, ok := s.c.(*redis.ClusterClient); ok && ctx.Err() == nil {
			// The primary may have failed over: PUBLISH went to it
			// directly, and the cluster client, which learns of a
			// failover when a command of its own fails, would not
			// read the cluster's state again for up to a minute.
			cc.ReloadState(ctx)
		}
		return redisError("notify", key, err)
	}
	return nil
}

// Listen implements store.Notifier with SUBSCRIBE on the Store's pub/sub
// connection; it returns once Redis confirmed the subscription. The
// channel is closed when ctx ends, when the listener falls
// store.ListenBuffer messages behind, or when the connection dropped and
// came back or, on a cluster, its primary failed over (what was published
// meanwhile is lost).
func (s *Store) Listen(ctx context.Context, key store.Key) (<-chan []byte, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := &s.notify
	name := s.liveChannel(key)
	node, addr, err := s.channelNode(ctx, name)
	if err != nil {
		return nil, redisError("listen", key, err)
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, errors.New("redisstore: listen: the store is closed")
	}
	c := n.chans[name]
	var conn *pubsubConn // with conn.mu held when the channel is subscribed here
	if c == nil {
		n.mu.Unlock()
		cluster, _ := s.c.(*redis.ClusterClient)
		if conn = n.lockConn(node, addr, cluster); conn == nil {
			return nil, errors.New("redisstore: listen: the store is closed")
		}
		if c = n.chans[name]; c == nil {
			// Replies to earlier subscriptions to the channel (by a
			// listener gone since) come first: they do not confirm
			// this one. Counted before it is sent: receive may read
			// its reply before Subscribe returns.
			c = &redisChannel{key: key, conn: conn, ready: make(chan struct{}), replies: conn.sent[name]}
			n.chans[name] = c
			conn.sent[name]++
		} else {
			conn.mu.Unlock() // another Listen subscribed it meanwhile
			conn = nil
		}
	}
	c.n++
	ready := c.ready
	n.mu.Unlock()
	if conn != nil {
		// A context that ended while conn.mu was awaited (behind another
		// command, or a hung connection's replacement) is not sent with:
		// go-redis writes with its deadline, past, and a write that fails
		// has it close the connection and subscribe again on a new one,
		// dropping every listener of the connection for this Listen.
		err := ctx.Err()
		sent := err == nil
		if sent {
			err = listenSubscribe(ctx, conn.ps, name)
		}
		if err != nil {
			// No reply comes to it. A Listen that joined it meanwhile
			// fails too (c.err), rather than wait for a confirmation
			// that may never come (the connection may be sound: the
			// caller's context ended), and the next Listen subscribes
			// afresh. go-redis closed the connection, as on any failed
			// command, and the replies counted on it are lost too.
			n.mu.Lock()
			if !sent {
				if conn.sent[name]--; conn.sent[name] <= 0 {
					delete(conn.sent, name)
				}
			} else {
				n.lostReplies(conn)
			}
			c.n--
			if n.chans[name] == c {
				delete(n.chans, name)
			}
			c.settle(err)
			n.mu.Unlock()
		}
		conn.mu.Unlock()
		if err != nil {
			return nil, redisError("listen", key, err)
		}
	}
	lctx, cancel := context.WithCancel(ctx)
	ch, err := n.hub.Listen(lctx, key)
	context.AfterFunc(lctx, func() { n.unlisten(c, name) })
	if err != nil {
		cancel()
		return nil, err
	}
	select {
	case <-ready:
		if c.err != nil { // set before ready was closed
			cancel()
			return nil, redisError("listen", key, c.err)
		}
		context.AfterFunc(ctx, cancel) // the listener lasts as long as ctx
		return ch, nil
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	}
}

// listenSubscribe sends a Listen's SUBSCRIBE of a channel new here; tests
// make it fail.
var listenSubscribe = func(ctx context.Context, ps *redis.PubSub, name string) error {
	return ps.Subscribe(ctx, name)
}

// unlisten counts a listener of c, channel name, out, and unsubscribes
// the channel when it was the last one.
func (n *notifier) unlisten(c *redisChannel, name string) {
	n.mu.Lock()
	c.n--
	for c.n == 0 && n.chans[name] == c {
		conn := c.conn
		n.mu.Unlock()
		conn.mu.Lock()
		n.mu.Lock()
		if c.n == 0 && n.chans[name] == c && c.conn == conn { // no Listen came, no move
			delete(n.chans, name)
			closed := n.closed
			n.mu.Unlock()
			if !closed && conn.ps.Unsubscribe(context.Background(), name) != nil {
				n.mu.Lock()
				n.lostReplies(conn) // go-redis closed the connection
				n.mu.Unlock()
			}
			conn.mu.Unlock()
			return
		}
		conn.mu.Unlock()
	}
	n.mu.Unlock()
}

// lockConn is the pub/sub connection to node at addr, made if there is
// none, returned with its mu and n.mu held; nil, with neither, when the
// store is closed. (A connection that move left without channels and
// closed while its mu was awaited is not returned: a new one is made.)
func (n *notifier) lockConn(node redis.UniversalClient, addr string, cluster *redis.ClusterClient) *pubsubConn {
	n.mu.Lock()
	for !n.closed {
		conn := n.connLocked(node, addr, cluster)
		n.mu.Unlock()
		conn.mu.Lock()
		n.mu.Lock()
		if !n.closed && n.conns[addr] == conn {
			return conn
		}
		conn.mu.Unlock()
	}
	n.mu.Unlock()
	return nil
}

// connLocked is the pub/sub connection to node at addr, made (and its
// receive loop started) if there is none. n.mu is held.
func (n *notifier) connLocked(node redis.UniversalClient, addr string, cluster *redis.ClusterClient) *pubsubConn {
	conn := n.conns[addr]
	if conn == nil {
		conn = &pubsubConn{node: node, addr: addr, cluster: cluster, ps: node.Subscribe(context.Background()), sent: map[string]int{}, done: make(chan struct{})}
		if n.conns == nil {
			n.conns = map[string]*pubsubConn{}
			n.chans = map[string]*redisChannel{}
		}
		n.conns[addr] = conn
		go n.receive(conn)
	}
	return conn
}

// notifyMoveCheck is how often a cluster's pub/sub connection that keeps
// failing checks whether its channels' slots moved to another primary.
const notifyMoveCheck = time.Second

// receive passes conn's messages on until it closes. It replaces a
// connection that hung (see notifyKeepAlive), and on a cluster moves the
// channels of a connection that fails to their slots' new primary (see
// move).
func (n *notifier) receive(conn *pubsubConn) {
	defer close(conn.done)
	pinged := false // a PING is unanswered
	failed := 0     // reads failed in a row
	var checked time.Time
	for {
		if failed > 1 && conn.cluster != nil && time.Since(checked) >= notifyMoveCheck {
			checked = time.Now()
			if n.move(conn) {
				return
			}
		}
		// A timeout of ReceiveTimeout's own leaves go-redis's connection
		// be: silence is no failure, and a hung connection is replaced
		// here, with its subscriptions counted.
		m, err := conn.ps.ReceiveTimeout(context.Background(), keepAlive())
		if err != nil {
			if errors.Is(err, redis.ErrClosed) {
				return
			}
			var ne net.Error
			switch {
			case !errors.As(err, &ne) || !ne.Timeout():
				// go-redis closed the connection and makes another,
				// subscribed again, on the next read (an error reply,
				// which leaves the connection be, aside).
				pinged = false
				if !isRedisReply(err) {
					n.mu.Lock()
					n.lostReplies(conn)
					n.mu.Unlock()
				}
				if failed++; failed > 1 {
					time.Sleep(100 * time.Millisecond)
				}
			case !pinged:
				ctx, cancel := context.WithTimeout(context.Background(), keepAlive())
				// A failed write: go-redis reconnects. (When it failed
				// to connect, its handshake timing out on an address
				// that hangs, that is a failure in a row.)
				if pinged = conn.ps.Ping(ctx) == nil; !pinged {
					failed++
					n.mu.Lock()
					n.lostReplies(conn)
					n.mu.Unlock()
				}
				cancel()
			default:
				pinged = false
				if !n.replace(conn) {
					return
				}
			}
			continue
		}
		pinged, failed = false, 0
		switch m := m.(type) {
		case *redis.Message:
			n.mu.Lock()
			c := n.chans[m.Channel]
			n.mu.Unlock()
			if c != nil && c.conn == conn {
				_ = n.hub.Notify(context.Background(), c.key, []byte(m.Payload))
			}
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			n.mu.Lock()
			if conn.sent[m.Channel]--; conn.sent[m.Channel] <= 0 {
				delete(conn.sent, m.Channel)
			}
			c := n.chans[m.Channel]
			if c != nil && c.conn != conn {
				c = nil // a subscription of the channel's earlier node
			}
			var again bool
			if c != nil && c.replies > 0 {
				c.replies--
				c = nil
			}
			if c != nil {
				again = c.confirmed
				c.settle(nil)
			}
			n.mu.Unlock()
			if again {
				// Subscribed again after a reconnection: messages
				// may have been lost.
				n.hub.Drop(c.key)
			}
		}
	}
}

// lostReplies forgets the subscribe replies counted on conn: its
// connection failed, and go-redis, on any failure of a read or a command,
// closes it and makes another (then or on the next use), on which it
// subscribes again the channels still listened to. The replies to come on
// the closed one never will: counted, they would be taken for the lost
// ones by the next Listens of their channels, which would wait until
// their contexts ended, every later Listen of a channel whose listeners
// left before their reply came too. The replies on the new connection
// are not counted: they confirm a waiting Listen, or drop the listeners
// of a confirmed channel (messages may have been lost). n.mu is held.
func (n *notifier) lostReplies(conn *pubsubConn) {
	clear(conn.sent)
	for _, c := range n.chans {
		if c.conn == conn {
			c.replies = 0
		}
	}
}

// isRedisReply reports whether err is an error reply of Redis's, after
// which go-redis keeps the connection.
func isRedisReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// replace closes conn's go-redis PubSub, whose connection hung, and
// gives conn a new one subscribed to conn's channels; their
// confirmations drop the listeners (receive). It reports false when the
// store is closed.
func (n *notifier) replace(conn *pubsubConn) bool {
	conn.mu.Lock()
	defer conn.mu.Unlock()
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return false
	}
	old := conn.ps
	conn.ps = conn.node.Subscribe(context.Background())
	// The replies still to come on the old connection never will: on the
	// new one each channel has one, to its SUBSCRIBE here.
	clear(conn.sent)
	var names []string
	for name, c := range n.chans {
		if c.conn == conn {
			names = append(names, name)
			c.replies = 0
		}
	}
	n.mu.Unlock()
	if len(names) > 0 {
		// Sent holding conn.mu only, as Listen's: the new connection
		// may hang as the old one did. Should it fail to be made,
		// go-redis makes it on a later read or command, and subscribes
		// then the channels still listened to: their replies, like a
		// reconnection's, are not counted, and a channel whose
		// listeners left meanwhile gets none. (Replies on the new
		// connection are read by receive, which called replace: none
		// is read before they are counted.)
		ctx, cancel := context.WithTimeout(context.Background(), keepAlive())
		if conn.ps.Subscribe(ctx, names...) == nil {
			n.mu.Lock()
			for _, name := range names {
				conn.sent[name] = 1
			}
			n.mu.Unlock()
		}
		cancel()
	}
	_ = old.Close()
	return true
}

// move moves conn's channels whose slot another primary owns now (after
// a failover, the replica promoted; conn's address may never answer
// again) to that primary's connection, and reports whether conn was left
// without channels, and closed. Their listeners are dropped (messages
// may have been lost), and a Listen after it waits for the subscription
// on the new primary. It is called while conn fails, and first asks the
// cluster client to read the cluster's state again, for the next call:
// the client learns of the failover otherwise only when a command of its
// own fails.
func (n *notifier) move(conn *pubsubConn) bool {
	conn.cluster.ReloadState(context.Background())
	n.mu.Lock()
	var names []string
	for name, c := range n.chans {
		if c.conn == conn {
			names = append(names, name)
		}
	}
	n.mu.Unlock()
	type owner struct {
		node *redis.Client
		addr string
	}
	moved := map[string]owner{}
	for _, name := range names {
		node, err := conn.cluster.MasterForKey(context.Background(), name)
		if err == nil && node.Options().Addr != conn.addr {
			moved[name] = owner{node, node.Options().Addr}
		}
	}
	if len(moved) == 0 {
		return false
	}
	// By primary, so that each connection gets one SUBSCRIBE.
	to := map[string][]string{}
	for name, o := range moved {
		to[o.addr] = append(to[o.addr], name)
	}
	var dropped []store.Key
	for addr, names := range to {
		t := n.lockConn(moved[names[0]].node, addr, conn.cluster)
		if t == nil {
			return false // closed
		}
		var sent []string
		for _, name := range names {
			c := n.chans[name]
			if c == nil || c.conn != conn {
				continue // its listeners left meanwhile
			}
			c.conn = t
			c.replies = t.sent[name]
			if c.confirmed {
				// Listeners had it: they are dropped, and a Listen
				// waits for the new subscription. (A Listen still
				// waiting for the old one now waits for this one.)
				c.confirmed = false
				c.ready = make(chan struct{})
				dropped = append(dropped, c.key)
			}
			t.sent[name]++ // before it is sent, as Listen's
			sent = append(sent, name)
		}
		n.mu.Unlock()
		if len(sent) > 0 {
			// Sent holding t.mu only, as Listen's; on a failure
			// go-redis subscribes when it connects, a reply not
			// counted.
			ctx, cancel := context.WithTimeout(context.Background(), keepAlive())
			if t.ps.Subscribe(ctx, sent...) != nil {
				n.mu.Lock()
				n.lostReplies(t) // these and those counted before
				n.mu.Unlock()
			}
			cancel()
		}
		t.mu.Unlock()
	}
	n.mu.Lock()
	empty := true
	for _, c := range n.chans {
		if c.conn == conn {
			empty = false
			break
		}
	}
	if empty && n.conns[conn.addr] == conn {
		delete(n.conns, conn.addr)
	} else {
		empty = false
	}
	n.mu.Unlock()
	for _, key := range dropped {
		n.hub.Drop(key)
	}
	if empty {
		_ = conn.ps.Close()
	}
	return empty
}

// closeNotify closes the pub/sub connections; listeners' channels close.
func (n *notifier) closeNotify() {
	n.mu.Lock()
	n.closed = true
	// Copied, not n.conns itself: a move under way when the store closed
	// still takes its connection out of n.conns once its SUBSCRIBE is
	// done, while the loops below wait, without n.mu.
	var pss []*redis.PubSub
	var conns []*pubsubConn
	for _, conn := range n.conns {
		pss = append(pss, conn.ps)
		conns = append(conns, conn)
	}
	// A Listen still waiting for its subscription's confirmation fails
	// now: none will come.
	for _, c := range n.chans {
		c.settle(errNotifyClosed)
	}
	n.mu.Unlock()
	for _, ps := range pss {
		_ = ps.Close()
	}
	for _, conn := range conns {
		<-conn.done
	}
	n.hub.DropAll()
}

// errNotifyClosed: a Listen waiting for its subscription when the
// store closed.
var errNotifyClosed = errors.New("the store is closed")

// redisError names the operation and the session in a failure.
func redisError(op string, key store.Key, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("redisstore: %s %s: %w", op, key, err)
}
