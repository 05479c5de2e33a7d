package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
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

// A failover on Redis Cluster (the primary of a session's slot dies and
// its replica takes over) drops the listeners of the dead primary's
// pub/sub connection, whose address never answers again, and moves its
// channels to the new primary: a new Listen gets messages. The
// connection dialled the dead address for ever, no listener was closed,
// and a new Listen was held on it, silent. A publisher that knew the
// old primary publishes through the new one soon (its Notify failed for
// up to a minute).
func TestClusterFailover(t *testing.T) {
	primary, replica, _ := startFailoverCluster(t, false)
	one := clusterStoreAt(t, "", 0, primary, replica)
	two := clusterStoreAt(t, one.Prefix(), 0, primary, replica)
	ctx := t.Context()
	key := store.Key{Agent: "a", ID: "s"}
	ch := heard(t, one, two, key)

	p := redis.NewClient(&redis.Options{Addr: primary})
	_ = p.Shutdown(ctx).Err() // SHUTDOWN answers by closing the connection
	p.Close()
	takeOver(t, replica)

	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("a message after the failover")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the listener of the dead primary's connection was not closed")
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ch, err := two.Listen(lctx, key)
	if err != nil {
		t.Fatalf("Listen after the failover: %v", err)
	}
	// A publisher that knows the new primary.
	three := clusterStoreAt(t, one.Prefix(), 0, replica)
	if err := three.Notify(ctx, key, []byte("again")); err != nil {
		t.Fatal(err)
	}
	storetest.Receive(t, ch, "again")

	// The first publisher's client had the old primary for the slot,
	// and would for up to a minute (go-redis's state reload interval):
	// a Notify that fails has it read the cluster's state again.
	waitFor(t, 3*time.Second, "a Notify through the old publisher", func() bool {
		return one.Notify(ctx, key, []byte("through one")) == nil
	})
	storetest.Receive(t, ch, "through one")
}

// A failover on Redis Cluster whose old primary's address hangs rather
// than refuses (the host gone without a reset, or cut off by the network)
// is found by the keep-alive check: the listeners of the hung connection
// are dropped and its channels move to the new primary. The connection
// was replaced by one to the same address, which tried it for ever: its
// handshakes' and PINGs' timeouts were taken for silence.
func TestClusterFailoverHung(t *testing.T) {
	// Checked every 500 ms: a PONG slower than the keep-alive on a loaded
	// machine would replace a healthy connection and drop the listener
	// before the failover.
	redisstore.SetNotifyKeepAlive(t, 500*time.Millisecond)
	primary, replica, proxy := startFailoverCluster(t, true)
	one := clusterStoreAt(t, "", 0, primary, replica)
	// Connections to the hung address give up soon (go-redis's
	// handshake on each waits its read timeout, 3 s, more than once).
	two := clusterStoreAt(t, one.Prefix(), 500*time.Millisecond, primary, replica)
	key := store.Key{Agent: "a", ID: "s"}
	ch := heard(t, one, two, key)

	proxy.Freeze(true) // every connection to the old primary hangs, new ones too
	takeOver(t, replica)
	three := clusterStoreAt(t, one.Prefix(), 0, replica)
	storetest.AfterDrop(t, three, two, key, ch, 10*time.Second)
}

// A store closed while a failover moves its channels, their new
// primary hung (its SUBSCRIBE waits its timeout), closes cleanly: Close
// waited for the connections it had listed, in the notifier's own map,
// which move changed once its SUBSCRIBE gave up, unlocked (a data race,
// go test -race failed).
func TestCloseWhileMoving(t *testing.T) {
	redisstore.SetNotifyKeepAlive(t, 5*time.Second)
	primary, replica, direct, proxy := startFailover(t, false, true)
	one := clusterStoreAt(t, "", 0, primary, direct)
	two := clusterStoreAt(t, one.Prefix(), 0, primary, direct)
	key := store.Key{Agent: "a", ID: "s"}
	heard(t, one, two, key)

	proxy.Freeze(true) // the new primary's SUBSCRIBE hangs
	p := redis.NewClient(&redis.Options{Addr: primary})
	_ = p.Shutdown(t.Context()).Err()
	p.Close()
	takeOver(t, direct)
	waitFor(t, 10*time.Second, "a pub/sub connection to the new primary", func() bool {
		return slices.Contains(redisstore.PubSubAddrs(two), replica)
	})
	// Close waits for go-redis's handshake with the hung primary, under
	// way in the receive loop (its read timeout, retried): not bounded
	// here.
	two.Close()
}

// startFailoverCluster starts a Redis Cluster of its own for a failover
// test: one primary, owning every slot, and its replica, on free ports;
// they are shut down when the test ends. With proxied, the primary is
// announced at the address of a proxy, which the test can freeze. The
// test is skipped where redis-server is not installed, and under -short.
func startFailoverCluster(t *testing.T, proxied bool) (primary, replica string, proxy *faultnet.Proxy) {
	t.Helper()
	primary, replica, _, proxy = startFailover(t, proxied, false)
	return primary, replica, proxy
}

// startFailover is startFailoverCluster; with proxiedReplica, the
// replica rather than the primary is behind the proxy, and replica is
// the proxy's address, direct the replica's own.
func startFailover(t *testing.T, proxied, proxiedReplica bool) (primary, replica, direct string, proxy *faultnet.Proxy) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: not starting a Redis Cluster of the test's own")
	}
	start := clusterNodes(t)
	primary, p := start()
	replica, r := start()
	ctx := t.Context()
	if proxied {
		primary, proxy = announceViaProxy(t, primary, p)
	}
	direct = replica
	if proxiedReplica {
		replica, proxy = announceViaProxy(t, replica, r)
	}
	if err := p.ClusterAddSlotsRange(ctx, 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(direct)
	if err := p.ClusterMeet(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	id, err := p.ClusterMyID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the replica to meet the primary", func() bool {
		nodes, err := r.ClusterNodes(ctx).Result()
		return err == nil && strings.Contains(nodes, id)
	})
	if err := r.ClusterReplicate(ctx, id).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the replica to sync", func() bool {
		info, err := r.Info(ctx, "replication").Result()
		if err != nil || !strings.Contains(info, "master_link_status:up") {
			return false
		}
		for _, c := range []*redis.Client{p, r} {
			ci, err := c.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(ci, "cluster_state:ok") {
				return false
			}
		}
		return true
	})
	return primary, replica, direct, proxy
}

// announceViaProxy puts the cluster node at addr, c a client of it,
// behind a proxy, at whose address the node announces itself to the
// cluster's clients (its cluster bus stays direct), and returns that
// address and the proxy.
func announceViaProxy(t *testing.T, addr string, c *redis.Client) (string, *faultnet.Proxy) {
	t.Helper()
	ctx := t.Context()
	proxy, u := faultnet.New(t, "redis://"+addr)
	_, port, _ := net.SplitHostPort(addr)
	bus, _ := strconv.Atoi(port)
	proxied := strings.TrimPrefix(u, "redis://")
	_, announced, _ := net.SplitHostPort(proxied)
	if err := c.ConfigSet(ctx, "cluster-announce-port", announced).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigSet(ctx, "cluster-announce-bus-port", strconv.Itoa(bus+10000)).Err(); err != nil {
		t.Fatal(err)
	}
	return proxied, proxy
}

// clusterNodes returns a function that starts a cluster-enabled
// redis-server on a free port, shut down when the test ends, and returns
// its address and a client for it. The test is skipped where
// redis-server is not installed.
func clusterNodes(t *testing.T) func() (string, *redis.Client) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed; skipping the test of a Redis Cluster of its own")
	}
	dir := t.TempDir()
	return func() (string, *redis.Client) {
		port := freeClusterPort(t)
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--cluster-enabled", "yes", "--cluster-config-file", fmt.Sprintf("nodes-%d.conf", port),
			"--cluster-node-timeout", "1000", "--repl-diskless-sync-delay", "0",
			"--save", "", "--appendonly", "no", "--dir", dir)
		cmd.SysProcAttr = childAttr()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
		addr := "127.0.0.1:" + strconv.Itoa(port)
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { c.Close() })
		waitFor(t, 5*time.Second, "redis-server at "+addr, func() bool { return c.Ping(t.Context()).Err() == nil })
		return addr, c
	}
}

// freeClusterPort is a port free now whose cluster bus port (10000
// above) is free too.
func freeClusterPort(t *testing.T) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		if err != nil {
			continue
		}
		bus.Close()
		return port
	}
	t.Fatal("no free port for a cluster node")
	return 0
}

// clusterStoreAt opens a store on the cluster of addrs, under prefix (a
// new one when empty), with go-redis's dial and read timeouts (when not
// zero) set to timeout.
func clusterStoreAt(t *testing.T, prefix string, timeout time.Duration, addrs ...string) *redisstore.Store {
	t.Helper()
	if prefix == "" {
		prefix = randomPrefix()
	}
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DialTimeout: timeout, ReadTimeout: timeout})
	s, err := redisstore.New(t.Context(), client, redisstore.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		client.Close()
	})
	return s
}

// waitFor polls ok until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// takeOver makes the replica at addr its primary's primary (CLUSTER
// FAILOVER TAKEOVER, which needs no word from the primary) and waits
// until it is.
func takeOver(t *testing.T, addr string) {
	t.Helper()
	ctx := t.Context()
	r := redis.NewClient(&redis.Options{Addr: addr})
	defer r.Close()
	if err := r.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the replica to take over", func() bool {
		info, err := r.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "role:master")
	})
}
