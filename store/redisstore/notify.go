package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/store"
)

// Notifications (store.Notifier) go through Redis pub/sub.
//
// Each session key has a channel, {P:agent:owner}:s:ID:live:DB (the
// namespace's hash tag, like every key of the session, and the database
// number, since pub/sub is not scoped by database). A Store subscribes on
// one connection of its own (one go-redis PubSub), made on the first
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
// On Redis Cluster, PUBLISH reaches the subscribers of every node, so one
// connection per Store serves every session, and each session's messages
// are published through the node that owns its channel's slot, so that
// they arrive in order (TestClusterConformance); sharded pub/sub (SPUBLISH)
// would keep the traffic on the session's shard, at the cost of a
// connection per shard, and is not used.

var _ store.Notifier = (*Store)(nil)

// notifier is a Store's pub/sub connection and its listeners; the zero
// value is ready.
type notifier struct {
	hub store.Hub

	mu     sync.Mutex
	ps     *redis.PubSub
	chans  map[string]*redisChannel
	sent   map[string]int // subscribe replies to come, by channel
	closed bool
	done   chan struct{}
}

type redisChannel struct {
	key       store.Key
	n         int
	replies   int // subscribe replies to come for this channel before its own
	confirmed bool
	ready     chan struct{} // closed when the subscription is confirmed
}

// liveChannel is key's pub/sub channel.
func (s *Store) liveChannel(key store.Key) string {
	db := 0
	if c, ok := s.c.(*redis.Client); ok {
		db = c.Options().DB
	}
	return keysFor(s.prefix, key.Namespace()).sessionPrefix() + key.ID + ":live:" + strconv.Itoa(db)
}

// Notify implements store.Notifier with PUBLISH on the session's channel.
func (s *Store) Notify(ctx context.Context, key store.Key, msg []byte) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	name := s.liveChannel(key)
	var pub redis.Cmdable = s.c
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		// PUBLISH has no key, so a cluster client sends each to a node
		// of its choosing, and messages through different nodes reach a
		// subscriber out of order. Through the node that owns the
		// channel's slot, every message of a session takes one path.
		node, err := cc.MasterForKey(ctx, name)
		if err != nil {
			return redisError("notify", key, err)
		}
		pub = node
	}
	if err := pub.Publish(ctx, name, msg).Err(); err != nil {
		return redisError("notify", key, err)
	}
	return nil
}

// Listen implements store.Notifier with SUBSCRIBE on the Store's pub/sub
// connection; it returns once Redis confirmed the subscription. The
// channel is closed when ctx ends, when the listener falls
// store.ListenBuffer messages behind, or when the connection dropped and
// came back (what was published meanwhile is lost).
func (s *Store) Listen(ctx context.Context, key store.Key) (<-chan []byte, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := &s.notify
	name := s.liveChannel(key)
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, errors.New("redisstore: listen: the store is closed")
	}
	if n.ps == nil {
		n.ps = s.c.Subscribe(context.Background())
		n.chans = map[string]*redisChannel{}
		n.sent = map[string]int{}
		n.done = make(chan struct{})
		go n.receive(n.ps)
	}
	ps := n.ps
	c := n.chans[name]
	if c == nil {
		// Replies to earlier subscriptions to the channel (by a
		// listener gone since) come first: they do not confirm this one.
		c = &redisChannel{key: key, ready: make(chan struct{}), replies: n.sent[name]}
		// Sent holding mu, so that the channel's SUBSCRIBEs and
		// UNSUBSCRIBEs reach Redis in the order of chans' changes.
		if err := ps.Subscribe(ctx, name); err != nil {
			n.mu.Unlock()
			return nil, redisError("listen", key, err)
		}
		n.chans[name] = c
		n.sent[name]++
	}
	c.n++
	ready := c.ready
	n.mu.Unlock()
	lctx, cancel := context.WithCancel(ctx)
	ch, err := n.hub.Listen(lctx, key)
	context.AfterFunc(lctx, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if c.n--; c.n == 0 && n.chans[name] == c {
			delete(n.chans, name)
			if !n.closed {
				_ = ps.Unsubscribe(context.Background(), name)
			}
		}
	})
	if err != nil {
		cancel()
		return nil, err
	}
	select {
	case <-ready:
		context.AfterFunc(ctx, cancel) // the listener lasts as long as ctx
		return ch, nil
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	}
}

// receive passes the pub/sub connection's messages on until it closes.
func (n *notifier) receive(ps *redis.PubSub) {
	defer close(n.done)
	for m := range ps.ChannelWithSubscriptions(redis.WithChannelSize(store.ListenBuffer)) {
		switch m := m.(type) {
		case *redis.Message:
			n.mu.Lock()
			c := n.chans[m.Channel]
			n.mu.Unlock()
			if c != nil {
				_ = n.hub.Notify(context.Background(), c.key, []byte(m.Payload))
			}
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			n.mu.Lock()
			if n.sent[m.Channel]--; n.sent[m.Channel] <= 0 {
				delete(n.sent, m.Channel)
			}
			c := n.chans[m.Channel]
			var again bool
			if c != nil && c.replies > 0 {
				c.replies--
				c = nil
			}
			if c != nil {
				again = c.confirmed
				if !c.confirmed {
					c.confirmed = true
					close(c.ready)
				}
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

// closeNotify closes the pub/sub connection; listeners' channels close.
func (n *notifier) closeNotify() {
	n.mu.Lock()
	n.closed = true
	ps, done := n.ps, n.done
	n.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
		<-done
	}
	n.hub.DropAll()
}

// redisError names the operation and the session in a failure.
func redisError(op string, key store.Key, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("redisstore: %s %s: %w", op, key, err)
}
