// Command spool talks to agents and manages their sessions.
//
//	spool chat                      talk to an agent in the terminal
//	spool sessions ls|show|history|fork|compact|rename|watch|rm|prune|search|export|import
//	spool serve                     the HTTP server
//	spool bench invoke|chat         load-test a server, one of its own or --url
//	spool migrate --from URL --to URL
//	spool keys rotate               re-encrypt a store under a new key
//	spool version                   the version and the commit it was built from
//
// "spool help", -h and --help print the usage of any command or group of
// commands on stdout and exit 0; "spool help sessions ls" is "spool
// sessions ls -h".
//
// chat, serve and the sessions commands take --store URL (or SPOOL_STORE;
// default "file:", the file store in the user's data folder), --agent NAME
// (default "default") and --user ID (user scope); sessions import refuses
// the last two, since each line names its session's agent and owner.
// migrate takes --from and --to, keys rotate --store alone. Exit status: 0 on success, 1 when something
// failed (an unknown session, a store error), 2 for bad flags or arguments.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

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

// command is one node of the command tree: a leaf runs, a group
// dispatches to its subcommands.
type command struct {
	name    string
	summary string
	run     func(context.Context, *environ, []string) error // a leaf
	subs    []*command                                      // a group
}

// commands is the command tree. "help" is not in it: it is understood at
// every level (see dispatch).
var commands = &command{name: "spool", subs: []*command{
	{name: "chat", summary: "talk to an agent in the terminal", run: runChat},
	{name: "sessions", summary: "list, show, watch, fork, compact, rename, search, export, import and delete sessions", subs: []*command{
		{name: "ls", summary: "list sessions, newest activity first", run: sessionsLs},
		{name: "show", summary: "print a session's transcript", run: sessionsShow},
		{name: "history", summary: "print what the next model request would carry", run: sessionsHistory},
		{name: "fork", summary: "copy a session up to one of its turns into a new session", run: sessionsFork},
		{name: "compact", summary: "summarize a session's older turns for the model, keeping every entry", run: sessionsCompact},
		{name: "rename", summary: "give a session a title", run: sessionsRename},
		{name: "watch", summary: "print a session as it grows, answers as they stream (tail -f)", run: sessionsWatch},
		{name: "rm", summary: "delete sessions", run: sessionsRm},
		{name: "prune", summary: "delete sessions beyond a retention policy", run: sessionsPrune},
		{name: "search", summary: "find text across sessions", run: sessionsSearch},
		{name: "export", summary: "write sessions as JSON lines to stdout", run: sessionsExport},
		{name: "import", summary: "read sessions as JSON lines from stdin", run: sessionsImport},
	}},
	{name: "serve", summary: "run the HTTP server", run: runServe},
	{name: "bench", summary: "load-test a server: one it starts, or a running one with --url", subs: []*command{
		{name: "invoke", summary: "POST /invoke in a loop: requests per second and latency percentiles", run: benchMode("invoke")},
		{name: "chat", summary: "POST /chat as an event stream: time to the first byte, the first text and the end", run: benchMode("chat")},
	}},
	{name: "migrate", summary: "copy every session from one store to another", run: runMigrate},
	{name: "keys", summary: "manage the encryption key", subs: []*command{
		{name: "rotate", summary: "re-encrypt a store under a new key", run: keysRotate},
	}},
	{name: "version", summary: "print the version and the commit it was built from", run: runVersion},
}}

// isHelp reports whether an argument asks for help.
func isHelp(a string) bool {
	return a == "-h" || a == "-help" || a == "--help"
}

func run(ctx context.Context, env *environ, args []string) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args = append([]string{"version"}, args[1:]...)
	}
	return exitCode(env, commands.dispatch(ctx, env, nil, args))
}

// dispatch runs the command args name under c. In a group, "help", -h and
// --help print the group's usage on stdout, and "help X …" is "X … -h";
// a group with no command, or an unknown one, is a usage error.
func (c *command) dispatch(ctx context.Context, env *environ, path []string, args []string) error {
	path = append(path, c.name)
	if c.run != nil {
		return c.run(ctx, env, args)
	}
	if len(args) == 0 {
		c.usage(env.stderr, path)
		return &usageError{}
	}
	name := args[0]
	if name == "help" && len(args) > 1 {
		// "spool help sessions ls" is "spool sessions ls -h".
		return c.dispatch(ctx, env, path[:len(path)-1], append(args[1:], "-h"))
	}
	if name == "help" || isHelp(name) {
		c.usage(env.stdout, path)
		return errHelp
	}
	for _, sub := range c.subs {
		if sub.name == name {
			return sub.dispatch(ctx, env, path, args[1:])
		}
	}
	fmt.Fprintf(env.stderr, "%s: unknown command %q\n\n", strings.Join(path, " "), name)
	c.usage(env.stderr, path)
	return &usageError{}
}

// usage lists a group's commands.
func (c *command) usage(w io.Writer, path []string) {
	name := strings.Join(path, " ")
	fmt.Fprintf(w, "usage: %s <command> [flags]\n\ncommands:\n", name)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, sub := range c.subs {
		fmt.Fprintf(tw, "  %s\t%s\n", sub.name, sub.summary)
	}
	if len(path) == 1 {
		fmt.Fprintf(tw, "  help\tthis list; help COMMAND is COMMAND -h\n")
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRun \"%s <command> -h\" for a command's flags.\n", name)
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
	// The library's own errors already begin "spool: ".
	fmt.Fprintln(env.stderr, "spool:", strings.TrimPrefix(err.Error(), "spool: "))
	return 1
}
