// Package spooltest runs the spool command in tests: it builds the binary
// once per test process and starts `spool serve` on a free loopback port,
// waiting until it listens and stopping it when the test ends, so that no
// process outlives its test.
package spooltest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// Main runs the tests and removes the binary Binary built. Packages that
// use Binary call it from TestMain: os.Exit(spooltest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	return code
}

// Environ is the test process's environment without its SPOOL_*
// variables: every flag of spool serve reads one (SPOOL_ADDR, SPOOL_STORE,
// …), so a developer's own settings must not reach the process under
// test. OTEL_* variables are left out too: a test that wants telemetry
// exported says where.
func Environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SPOOL_") && !strings.HasPrefix(kv, "OTEL_") {
			out = append(out, kv)
		}
	}
	return out
}

// Binary builds cmd/spool once per test process, when a test first needs
// it, and returns its path. It stamps the commit it was built from when
// git can tell (-buildvcs=auto, whatever GOFLAGS says), as go install
// would, so that spool version has something to print.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "spooltest-")
		if err != nil {
			buildErr = err
			return
		}
		binDir = dir
		binPath = filepath.Join(dir, "spool")
		out, err := exec.Command("go", "build", "-buildvcs=auto", "-o", binPath, "github.com/spool-go/spool/cmd/spool").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/spool: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Buffer collects a process's output; it is safe for concurrent use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Options adjust how Serve starts the process.
type Options struct {
	Env  []string             // added to the environment, whose SPOOL_* and OTEL_* variables are left out (Environ)
	Attr *syscall.SysProcAttr // for the process, if set
	// Stop is the signal the test's end sends (default os.Interrupt); the
	// process is killed if it still runs StopWait later (default 10s).
	Stop     os.Signal
	StopWait time.Duration
	// ReadyWait bounds the wait for the process to listen (default 30s).
	ReadyWait time.Duration
}

// Server is a running `spool serve`.
type Server struct {
	URL    string // http://127.0.0.1:PORT
	Cmd    *exec.Cmd
	Stderr *Buffer // everything the process wrote to stderr

	opts   Options
	exited chan struct{}
	err    error
}

var servingRE = regexp.MustCompile(`serving agent "[^"]*" on (http://\S+)`)

// Serve starts `spool serve --addr 127.0.0.1:0` with args and waits until
// it prints the address it listens on. The test's end stops it (Stop).
func Serve(t testing.TB, opts Options, args ...string) *Server {
	t.Helper()
	if opts.Stop == nil {
		opts.Stop = os.Interrupt
	}
	if opts.StopWait <= 0 {
		opts.StopWait = 10 * time.Second
	}
	if opts.ReadyWait <= 0 {
		opts.ReadyWait = 30 * time.Second
	}
	cmd := exec.Command(Binary(t), append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(Environ(), opts.Env...)
	cmd.SysProcAttr = opts.Attr
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	s := &Server{Cmd: cmd, Stderr: &Buffer{}, opts: opts, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = cmd.Wait()
		pw.Close()
		close(s.exited)
	}()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			s.Stderr.Write([]byte(line + "\n"))
			if m := servingRE.FindStringSubmatch(line); m != nil {
				ready <- m[1]
			}
		}
		io.Copy(io.Discard, pr) // never block the process on a long line
	}()
	t.Cleanup(func() {
		s.Stop(t)
		if t.Failed() {
			t.Logf("spool serve stderr:\n%s", s.Stderr.String())
		}
	})
	select {
	case s.URL = <-ready:
	case <-s.exited:
		t.Fatalf("spool serve exited before it listened: %v\n%s", s.err, s.Stderr.String())
	case <-time.After(opts.ReadyWait):
		t.Fatalf("spool serve not listening after %v:\n%s", opts.ReadyWait, s.Stderr.String())
	}
	return s
}

// Exited is closed once the process has exited and been reaped.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Err returns what Wait returned for the process, once Exited is closed.
func (s *Server) Err() error { return s.err }

// Wait waits up to d for the process to exit and returns its exit code,
// or fails the test.
func (s *Server) Wait(t testing.TB, d time.Duration) int {
	t.Helper()
	select {
	case <-s.exited:
	case <-time.After(d):
		t.Fatalf("spool serve still running after %v:\n%s", d, s.Stderr.String())
	}
	if s.err == nil {
		return 0
	}
	if ee, ok := s.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatalf("spool serve: %v", s.err)
	return -1
}

// Stop sends the stop signal and waits for the process, killing it if it
// lingers past StopWait (an error of the test). It returns once the
// process has been reaped; stopping a stopped process does nothing.
func (s *Server) Stop(t testing.TB) {
	select {
	case <-s.exited:
		return
	default:
	}
	s.Cmd.Process.Signal(s.opts.Stop)
	select {
	case <-s.exited:
	case <-time.After(s.opts.StopWait):
		t.Errorf("spool serve still running %v after %v; killing it", s.opts.StopWait, s.opts.Stop)
		s.Kill()
	}
}

// Kill ends the process at once, as a crash would, and waits until it has
// been reaped.
func (s *Server) Kill() {
	s.Cmd.Process.Kill()
	<-s.exited
}
