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

	"github.com/spool-go/spool/internal/benchdata"
)

// BenchmarkReplicaCost measures what a turn costs where it scales, on one
// replica and on two (two replicas on two shared cores cannot show scaling
// in their rate): the replicas' CPU, the database's CPU (its backends
// serving the replicas, from /proc), and the round trips and bytes between
// them, counted by a proxy each replica reaches the database through. A
// round trip is a run of bytes from a replica followed by the database's
// answer. Both deployments run side by side, each on a schema of its own:
// rounds of 500 turns (16 requests in flight over 64 sessions, so that on
// two replicas a session's turns move between them) interleaved, and each
// figure is the median of its rounds, reported as one-… and two-….
//
//	SPOOL_TEST_POSTGRES=… go test -run '^$' -bench ReplicaCost -benchtime 1x ./internal/replicatest/
func BenchmarkReplicaCost(b *testing.B) {
	for b.Loop() {
		one, two := newCostRig(b, 1), newCostRig(b, 2)
		ones, twos := benchdata.AB(costRounds, func() costRound { return one.round(b, costTurns) },
			func() costRound { return two.round(b, costTurns) })
		for _, side := range []struct {
			name   string
			rounds []costRound
		}{{"one", ones}, {"two", twos}} {
			med := func(f func(costRound) float64) float64 {
				xs := make([]float64, len(side.rounds))
				for i, r := range side.rounds {
					xs[i] = f(r)
				}
				return benchdata.Median(xs)
			}
			b.ReportMetric(med(func(r costRound) float64 { return r.rate }), side.name+"-turns/s")
			b.ReportMetric(med(func(r costRound) float64 { return r.repCPU }), side.name+"-replica-cpu-µs/turn")
			b.ReportMetric(med(func(r costRound) float64 { return r.dbCPU }), side.name+"-db-cpu-µs/turn")
			b.ReportMetric(med(func(r costRound) float64 { return r.trips }), side.name+"-db-round-trips/turn")
			b.ReportMetric(med(func(r costRound) float64 { return r.bytes }), side.name+"-db-bytes/turn")
		}
	}
}

const (
	costRounds = 6
	costTurns  = 500
)

// costRig is one deployment of the benchmark: its replicas, each behind a
// counting proxy, on a schema of its own.
type costRig struct {
	d       *deployment
	reps    []*replica
	proxies []*countingProxy
	c       *client
}

// costRound is what one round of turns cost, per turn.
type costRound struct {
	rate, repCPU, dbCPU, trips, bytes float64
}

func newCostRig(b *testing.B, replicas int) *costRig {
	r := &costRig{d: newDeployment(b), c: newClient()}
	b.Cleanup(r.c.close)
	for i := range replicas {
		name := string(rune('A' + i))
		p := newCountingProxy(b, r.d.storeURL)
		r.proxies = append(r.proxies, p)
		r.reps = append(r.reps, r.d.startReplicaVia(b, name, p.addr))
	}
	r.send(b, 128) // warm up: connections, prepared statements, the sessions' states
	return r
}

// send runs n turns, 16 in flight, request i on session i%64, worker w on
// replica w%replicas.
func (r *costRig) send(b *testing.B, n int) {
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep := r.reps[w%len(r.reps)]
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				if _, err := r.c.invoke(ctx, rep.URL, fmt.Sprintf("cost-%d", i%64), "hello from the cost benchmark"); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func (r *costRig) repCPU(b *testing.B) (t time.Duration) {
	for _, rep := range r.reps {
		t += procCPU(b, rep.Cmd.Process.Pid)
	}
	return t
}

func (r *costRig) dbCPU(b *testing.B) (t time.Duration) {
	rows, err := r.d.admin.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name LIKE $1`, r.d.app+`\_%`)
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

func (r *costRig) traffic() (trips, bytes int64) {
	for _, p := range r.proxies {
		trips += p.trips.Load()
		bytes += p.bytes.Load()
	}
	return trips, bytes
}

// round runs turns and returns what they cost.
func (r *costRig) round(b *testing.B, turns int) costRound {
	rep0, db0 := r.repCPU(b), r.dbCPU(b)
	trips0, bytes0 := r.traffic()
	start := time.Now()
	r.send(b, turns)
	elapsed := time.Since(start)
	rep1, db1 := r.repCPU(b), r.dbCPU(b)
	trips1, bytes1 := r.traffic()
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(turns) }
	return costRound{
		rate:   float64(turns) / elapsed.Seconds(),
		repCPU: per(rep1 - rep0),
		dbCPU:  per(db1 - db0),
		trips:  float64(trips1-trips0) / float64(turns),
		bytes:  float64(bytes1-bytes0) / float64(turns),
	}
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

// procCPU returns the CPU time process pid has used, or 0 when it is
// gone: the sum of its threads' run time in nanoseconds
// (/proc/PID/task/*/schedstat), where /proc/PID/stat counts in ticks of
// 10 ms, too coarse for a round of a few hundred turns; the ticks where
// schedstat is missing (a kernel without schedstats).
func procCPU(t testing.TB, pid int) time.Duration {
	dir := "/proc/" + strconv.Itoa(pid)
	tasks, err := os.ReadDir(dir + "/task")
	var sum time.Duration
	for _, task := range tasks {
		b, err := os.ReadFile(dir + "/task/" + task.Name() + "/schedstat")
		if err != nil {
			sum = -1
			break
		}
		ns, _ := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
		sum += time.Duration(ns)
	}
	if err == nil && sum >= 0 {
		return sum
	}
	b, err := os.ReadFile(dir + "/stat")
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
