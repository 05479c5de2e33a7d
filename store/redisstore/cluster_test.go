package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/redisstore"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// newClusterStore returns a store on the Redis Cluster whose nodes
// SPOOL_TEST_REDIS_CLUSTER lists (host:port,host:port,…), under a prefix
// of its own that it removes from every primary when the test ends. The
// test is skipped without the variable, except under CI=true, where
// .ci/run starts a cluster and a missing one is a failure.
func newClusterStore(t *testing.T, opts ...redisstore.Option) *redisstore.Store {
	t.Helper()
	addrs := os.Getenv("SPOOL_TEST_REDIS_CLUSTER")
	if addrs == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("SPOOL_TEST_REDIS_CLUSTER is not set and CI=true: the Redis Cluster tests must run (.ci/run starts a cluster)")
		}
		t.Skip("SPOOL_TEST_REDIS_CLUSTER is not set (e.g. 127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002); skipping the Redis Cluster tests")
	}
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
	prefix := randomPrefix()
	s, err := redisstore.New(t.Context(), client, append([]redisstore.Option{redisstore.WithPrefix(prefix)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := client.ForEachMaster(context.Background(), func(ctx context.Context, node *redis.Client) error {
			return unlinkPrefix(node, prefix)
		})
		if err != nil {
			t.Errorf("cleanup: %v", err)
		}
		client.Close()
	})
	return s
}

// The whole suite on Redis Cluster: every script touches one slot only.
func TestClusterConformance(t *testing.T) {
	newClusterStore(t)
	storetest.Run(t, func(t *testing.T) store.Store { return newClusterStore(t) })
}

// Namespaces of different agents and owners land on different primaries, and
// the store still lists, scans and expires them as one.
func TestClusterSpread(t *testing.T) {
	s := newClusterStore(t, redisstore.WithTTL(time.Hour))
	ctx := t.Context()
	cluster := s.Client().(*redis.ClusterClient)
	var want []store.Namespace
	nodes := map[string]bool{}
	for _, owner := range []string{"u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8"} {
		sc := store.Namespace{Agent: "agent", Owner: owner}
		want = append(want, sc)
		entries := storetestAppend(t, s, sc.Key("s"), 3)
		req := approval(storetest.Head(entries), time.Now())
		if err := s.Append(ctx, sc.Key("s"), req); err != nil {
			t.Fatal(err)
		}
		_, _, idx := keyNames(s, sc.Key("s"))
		node, err := cluster.MasterForKey(ctx, idx)
		if err != nil {
			t.Fatal(err)
		}
		nodes[node.Options().Addr] = true
		page, err := s.List(ctx, sc, store.ListOptions{})
		if err != nil || len(page.Sessions) != 1 || page.Sessions[0].PendingApprovals != 1 {
			t.Fatalf("List %v: %+v, %v", sc, page, err)
		}
	}
	if len(nodes) < 2 {
		t.Logf("all namespaces landed on one primary (%v); the spread is not exercised", nodes)
	}
	got, err := s.Namespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Namespaces() on a cluster = %v, want %v", got, want)
	}
}

// WAIT on a cluster runs on the primary of the session's slot.
func TestClusterWait(t *testing.T) {
	s := newClusterStore(t, redisstore.WithWait(1, 50*time.Millisecond))
	key := store.Key{Agent: "agent", Owner: "waiter", ID: "s"}
	e := storetest.NewEntry("", time.Now(), transcript.TypeUserMessage, transcript.UserMessage{Text: "hi"})
	// The test cluster has no replicas, so WAIT 1 cannot be confirmed.
	if err := s.Append(t.Context(), key, e); !errors.Is(err, redisstore.ErrNotDurable) {
		t.Fatalf("append with WAIT 1 on a cluster without replicas: %v, want ErrNotDurable", err)
	}
	if got := readAll(t, s, key); len(got) != 1 {
		t.Fatalf("%d entries, want 1", len(got))
	}
}

// A session's channel is subscribed on the primary that owns its slot,
// the node its messages are published through, and on no other: a
// message reaches another node's subscribers through the cluster bus,
// after the publisher has its reply, so a listener there could get a
// message published before it listened (storetest's Notifier/Isolation,
// seen failing under load with one pub/sub connection for the Store).
func TestClusterListenOnOwner(t *testing.T) {
	s := newClusterStore(t)
	ctx := t.Context()
	cluster := s.Client().(*redis.ClusterClient)
	owners := map[string]string{} // channel → address of its slot's primary
	for i := range 12 {
		key := store.Key{Agent: "agent", Owner: fmt.Sprintf("u%d", i), ID: "s"}
		if _, err := s.Listen(ctx, key); err != nil {
			t.Fatal(err)
		}
		name := redisstore.LiveChannel(s, key)
		node, err := cluster.MasterForKey(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		owners[name] = node.Options().Addr
	}
	if n := len(slices.Compact(slices.Sorted(maps.Values(owners)))); n < 2 {
		t.Fatalf("the channels are on %d primaries: the test needs them spread", n)
	}
	err := cluster.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		subscribed, err := node.PubSubChannels(ctx, "{"+s.Prefix()+":*").Result()
		if err != nil {
			return err
		}
		addr := node.Options().Addr
		for _, name := range subscribed {
			if owners[name] != addr {
				t.Errorf("%s is subscribed on %s, its slot's primary is %s", name, addr, owners[name])
			}
		}
		for name, owner := range owners {
			if owner == addr && !slices.Contains(subscribed, name) {
				t.Errorf("%s is not subscribed on its slot's primary %s (it has %q)", name, addr, subscribed)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
