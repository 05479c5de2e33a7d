// Command spool talks to agents and manages their sessions.
//
//	spool chat                      talk to an agent in the terminal
//	spool sessions ls|show|history|rm|prune|search|export|import
//	spool serve                     the HTTP server
//	spool migrate --from URL --to URL
//	spool keys rotate               re-encrypt a store under a new key
//
// Every command takes --store URL (or SPOOL_STORE; default "file:", the
// file store in the user's data folder), --agent NAME (default "default")
// and --user ID (user scope). Exit status: 0 on success, 1 when something
// failed (an unknown session, a store error), 2 for bad flags or arguments.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spool-go/spool/model"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	env := &environ{
		stdin:  os.Stdin,
		stdout: os.Stdout,
		stderr: os.Stderr,
		getenv: os.Getenv,
	}
	os.Exit(run(ctx, env, os.Args[1:]))
}

// environ is what a command sees of the world, so tests can run commands
// in-process.
type environ struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// interrupts delivers Ctrl-C to chat; nil means the process's SIGINT.
	interrupts <-chan os.Signal
	// model, when set, replaces the model the flags name (for tests).
	model model.Model
}

// usageError is a bad flag or argument: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

const usage = `usage: spool <command> [flags]

commands:
  chat        talk to an agent in the terminal
  sessions    list, show, search, export, import and delete sessions
  serve       run the HTTP server
  bench       load-test a running server (bench invoke)
  migrate     copy every session from one store to another
  keys        manage the encryption key (keys rotate)

Run "spool <command> -h" for a command's flags.
`

func run(ctx context.Context, env *environ, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(env.stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "chat":
		err = runChat(ctx, env, args[1:])
	case "sessions":
		err = runSessions(ctx, env, args[1:])
	case "migrate":
		err = runMigrate(ctx, env, args[1:])
	case "serve":
		err = runServe(ctx, env, args[1:])
	case "bench":
		err = runBench(ctx, env, args[1:])
	case "keys":
		err = runKeys(ctx, env, args[1:])
	case "help", "-h", "-help", "--help":
		fmt.Fprint(env.stdout, usage)
		return 0
	default:
		fmt.Fprintf(env.stderr, "spool: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	return exitCode(env, err)
}

func exitCode(env *environ, err error) int {
	if err == nil {
		return 0
	}
	var ue *usageError
	if errors.As(err, &ue) {
		if ue.msg != "" {
			fmt.Fprintln(env.stderr, "spool:", ue.msg)
		}
		return 2
	}
	if errors.Is(err, errHelp) {
		return 0
	}
	fmt.Fprintln(env.stderr, "spool:", err)
	return 1
}
