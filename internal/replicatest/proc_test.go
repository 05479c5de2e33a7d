package replicatest

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/store/pgstore/pgtest"
)

func TestMain(m *testing.M) { os.Exit(spooltest.Main(m)) }

// deployment is a fresh schema that replicas share. Each replica's
// connections carry an application_name of the deployment, so the test
// can watch them in pg_stat_activity and check that none outlive it.
type deployment struct {
	storeURL string // pgtest.URL: a fresh schema, dropped when the test ends
	app      string // application_name prefix of every replica's connections
	admin    *pgx.Conn
}

func newDeployment(t testing.TB) *deployment {
	t.Helper()
	storeURL := pgtest.URL(t) // skips (or fails under CI=true) without a database
	u, err := url.Parse(storeURL)
	if err != nil {
		t.Fatal(err)
	}
	d := &deployment{storeURL: storeURL, app: "replicatest_" + strings.TrimPrefix(u.Query().Get("schema"), "spool_test_")}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d.admin, err = pgx.Connect(ctx, pgtest.DatabaseURL(t))
	if err != nil {
		t.Fatalf("connecting to %s: %v", pgtest.Env, err)
	}
	// Registered before any replica's cleanup, so it runs after all of
	// them (cleanups run last first): by then every replica has exited.
	t.Cleanup(func() {
		defer d.admin.Close(context.Background())
		if n := d.waitConnsGone(5 * time.Second); n > 0 {
			t.Errorf("%d database connections of the replicas are still open after they exited", n)
		}
	})
	return d
}

// replicaURL is the store URL one replica gets: the shared schema, and
// an application_name naming the replica.
func (d *deployment) replicaURL(name string) string {
	u, _ := url.Parse(d.storeURL)
	q := u.Query()
	q.Set("application_name", d.app+"_"+name)
	u.RawQuery = q.Encode()
	return u.String()
}

// conns counts the replicas' open connections, and those of them that
// are waiting for an advisory lock. Waiting is read from pg_locks, which
// the releasing backend updates when it grants the lock: a woken waiter's
// wait event in pg_stat_activity lasts until the scheduler runs it.
func (d *deployment) conns(ctx context.Context) (open, waiting int, err error) {
	err = d.admin.QueryRow(ctx, `
		SELECT count(DISTINCT a.pid), count(l.pid)
		FROM pg_stat_activity a
		LEFT JOIN pg_locks l ON l.pid = a.pid AND l.locktype = 'advisory' AND NOT l.granted
		WHERE a.application_name LIKE $1`, d.app+`\_%`).Scan(&open, &waiting)
	return open, waiting, err
}

// waitConnsGone waits until the replicas have no connection left (the
// server notices a dead client's closed socket at once, but asynchronously)
// and returns how many remain.
func (d *deployment) waitConnsGone(max time.Duration) int {
	deadline := time.Now().Add(max)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		open, _, err := d.conns(ctx)
		cancel()
		if err == nil && open == 0 || time.Now().After(deadline) {
			return open
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// replica is one running `spool serve`.
type replica struct {
	*spooltest.Server
	name string
}

// startReplica starts `spool serve` on a free loopback port with the
// deployment's store and the echo model in tool mode auto (so that
// "/call get_time {}" makes a turn with a tool call), plus args, and
// waits until it answers. The replica is stopped (SIGTERM, then SIGKILL
// after 10 seconds) when t ends, and reaped, so no process is left behind.
func (d *deployment) startReplica(t testing.TB, name string, args ...string) *replica {
	t.Helper()
	argv := append([]string{"--store", d.replicaURL(name), "--mode", "auto"}, args...)
	if !hasFlag(args, "--model") {
		argv = append(argv, "--model", "echo")
	}
	srv := spooltest.Serve(t, spooltest.Options{Attr: childAttr(), Stop: syscall.SIGTERM}, argv...)
	r := &replica{Server: srv, name: name}
	// Listening is not all: the store must answer too.
	res, err := http.Get(r.URL + "/v1/sessions?limit=1")
	if err != nil {
		t.Fatalf("replica %s: %v", name, err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("replica %s: GET /v1/sessions: %d\n%s", name, res.StatusCode, r.Stderr.String())
	}
	return r
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}
