package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	_ "github.com/spool-go/spool/store/memstore"   // memory:
	_ "github.com/spool-go/spool/store/pgstore"    // postgres:, postgresql:
	_ "github.com/spool-go/spool/store/redisstore" // redis:, rediss:
	"github.com/spool-go/spool/store/sqlitestore"
)

func init() {
	// go-redis logs every failed dial itself; the command reports the
	// error once, in its own words.
	redis.SetLogger(quietLogger{})
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// errNoStore is a read-only command's store that does not exist.
var errNoStore = errors.New("no store at")

// requireStore fails, without creating anything, when rawURL names a
// store on this machine (file:, sqlite:) that does not exist: read-only
// commands report a mistyped --store instead of creating an empty store
// there. Servers (postgres:, redis:) and memory: are taken as they are.
func requireStore(flag, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil // opening it says what is wrong
	}
	path := u.Opaque
	if path == "" {
		path = u.Path
	} else if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil
		}
		if path == "" {
			if path, err = filestore.DefaultRoot(); err != nil {
				return err
			}
		}
	case "sqlite":
		if path == "" || u.Host != "" {
			return nil
		}
	default:
		return nil
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		hint := flag
		if flag == "--store" {
			hint = "--store or SPOOL_STORE"
		}
		return fmt.Errorf("%w %s (nothing has been saved there; check %s)", errNoStore, path, hint)
	}
	return nil
}

// checkScheme refuses a store URL of a kind no store opens, naming the
// flag it came from and the kinds there are.
func checkScheme(flag, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" {
		return nil // opening it says what is wrong
	}
	for _, s := range store.Schemes() {
		if strings.EqualFold(s, u.Scheme) {
			return nil
		}
	}
	return usagef("%s: no kind of store is called %q; use file:, file:PATH, memory:, sqlite:PATH, postgres://… or redis://…", flag, u.Scheme+":")
}

// openStore opens the store a URL names, encrypted at rest when
// SPOOL_ENCRYPTION_KEY is set or encrypt (--encrypt) asks for the key file
// (see encrypt.go). Encryption at rest is for the stores that keep data at
// rest on this machine, file: and sqlite:; memory: keeps nothing at rest
// and opens as it is; postgres: and redis: with a key are an error rather
// than a silent plain store. An encrypted store opened without its key, or
// with another key, is refused before anything is written.
func openStore(ctx context.Context, env *environ, flag, rawURL string, encrypt bool) (store.Store, error) {
	if err := checkScheme(flag, rawURL); err != nil {
		return nil, err
	}
	enc, err := loadEncryption(env, encrypt)
	if err != nil {
		return nil, err
	}
	st, err := openWith(ctx, rawURL, enc.p)
	if err != nil {
		return nil, explainOpen(err, rawURL, enc)
	}
	return st, nil
}

// errNotAtRest is a store that spool does not encrypt at rest (postgres:,
// redis:) opened with a key: migrate, whose one key is for both of its
// stores, says how to move sessions between such a store and an
// encrypted one instead.
var errNotAtRest = errors.New("spool: encryption at rest is for file: and sqlite: stores only")

// openWith opens the store at rawURL with protector p (none when nil).
func openWith(ctx context.Context, rawURL string, p seal.Protector) (store.Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return store.Open(ctx, rawURL) // which says what is wrong with it
	}
	switch strings.ToLower(u.Scheme) {
	case "file": // a nil p is no protector
		return filestore.Open(ctx, rawURL, filestore.WithProtector(p))
	case "sqlite":
		return sqlitestore.Open(ctx, rawURL, sqlitestore.WithProtector(p))
	case "memory":
		return store.Open(ctx, rawURL)
	}
	if p != nil {
		return nil, explained(errNotAtRest, "store %s: encryption at rest (%s or --encrypt) is available for file: and sqlite: stores only; protect a %s: store with the database's own encryption, or unset %s", redactURL(rawURL), seal.EnvKey, u.Scheme, seal.EnvKey)
	}
	return store.Open(ctx, rawURL)
}

// explainOpen turns the stores' encryption errors into what to do.
func explainOpen(err error, rawURL string, enc encryption) error {
	switch {
	case enc.p == nil && (errors.Is(err, filestore.ErrEncrypted) || errors.Is(err, sqlitestore.ErrProtectorMismatch)):
		return explained(err, "the store %s is encrypted: set %s to its key, or pass --encrypt if its key is in your key file", rawURL, seal.EnvKey)
	case enc.p != nil && (errors.Is(err, filestore.ErrUnencrypted) || errors.Is(err, sqlitestore.ErrProtectorMismatch)):
		return explained(err, "the store %s is not encrypted, and %s asks for encryption; a store cannot be encrypted in place: export it without the key (spool sessions export --all) and import it into a new store with the key", rawURL, describeKey(enc))
	case enc.p != nil && errors.Is(err, seal.ErrWrongKey):
		return explained(err, "the store %s is encrypted with another key than %s (key id %s): wrong key", rawURL, describeKey(enc), enc.keyID)
	}
	return err
}

// explainedError says what to do at the command line instead of what the
// library said (which names Go options); it still wraps the library's
// error for errors.Is.
type explainedError struct {
	msg string
	err error
}

func (e *explainedError) Error() string { return e.msg }
func (e *explainedError) Unwrap() error { return e.err }

func explained(err error, format string, args ...any) error {
	return &explainedError{msg: fmt.Sprintf(format, args...), err: err}
}

func describeKey(enc encryption) string {
	if enc.source == seal.EnvKey {
		return seal.EnvKey
	}
	return "the key file " + enc.source
}

// openTarget opens the store an import or migration writes to. A file
// store there keeps everything: its retention would otherwise delete
// imported sessions beyond the newest 50 as they arrive. Retention set in
// the URL still applies.
func openTarget(ctx context.Context, env *environ, c *common) (store.Store, error) {
	u, err := url.Parse(c.storeURL)
	if err == nil && strings.EqualFold(u.Scheme, "file") {
		q := u.Query()
		if !q.Has("maxSessions") && !q.Has("maxAge") && !q.Has("retention") {
			q.Set("retention", "none")
			u.RawQuery = q.Encode()
			return openStore(ctx, env, c.storeFlag(), u.String(), c.encrypt)
		}
	}
	return c.open(ctx, env)
}
