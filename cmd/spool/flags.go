package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/spool-go/spool/store"
)

var errHelp = errors.New("help shown")

// common holds the flags every command takes.
type common struct {
	storeURL string
	agent    string
	user     string
	encrypt  bool
	from     string // the flag storeURL came from, for messages: "" is --store (or SPOOL_STORE)
}

// storeFlag names where storeURL came from, for a message.
func (c *common) storeFlag() string {
	if c.from != "" {
		return c.from
	}
	return "--store"
}

func (c *common) register(fs *flagSet, env *environ) {
	def := env.getenv("SPOOL_STORE")
	if def == "" {
		def = "file:"
	}
	fs.StringVar(&c.storeURL, "store", def, "store URL: file:, file:/path, memory:, sqlite:/path.db, postgres://…, redis://… (env SPOOL_STORE)")
	fs.StringVar(&c.agent, "agent", "default", "agent name")
	fs.StringVar(&c.user, "user", "", "user id, for user-scoped sessions")
	fs.BoolVar(&c.encrypt, "encrypt", false, "encrypt at rest with the key file when SPOOL_ENCRYPTION_KEY is not set")
}

// namespace checks --agent and --user as store.ValidateNamespace does.
// Its errors name the flag: the store's own call them "agent" and
// "owner", which says nothing of --user.
func (c *common) namespace() (store.Namespace, error) {
	s := store.Namespace{Agent: c.agent, Owner: c.user}
	if !store.ValidID(c.agent) {
		return s, badIDFlag("--agent", c.agent)
	}
	if c.user != "" && !store.ValidID(c.user) {
		return s, badIDFlag("--user", c.user)
	}
	return s, nil
}

// badIDFlag is the usage error of a flag whose value is not an id the
// stores accept, in the stores' words (store.IDProblem).
func badIDFlag(flag, v string) error {
	return usagef("%s", store.IDProblem(flag, v))
}

func (c *common) key(id string) (store.Key, error) {
	s, err := c.namespace()
	if err != nil {
		return store.Key{}, err
	}
	k := s.Key(id)
	if err := store.ValidateKey(k); err != nil {
		return k, usagef("%v", err)
	}
	return k, nil
}

func (c *common) open(ctx context.Context, env *environ) (store.Store, error) {
	return openStore(ctx, env, c.storeFlag(), c.storeURL, c.encrypt)
}

// openExisting opens the store for a command that only reads: a local
// store that does not exist is an error (errNoStore), and is not created.
func (c *common) openExisting(ctx context.Context, env *environ) (store.Store, error) {
	if err := requireStore(c.storeFlag(), c.storeURL); err != nil {
		return nil, err
	}
	return c.open(ctx, env)
}

// openNamespace checks the namespace the flags name, then opens the
// store, which must exist (openExisting).
func (c *common) openNamespace(ctx context.Context, env *environ) (store.Namespace, store.Store, error) {
	ns, err := c.namespace()
	if err != nil {
		return ns, nil, err
	}
	st, err := c.openExisting(ctx, env)
	return ns, st, err
}

// flagSet is a command's flags. It knows where help goes: asked for with
// -h or --help, the usage is printed on stdout (exit 0); after a bad flag,
// on stderr (exit 2).
type flagSet struct {
	*flag.FlagSet
	stdout io.Writer
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name, synopsis string, env *environ) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return &flagSet{FlagSet: fs, stdout: env.stdout}
}

// parse parses flags and positional arguments in any order ("show ID
// --json" and "show --json ID" both work) and returns the positional ones.
// -h, -help or --help anywhere before "--" prints the usage on stdout and
// returns errHelp.
func parse(fs *flagSet, args []string) ([]string, error) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if isHelp(a) {
			fs.SetOutput(fs.stdout)
			fs.Usage()
			return nil, errHelp
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, &usageError{} // flag already printed the problem
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			// Parse stopped at "--", which it takes: everything after
			// it is an argument, flags or not.
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
