package spooltest

import (
	"bufio"
	"os"
	"os/exec"
	"testing"
)

// StartChild runs the test binary again as a child process that runs only
// test (none when test is "": the child's TestMain does the work), with
// env added to its environment (the variable that tells the child what to
// do). StartChild returns once the child printed the line ready, with a
// scanner of the rest of its output (its stderr is the parent's). A child
// that prints anything else first, or nothing, is killed and fails t.
//
// Crash tests use it: the child works, the parent kills it at a chosen or
// random moment and checks what the work left.
func StartChild(t testing.TB, test, ready string, env ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != ready {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child process said %q, not %q (%v)", sc.Text(), ready, sc.Err())
	}
	return cmd, sc
}
