package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/model"
)

// cli runs the command in-process with stdin and the given environment
// variables, returning its exit status, stdout and stderr.
type cli struct {
	t     *testing.T
	vars  map[string]string
	model model.Model
	sig   chan os.Signal
}

func newCLI(t *testing.T, vars map[string]string) *cli {
	return &cli{t: t, vars: vars, sig: make(chan os.Signal, 1)}
}

func (c *cli) run(stdin string, args ...string) (int, string, string) {
	c.t.Helper()
	var out, errb bytes.Buffer
	env := &environ{
		stdin:      strings.NewReader(stdin),
		stdout:     &out,
		stderr:     &errb,
		getenv:     func(k string) string { return c.vars[k] },
		interrupts: c.sig,
		model:      c.model,
	}
	code := run(context.Background(), env, args)
	return code, out.String(), errb.String()
}

func tempStoreURL(t *testing.T) string {
	return "sqlite:" + filepath.Join(t.TempDir(), "spool.db")
}

func TestMain(m *testing.M) {
	if dir := os.Getenv("SPOOL_TEST_NAIVE_LIST"); dir != "" {
		os.Exit(naiveList(dir, os.Stdout)) // BenchmarkSessionsLsVsNaive's anchor
	}
	os.Exit(spooltest.Main(m))
}

// A library error, which begins "spool: " itself, is printed with the
// command's prefix once.
func TestErrorPrefixOnce(t *testing.T) {
	for err, want := range map[error]string{
		fmt.Errorf("%w (session s)", spool.ErrBusy):     "spool: session busy: another writer is running a turn (session s)\n",
		errors.New("pgstore: read a/s: unexpected EOF"): "spool: pgstore: read a/s: unexpected EOF\n",
	} {
		var errb bytes.Buffer
		if code := exitCode(&environ{stderr: &errb}, err); code != 1 || errb.String() != want {
			t.Errorf("exitCode(%q) printed %q (status %d), want %q (1)", err, errb.String(), code, want)
		}
	}
}
