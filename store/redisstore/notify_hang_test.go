package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/internal/faultnet"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/redisstore"
	"github.com/spool-go/spool/store/storetest"
)

// On Redis Cluster, a primary that hangs (its host gone without a reset)
// holds up only its own pub/sub connection: Listens to sessions of a
// healthy primary are confirmed, and their messages heard, as promptly
// as ever while the hung connection is checked, replaced and its new
// connections time out. The notifier dialled and subscribed the
// replacement holding the mutex every Listen, unlisten and received
// message takes, so the whole store stalled for the keep-alive each time.
func TestListenWhileAnotherPrimaryHangs(t *testing.T) {
	const keep = time.Second
	redisstore.SetNotifyKeepAlive(t, keep)
	hung, healthy, proxy := startTwoPrimaries(t)
	one := clusterStoreAt(t, "", 0, hung, healthy)
	two := clusterStoreAt(t, one.Prefix(), 0, hung, healthy)
	onHung, onHealthy := ownersOn(t, two, hung, healthy)
	hungKey := store.Key{Agent: "a", Owner: onHung, ID: "s"}
	hungCh := heard(t, one, two, hungKey)
	heard(t, one, two, store.Key{Agent: "a", Owner: onHealthy, ID: "s"})

	proxy.Freeze(true)
	// Long enough for the hung connection to be found (twice the
	// keep-alive) and replaced, more than once.
	deadline := time.Now().Add(5 * keep)
	var slowest time.Duration
	for i := 0; time.Now().Before(deadline); i++ {
		key := store.Key{Agent: "a", Owner: onHealthy, ID: "s" + strconv.Itoa(i)}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		start := time.Now()
		ch, err := two.Listen(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := one.Notify(t.Context(), key, []byte("hi")); err != nil {
			t.Fatal(err)
		}
		storetest.Receive(t, ch, "a message on the healthy primary")
		slowest = max(slowest, time.Since(start))
		cancel() // and unlisten, which takes the same paths
		time.Sleep(20 * time.Millisecond)
	}
	if slowest > keep/2 {
		t.Fatalf("a Listen and a message on the healthy primary took %v while another primary hung (keep-alive %v)", slowest, keep)
	}

	// Nothing was lost on the hung primary either: once it is back, its
	// listener is dropped and a new Listen hears it.
	proxy.Freeze(false)
	storetest.AfterDrop(t, one, two, hungKey, hungCh, 15*time.Second)
}

// startTwoPrimaries starts a Redis Cluster of its own with two
// primaries, each owning half of the slots; the first is announced at
// the address of a proxy, which the test can freeze. The test is skipped
// where redis-server is not installed, and under -short.
func startTwoPrimaries(t *testing.T) (proxied, direct string, proxy *faultnet.Proxy) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: not starting a Redis Cluster of the test's own")
	}
	start := clusterNodes(t)
	first, a := start()
	direct, b := start()
	ctx := t.Context()
	proxy, u := faultnet.New(t, "redis://"+first)
	_, port, _ := net.SplitHostPort(first)
	bus, _ := strconv.Atoi(port)
	proxied = strings.TrimPrefix(u, "redis://")
	_, announced, _ := net.SplitHostPort(proxied)
	if err := a.ConfigSet(ctx, "cluster-announce-port", announced).Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.ConfigSet(ctx, "cluster-announce-bus-port", strconv.Itoa(bus+10000)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.ClusterAddSlotsRange(ctx, 0, 8191).Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.ClusterAddSlotsRange(ctx, 8192, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	host, bport, _ := net.SplitHostPort(direct)
	if err := a.ClusterMeet(ctx, host, bport).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the cluster to form", func() bool {
		for _, c := range []*redis.Client{a, b} {
			ci, err := c.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(ci, "cluster_state:ok") || !strings.Contains(ci, "cluster_known_nodes:2") {
				return false
			}
		}
		return true
	})
	return proxied, direct, proxy
}

// ownersOn returns an owner whose sessions' channels live on the primary
// at first, and one for the primary at second.
func ownersOn(t *testing.T, s *redisstore.Store, first, second string) (string, string) {
	t.Helper()
	cc := s.Client().(*redis.ClusterClient)
	found := map[string]string{}
	for i := 0; i < 1000 && (found[first] == "" || found[second] == ""); i++ {
		owner := fmt.Sprintf("o%d", i)
		node, err := cc.MasterForKey(t.Context(), redisstore.LiveChannel(s, store.Key{Agent: "a", Owner: owner, ID: "s"}))
		if err != nil {
			t.Fatal(err)
		}
		if addr := node.Options().Addr; found[addr] == "" {
			found[addr] = owner
		}
	}
	if found[first] == "" || found[second] == "" {
		t.Fatalf("no owner on each of %s and %s: %v", first, second, found)
	}
	return found[first], found[second]
}
