package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	_ "github.com/spool-go/spool/store/memstore"   // memory:
	_ "github.com/spool-go/spool/store/pgstore"    // postgres:, postgresql:
	_ "github.com/spool-go/spool/store/redisstore" // redis:, rediss:
	"github.com/spool-go/spool/store/sqlitestore"
)

// openStore opens the store a URL names, encrypted at rest when
// SPOOL_ENCRYPTION_KEY is set or encrypt (--encrypt) asks for the key file
// (see encrypt.go). Encryption at rest is for the stores that keep data at
// rest on this machine, file: and sqlite:; memory: keeps nothing at rest
// and opens as it is; postgres: and redis: with a key are an error rather
// than a silent plain store. An encrypted store opened without its key, or
// with another key, is refused before anything is written.
func openStore(ctx context.Context, env *environ, rawURL string, encrypt bool) (store.Store, error) {
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

// openWith opens the store at rawURL with protector p (none when nil).
func openWith(ctx context.Context, rawURL string, p seal.Protector) (store.Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return store.Open(ctx, rawURL) // which says what is wrong with it
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
		if p == nil {
			return filestore.Open(u)
		}
		return filestore.Open(u, filestore.WithProtector(p))
	case "sqlite":
		if p == nil {
			return sqlitestore.OpenURL(ctx, u)
		}
		return sqlitestore.OpenURL(ctx, u, sqlitestore.WithProtector(p))
	case "memory":
		return store.Open(ctx, rawURL)
	}
	if p != nil {
		return nil, fmt.Errorf("store %s: encryption at rest (%s or --encrypt) is available for file: and sqlite: stores only; protect a %s: store with the database's own encryption, or unset %s", rawURL, seal.EnvKey, u.Scheme, seal.EnvKey)
	}
	return store.Open(ctx, rawURL)
}

// explainOpen turns the stores' encryption errors into what to do.
func explainOpen(err error, rawURL string, enc encryption) error {
	switch {
	case enc.p == nil && (errors.Is(err, filestore.ErrEncrypted) || errors.Is(err, sqlitestore.ErrProtectorMismatch)):
		return fmt.Errorf("the store %s is encrypted: set %s to its key, or pass --encrypt if its key is in your key file\n  (%w)", rawURL, seal.EnvKey, err)
	case enc.p != nil && (errors.Is(err, filestore.ErrUnencrypted) || errors.Is(err, sqlitestore.ErrProtectorMismatch)):
		return fmt.Errorf("the store %s is not encrypted, and %s asks for encryption; a store cannot be encrypted in place: export it without the key (spool sessions export --all) and import it into a new store with the key\n  (%w)", rawURL, describeKey(enc), err)
	case enc.p != nil && errors.Is(err, seal.ErrWrongKey):
		return fmt.Errorf("the store %s is encrypted with another key than %s (key id %s): wrong key\n  (%w)", rawURL, describeKey(enc), enc.keyID, err)
	}
	return err
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
			return openStore(ctx, env, u.String(), c.encrypt)
		}
	}
	return c.open(ctx, env)
}
