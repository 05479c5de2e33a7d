package flock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestLockExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lock")
	ctx := context.Background()
	var held atomic.Int32
	done := make(chan struct{})
	for range 8 {
		go func() {
			for range 20 {
				unlock, err := Lock(ctx, path)
				if err != nil {
					t.Error(err)
					break
				}
				if held.Add(1) != 1 {
					t.Error("two holders at once")
				}
				time.Sleep(50 * time.Microsecond)
				held.Add(-1)
				unlock()
				unlock() // twice is fine
			}
			done <- struct{}{}
		}()
	}
	for range 8 {
		<-done
	}
	if _, err := os.Stat(path); runtime.GOOS != "windows" && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the last unlock left the lock file: %v", err)
	}
}

func TestLockWaitEndsWithContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lock")
	unlock, err := Lock(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock while held: %v, want the context's error", err)
	}
}

// TestLockDiesWithItsProcess: a process killed while it holds the lock
// leaves it free at once.
func TestLockDiesWithItsProcess(t *testing.T) {
	if path := os.Getenv("FLOCK_TEST_HOLD"); path != "" {
		if _, err := Lock(context.Background(), path); err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "s.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockDiesWithItsProcess$")
	cmd.Env = append(os.Environ(), "FLOCK_TEST_HOLD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("helper: %q %v", buf, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if _, err := Lock(ctx, path); err == nil {
		t.Fatal("locked what another process holds")
	}
	cancel()
	cmd.Process.Kill()
	cmd.Wait()
	start := time.Now()
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	unlock, err := Lock(ctx, path)
	if err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
	unlock()
	t.Logf("free %v after the kill", time.Since(start))
}
