package replicatest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spool-go/spool/store/pgstore/pgtest"
)

var (
	binDir    string
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// spoolBinary builds cmd/spool once per test binary, only when a test
// gets as far as needing it (not when it skips for want of a database).
func spoolBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "replicatest-")
		if err != nil {
			buildErr = err
			return
		}
		binDir = dir
		binPath = filepath.Join(dir, "spool")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/spool-go/spool/cmd/spool").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/spool: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

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
	name   string
	url    string // http://127.0.0.1:PORT
	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan struct{}
	err    error // of Wait, once exited is closed
}

var servingRE = regexp.MustCompile(`serving agent "[^"]*" on (http://\S+)`)

// startReplica starts `spool serve` on a free loopback port with the
// deployment's store and the echo model in tool mode auto (so that
// "/call get_time {}" makes a turn with a tool call), plus args, and
// waits until it answers. The replica is stopped when t ends.
func (d *deployment) startReplica(t testing.TB, name string, args ...string) *replica {
	t.Helper()
	argv := append([]string{"serve", "--addr", "127.0.0.1:0", "--store", d.replicaURL(name), "--mode", "auto"}, args...)
	if !hasFlag(args, "--model") {
		argv = append(argv, "--model", "echo")
	}
	cmd := exec.Command(spoolBinary(t), argv...)
	cmd.Env = append(os.Environ(), "SPOOL_API_KEY=", "SPOOL_KEYS=", "SPOOL_STORE=", "SPOOL_MODEL=")
	cmd.SysProcAttr = childAttr()
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	r := &replica{name: name, cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.err = cmd.Wait()
		pw.Close()
		close(r.exited)
	}()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			r.stderr.Write([]byte(line + "\n"))
			if m := servingRE.FindStringSubmatch(line); m != nil {
				ready <- m[1]
			}
		}
		io.Copy(io.Discard, pr) // never block the process on a long line
	}()
	t.Cleanup(func() { r.stop(t) })
	select {
	case r.url = <-ready:
	case <-r.exited:
		t.Fatalf("replica %s exited before serving: %v\n%s", name, r.err, r.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("replica %s not serving after 30s:\n%s", name, r.stderr.String())
	}
	// Listening is not all: the store must answer too.
	res, err := http.Get(r.url + "/v1/sessions?limit=1")
	if err != nil {
		t.Fatalf("replica %s: %v", name, err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("replica %s: GET /v1/sessions: %d\n%s", name, res.StatusCode, r.stderr.String())
	}
	return r
}

// stop ends the replica: SIGTERM (a graceful stop, which has nothing left
// to wait for once the test's requests are answered), then SIGKILL if it
// is still running after 10 seconds. It returns once the process has
// been reaped, so no process is left behind.
func (r *replica) stop(t testing.TB) {
	select {
	case <-r.exited:
	default:
		r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("replica %s still running 10s after SIGTERM; killing it", r.name)
			r.cmd.Process.Kill()
			<-r.exited
		}
	}
	if t.Failed() {
		t.Logf("replica %s (%s) stderr:\n%s", r.name, r.url, r.stderr.String())
	}
}

// kill ends the replica at once, as a crash would, and waits until it
// has been reaped.
func (r *replica) kill() {
	r.cmd.Process.Kill()
	<-r.exited
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// lockedBuffer collects a process's output safely.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
