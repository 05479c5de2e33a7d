package replicatest

import (
	"context"
	"fmt"

	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkReplicaCost measures what a turn costs where it scales, on one
// replica and on two (two replicas on two shared cores cannot show scaling
// in their rate): the replicas' CPU, the database's CPU (its backends
// serving the replicas, from /proc), and the round trips and bytes between
// them, counted by a proxy each replica reaches the database through. A
// round trip is a run of bytes from a replica followed by the database's
// answer. 16 requests in flight over 64 sessions, 1,200 turns per run.
//
//	SPOOL_TEST_POSTGRES=… go test -run '^$' -bench ReplicaCost -benchtime 1x ./internal/replicatest/
func BenchmarkReplicaCost(b *testing.B) {
	for _, replicas := range []int{1, 2} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			for b.Loop() {
				replicaCost(b, replicas, 1200)
			}
		})
	}
}

func replicaCost(b *testing.B, replicas, turns int) {
	d := newDeployment(b)
	var (
		reps    []*replica
		proxies []*countingProxy
	)
	for i := range replicas {
		name := string(rune('A' + i))
		p := newCountingProxy(b, d.storeURL)
		proxies = append(proxies, p)
		reps = append(reps, d.startReplicaVia(b, name, p.addr))
	}
	c := newClient()
	defer c.close()
	ctx := context.Background()
	send := func(n int) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rep := reps[w%len(reps)]
				for {
					i := next.Add(1) - 1
					if i >= int64(n) {
						return
					}
					if _, err := c.invoke(ctx, rep.URL, fmt.Sprintf("cost-%d", i%64), "hello from the cost benchmark"); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	send(128) // warm up: connections, prepared statements, the sessions' states
	repCPU := func() (t time.Duration) {
		for _, r := range reps {
			t += procCPU(b, r.Cmd.Process.Pid)
		}
		return t
	}
	dbCPU := func() (t time.Duration) {
		rows, err := d.admin.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name LIKE $1`, d.app+`\_%`)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var pid int
			rows.Scan(&pid)
			t += procCPU(b, pid)
		}
		return t
	}
	rep0, db0 := repCPU(), dbCPU()
	var trips0, bytes0 int64
	for _, p := range proxies {
		trips0 += p.trips.Load()
		bytes0 += p.bytes.Load()
	}
	start := time.Now()
	send(turns)
	elapsed := time.Since(start)
	rep1, db1 := repCPU(), dbCPU()
	var trips1, bytes1 int64
	for _, p := range proxies {
		trips1 += p.trips.Load()
		bytes1 += p.bytes.Load()
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(turns) }
	b.ReportMetric(float64(turns)/elapsed.Seconds(), "turns/s")
	b.ReportMetric(per(rep1-rep0), "replica-cpu-µs/turn")
	b.ReportMetric(per(db1-db0), "db-cpu-µs/turn")
	b.ReportMetric(float64(trips1-trips0)/float64(turns), "db-round-trips/turn")
	b.ReportMetric(float64(bytes1-bytes0)/float64(turns), "db-bytes/turn")
}

// startReplicaVia starts a replica whose database connections go to addr.
func (d *deployment) startReplicaVia(t testing.TB, name, addr string) *replica {
	orig := d.storeURL
	u, _ := url.Parse(orig)
	u.Host = addr
	d.storeURL = u.String()
	defer func() { d.storeURL = orig }()
	return d.startReplica(t, name)
}

// procCPU returns the CPU time (user and system) process pid has used, or
// 0 when it is gone.
func procCPU(t testing.TB, pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// countingProxy forwards TCP connections to the database and counts the
// bytes both ways and the round trips.
type countingProxy struct {
	addr  string
	trips atomic.Int64
	bytes atomic.Int64
}

func newCountingProxy(t testing.TB, storeURL string) *countingProxy {
	u, err := url.Parse(storeURL)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			var last atomic.Int32 // 1: the client spoke last, 2: the server
			pipe := func(dst, src net.Conn, me int32) {
				defer wg.Done()
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					if n > 0 {
						p.bytes.Add(int64(n))
						if prev := last.Swap(me); me == 2 && prev == 1 {
							p.trips.Add(1)
						}
						if _, werr := dst.Write(buf[:n]); werr != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				dst.Close()
				src.Close()
			}
			wg.Add(2)
			go pipe(server, client, 1)
			go pipe(client, server, 2)
		}
	}()
	return p
}
