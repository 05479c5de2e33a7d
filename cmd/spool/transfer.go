package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/transfer"
)

func sessionsSearch(ctx context.Context, env *environ, args []string) error {
	var c common
	fs := newFlagSet("search", "spool sessions search QUERY [--session ID] [--limit N] [--json]", env)
	c.register(fs, env)
	session := fs.String("session", "", "search only this session")
	limit := fs.Int("limit", 20, "the most hits")
	asJSON := fs.Bool("json", false, "print the hits as a JSON array")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("sessions search needs a query")
	}
	if *limit < 1 || *limit > store.MaxListLimit {
		return usagef("--limit must be between 1 and %d", store.MaxListLimit)
	}
	ns, err := c.namespace()
	if err != nil {
		return err
	}
	var sk store.Key
	if *session != "" {
		if sk, err = c.key(*session); err != nil {
			return err
		}
	}
	st, err := c.openExisting(ctx, env)
	if err != nil {
		return err
	}
	defer store.Close(st)
	if *session != "" {
		if err := checkSession(ctx, st, sk); err != nil {
			return err
		}
	}
	query := joinArgs(pos)
	hits, err := store.Search(ctx, st, ns, store.SearchQuery{Text: query, Session: *session, Limit: *limit})
	if err != nil {
		return err
	}
	if *asJSON {
		if hits == nil {
			hits = []store.SearchHit{}
		}
		return printJSON(env, hits)
	}
	if len(hits) == 0 {
		fmt.Fprintf(env.stderr, "no matches for %q\n", query)
		return nil
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tTIME\tSNIPPET")
	for _, h := range hits {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", h.SessionID, stamp(h.Time), h.Snippet)
	}
	return tw.Flush()
}

func joinArgs(a []string) string {
	s := ""
	for i, x := range a {
		if i > 0 {
			s += " "
		}
		s += x
	}
	return s
}

func sessionsExport(ctx context.Context, env *environ, args []string) error {
	var c common
	fs := newFlagSet("export", "spool sessions export [--all | ID…] > sessions.jsonl", env)
	c.register(fs, env)
	all := fs.Bool("all", false, "export every session of every agent and user (or of --agent / --user when given)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *all == (len(pos) > 0) {
		return usagef("give session ids or --all (not both)")
	}
	st, err := c.openExisting(ctx, env)
	if err != nil {
		return err
	}
	defer store.Close(st)
	var keys []store.Key
	if *all {
		namespaces, err := namespacesFor(ctx, fs.FlagSet, &c, st)
		if err != nil {
			return err
		}
		if len(namespaces) > 0 { // none: --agent or --user names none the store has (transfer.Sessions would walk them all)
			err = transfer.Sessions(ctx, st, namespaces, func(k store.Key) error {
				keys = append(keys, k)
				return nil
			})
		}
		if err != nil {
			return err
		}
	} else {
		seen := map[store.Key]bool{}
		for _, id := range pos {
			k, err := c.key(id)
			if err != nil {
				return err
			}
			if seen[k] {
				continue // once: an import of the file would conflict with the second copy
			}
			seen[k] = true
			if err := checkSession(ctx, st, k); err != nil {
				return err
			}
			keys = append(keys, k)
		}
	}
	prog := newProgress(env, "exporting", len(keys))
	var total transfer.Stats
	for i, k := range keys {
		s, err := transfer.Export(ctx, env.stdout, st, []store.Key{k})
		if err != nil {
			return err
		}
		total.Sessions += s.Sessions
		total.Entries += s.Entries
		prog.set(int64(i + 1))
	}
	prog.done()
	fmt.Fprintf(env.stderr, "exported %d sessions, %d entries\n", total.Sessions, total.Entries)
	return nil
}

// namespacesFor returns the namespaces --all covers: every namespace of
// the store, or those of the agent and of the user given explicitly, which
// may be none. --user alone is that user's sessions of every agent, as
// --agent alone is that agent's of every user: the agent's default
// ("default") does not narrow it.
func namespacesFor(ctx context.Context, fs *flag.FlagSet, c *common, st store.Store) ([]store.Namespace, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["agent"] || set["user"] {
		if _, err := c.namespace(); err != nil {
			return nil, err
		}
	}
	sl, ok := st.(store.NamespaceLister)
	if !ok {
		if !set["agent"] {
			return nil, fmt.Errorf("this store cannot list its agents and users; name them with --agent (and --user)")
		}
		s, err := c.namespace()
		return []store.Namespace{s}, err
	}
	namespaces, err := sl.Namespaces(ctx)
	if err != nil {
		return nil, err
	}
	var out []store.Namespace
	for _, s := range namespaces {
		if (!set["agent"] || s.Agent == c.agent) && (!set["user"] || s.Owner == c.user) {
			out = append(out, s)
		}
	}
	return out, nil
}

func sessionsImport(ctx context.Context, env *environ, args []string) error {
	var c common
	fs := newFlagSet("import", "spool sessions import < sessions.jsonl", env)
	c.register(fs, env)
	fs.Lookup("agent").Usage = "not taken: each line of the input names its session's agent"
	fs.Lookup("user").Usage = "not taken: each line of the input names its session's owner"
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("sessions import reads stdin and takes no arguments")
	}
	// Each line names its session's agent and owner, and the session goes
	// there: --agent and --user would select nothing, and an import
	// --user bob that brought in every user's sessions would surprise.
	var ignored string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "agent" || f.Name == "user" {
			ignored = f.Name
		}
	})
	if ignored != "" {
		return usagef("sessions import: --%s does not apply: each line of the input names its session's agent and owner, and the session is imported under them", ignored)
	}
	st, err := openTarget(ctx, env, &c)
	if err != nil {
		return err
	}
	defer store.Close(st)
	// The bar follows the bytes of the input when its size is known (a
	// file), and counts sessions when it is not (a pipe).
	in := env.stdin
	var prog *progress
	if f, ok := env.stdin.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			prog = newByteProgress(env, "importing", fi.Size())
			in = &countingReader{r: env.stdin, p: prog}
		}
	}
	if prog == nil {
		prog = newProgress(env, "importing", -1)
	}
	stats, err := transfer.Import(ctx, st, in, func(sessions, _ int) {
		prog.describe(fmt.Sprintf("importing (%d sessions)", sessions))
		if _, bytes := in.(*countingReader); !bytes {
			prog.set(int64(sessions))
		}
	})
	prog.done()
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stderr, "imported %d sessions: %d entries added, %d already there\n%s", stats.Sessions, stats.Entries, stats.Skipped, expiredNote(stats, st))
	return nil
}

// expiredNote is the line that says how many of the sessions written to
// dst were idle longer than its TTL, and so are expired there; empty when
// none were.
func expiredNote(stats transfer.Stats, dst store.Store) string {
	e, ok := dst.(store.Expiring)
	if stats.Expired == 0 || !ok {
		return ""
	}
	return fmt.Sprintf("%d of them had been idle longer than the target's ttl (%s), and are expired there: a new message starts each afresh\n", stats.Expired, e.TTL())
}

func runMigrate(ctx context.Context, env *environ, args []string) error {
	fs := newFlagSet("migrate", "spool migrate --from URL --to URL", env)
	from := fs.String("from", "", "the store to copy from")
	to := fs.String("to", "", "the store to copy into")
	encrypt := fs.Bool("encrypt", false, "encrypt at rest with the key file when SPOOL_ENCRYPTION_KEY is not set")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *from == "" || *to == "" {
		return usagef("migrate needs --from URL and --to URL")
	}
	if *from == *to {
		return usagef("--from and --to name the same store")
	}
	if err := requireStore("--from", *from); err != nil {
		return err
	}
	src, err := openStore(ctx, env, "--from", *from, *encrypt)
	if err != nil {
		return fmt.Errorf("--from: %w", migrateAcross(err, *from, *to))
	}
	defer store.Close(src)
	dst, err := openTarget(ctx, env, &common{storeURL: *to, encrypt: *encrypt, from: "--to"})
	if err != nil {
		return fmt.Errorf("--to: %w", migrateAcross(err, *from, *to))
	}
	defer store.Close(dst)
	// The sessions are listed first (no transcript is read for it), so
	// that the progress has its total.
	var keys []store.Key
	if err := transfer.Sessions(ctx, src, nil, func(k store.Key) error {
		keys = append(keys, k)
		return nil
	}); err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	prog := newProgress(env, "migrating", len(keys))
	stats, err := transfer.Copy(ctx, dst, src, keys, func(sessions, _ int) { prog.set(int64(sessions)) })
	prog.done()
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stderr, "migrated %d sessions: %d entries added, %d already there\n%s", stats.Sessions, stats.Entries, stats.Skipped, expiredNote(stats, dst))
	return nil
}

// migrateAcross adds to the error of a postgres: or redis: store opened
// with a key how to move sessions between it and an encrypted store:
// migrate opens both with the one key, so unsetting it, as the error
// says, would then refuse the encrypted store, which needs it; export
// and import each take their own.
func migrateAcross(err error, from, to string) error {
	if !errors.Is(err, errNotAtRest) {
		return err
	}
	return explained(err, "%v; to move sessions between an encrypted store and this one, export and import them, with %s set (or --encrypt given) only for the encrypted store: spool sessions export --all --store %s > sessions.jsonl, then spool sessions import --store %s < sessions.jsonl", err, seal.EnvKey, shellQuote(redactURL(from)), shellQuote(redactURL(to)))
}
