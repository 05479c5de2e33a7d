package redisstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// Keyed is an entry and the session it goes to.
type Keyed struct {
	Key   store.Key
	Entry transcript.Entry
}

// BulkAppend appends items in order through the append script, pipelined
// in batches, for loading benchmark data sets: the same writes as Append,
// without a round trip each.
func BulkAppend(ctx context.Context, s *Store, items []Keyed) error {
	if err := appendScript().Load(ctx, s.c).Err(); err != nil {
		return err
	}
	const batch = 1000
	for start := 0; start < len(items); start += batch {
		pipe := s.c.Pipeline()
		for _, it := range items[start:min(start+batch, len(items))] {
			keys, args, err := s.appendArgs(it.Key, it.Entry)
			if err != nil {
				return err
			}
			appendScript().EvalSha(ctx, pipe, keys, args...)
		}
		cmds, err := pipe.Exec(ctx)
		if err != nil {
			return err
		}
		for i, c := range cmds {
			r, _ := c.(interface{ Slice() ([]any, error) }).Slice()
			if len(r) == 0 || r[0] != int64(1) {
				return fmt.Errorf("bulk append of item %d: reply %v", start+i, r)
			}
		}
	}
	return nil
}

// AppendSentTwice runs the append script for e twice with the same
// arguments, as go-redis does when it sends a command again after a
// connection failure, and returns both replies.
func AppendSentTwice(ctx context.Context, s *Store, key store.Key, e transcript.Entry) (first, second []any, err error) {
	keys, args, err := s.appendArgs(key, e)
	if err != nil {
		return nil, nil, err
	}
	if first, err = appendScript().Run(ctx, s.c, keys, args...).Slice(); err != nil {
		return nil, nil, err
	}
	second, err = appendScript().Run(ctx, s.c, keys, args...).Slice()
	return first, second, err
}

// AppendScriptHash and SettleScriptHash are the SHA1s that EVALSHA names
// the append and settle scripts by, for a test proxy to recognise them.
var (
	AppendScriptHash = appendScript().Hash()
	SettleScriptHash = settleScript().Hash()
)

// LoadScripts puts the append and settle scripts in the server's script
// cache, so that go-redis runs them with EVALSHA, never EVAL.
func LoadScripts(ctx context.Context, s *Store) error {
	if err := appendScript().Load(ctx, s.c).Err(); err != nil {
		return err
	}
	return settleScript().Load(ctx, s.c).Err()
}

// LiveChannel is key's pub/sub channel.
func LiveChannel(s *Store, key store.Key) string { return s.liveChannel(key) }

// SetNotifyKeepAlive sets how long a pub/sub connection stays silent
// before it is checked, and its check waits, until the test ends.
func SetNotifyKeepAlive(t testing.TB, d time.Duration) {
	old := notifyKeepAlive.Swap(int64(d))
	t.Cleanup(func() { notifyKeepAlive.Store(old) })
}

// FailListenSubscribe replaces the SUBSCRIBE that a Listen of key on s
// sends, the channel new there, with wait, then err: nil is a SUBSCRIBE
// sent whose confirmation never comes. Other channels are subscribed as
// usual. restore undoes it.
func FailListenSubscribe(s *Store, key store.Key, wait func(), err error) (restore func()) {
	old := listenSubscribe
	listenSubscribe = func(ctx context.Context, ps *redis.PubSub, name string) error {
		if name != s.liveChannel(key) {
			return old(ctx, ps, name)
		}
		wait()
		return err
	}
	return func() { listenSubscribe = old }
}

// Listeners is how many Listens of key s counts, those that wait for
// its subscription's confirmation too.
func Listeners(s *Store, key store.Key) int {
	s.notify.mu.Lock()
	defer s.notify.mu.Unlock()
	if c := s.notify.chans[s.liveChannel(key)]; c != nil {
		return c.n
	}
	return 0
}

// PubSubAddrs are the addresses of s's pub/sub connections.
func PubSubAddrs(s *Store) []string {
	s.notify.mu.Lock()
	defer s.notify.mu.Unlock()
	var addrs []string
	for addr := range s.notify.conns {
		addrs = append(addrs, addr)
	}
	return addrs
}
