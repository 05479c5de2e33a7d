package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spool-go/spool/internal/durable"
	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/store/sqlitestore"
	"github.com/spool-go/spool/store/transfer"
)

// resealer is the capability of the stores that can re-encrypt themselves.
type resealer interface {
	store.Store
	Reseal(ctx context.Context, to seal.Protector, progress func(store.Key, bool)) error
}

var (
	_ resealer = (*filestore.Store)(nil)
	_ resealer = (*sqlitestore.Store)(nil)
)

// keysRotate re-encrypts a store under a new key. The new key is saved
// (synced) before anything is rewritten; each session is rewritten on its
// own, atomically; a crash leaves every session under the old key or the
// new one, and running the same command again finishes the job.
//
// With the key file (no SPOOL_ENCRYPTION_KEY): the new key waits in
// <keyfile>.new (or --new-key-file) while the store is rewritten; then the
// old key is added to <keyfile>.old and the new one replaces the key file.
// With SPOOL_ENCRYPTION_KEY: --new-key-file PATH is required; the new key
// is saved there, and the user sets the variable to it afterwards.
func keysRotate(ctx context.Context, env *environ, args []string) error {
	flags := newFlagSet("keys rotate", "spool keys rotate [--store URL] [--new-key-file PATH]", env)
	def := env.getenv("SPOOL_STORE")
	if def == "" {
		def = "file:"
	}
	storeURL := flags.String("store", def, "the store to re-encrypt: file:… or sqlite:… (env SPOOL_STORE)")
	newKeyFile := flags.String("new-key-file", "", "where the new key is saved before anything is rewritten (default <keyfile>.new; required with "+seal.EnvKey+"); an existing file's key is used, which is how an interrupted rotation resumes")
	pos, err := parse(flags, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("keys rotate takes no arguments (got %q)", pos[0])
	}
	u, err := url.Parse(*storeURL)
	if err != nil || (!strings.EqualFold(u.Scheme, "file") && !strings.EqualFold(u.Scheme, "sqlite")) {
		return usagef("keys rotate works on file: and sqlite: stores, the ones encrypted at rest (got %q)", redactURL(*storeURL))
	}

	// The keys the store may be under now, and where the new one goes.
	var (
		old      []seal.Protector // the current key first
		keyFile  string           // "" for SPOOL_ENCRYPTION_KEY users
		oldKey   []byte           // the key file's key, for <keyfile>.old
		newPath  = *newKeyFile
		fromEnv  bool
		envValue []byte
	)
	if envValue, fromEnv, err = envKey(env); err != nil {
		return err
	}
	if fromEnv {
		if newPath == "" {
			return usagef("with %s set, give --new-key-file PATH: the new key is saved there before anything is re-encrypted, and you set %s to it afterwards", seal.EnvKey, seal.EnvKey)
		}
		a, err := seal.NewAEAD(envValue)
		if err != nil {
			return err
		}
		old = append(old, a)
		oldKey = envValue
	} else {
		if keyFile, err = seal.DefaultKeyFile(); err != nil {
			return err
		}
		if _, err := os.Stat(keyFile); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no key to rotate: %s is not set and there is no key file at %s", seal.EnvKey, keyFile)
		}
		if oldKey, err = seal.LoadOrCreateKeyFile(keyFile); err != nil {
			return err
		}
		if newPath == "" {
			newPath = keyFile + keyFileNew
		}
		olds, err := readOldKeys(keyFile + keyFileOld)
		if err != nil {
			return err
		}
		for _, k := range append([][]byte{oldKey}, olds...) {
			a, err := seal.NewAEAD(k)
			if err != nil {
				return err
			}
			old = append(old, a)
		}
	}
	if abs, _ := filepath.Abs(newPath); keyFile != "" && abs == keyFile {
		return usagef("--new-key-file must not be the key file itself")
	}
	if err := checkRotatable(ctx, *storeURL, u, old, newPath, keyFile); err != nil {
		return err
	}

	// 1. The new key, durable before anything is sealed with it.
	newKey, err := seal.LoadOrCreateKeyFile(newPath)
	if err != nil {
		return fmt.Errorf("saving the new key: %w", err)
	}
	if bytes.Equal(newKey, oldKey) {
		if keyFile == "" || newPath != keyFile+keyFileNew {
			return fmt.Errorf("the key in %s is the current key; give another --new-key-file", newPath)
		}
		// A rotation that installed its key and stopped before removing
		// the pending file: start a new one.
		if err := os.Remove(newPath); err != nil {
			return err
		}
		if newKey, err = seal.LoadOrCreateKeyFile(newPath); err != nil {
			return fmt.Errorf("saving the new key: %w", err)
		}
	}
	to, err := seal.NewAEAD(newKey)
	if err != nil {
		return err
	}

	// 2. Every session, under the keyring of the new key and the old ones.
	ring, err := seal.NewKeyring(to, old...)
	if err != nil {
		return err
	}
	st, err := openWith(ctx, *storeURL, ring)
	if err != nil {
		return explainOpen(err, *storeURL, encryption{p: ring, source: describeSource(keyFile), keyID: old[0].(*seal.AEAD).KeyID()})
	}
	defer store.Close(st)
	rs, ok := st.(resealer)
	if !ok {
		return fmt.Errorf("store %s cannot re-encrypt itself", *storeURL)
	}
	// Counted first (listing reads no transcript), for the progress's
	// total; a store that cannot list its namespaces gets a counter.
	total := 0
	if err := transfer.Sessions(ctx, st, nil, func(store.Key) error { total++; return nil }); err != nil {
		total = -1
	}
	prog := newProgress(env, "re-encrypting", total)
	rewritten, already := 0, 0
	err = rs.Reseal(ctx, to, func(_ store.Key, done bool) {
		if done {
			rewritten++
		} else {
			already++
		}
		prog.set(int64(rewritten + already))
	})
	prog.done()
	if err != nil {
		return fmt.Errorf("re-encrypting %s stopped after %d sessions (every session is whole, under the old key or the new one; run the same command again to finish): %w", *storeURL, rewritten, err)
	}

	// 3. Install the new key.
	if keyFile != "" {
		if err := installKey(keyFile, newPath, oldKey, newKey); err != nil {
			return fmt.Errorf("the store is re-encrypted under the key in %s, but installing it as the key file failed (run the same command again): %w", newPath, err)
		}
		fmt.Fprintf(env.stdout, "re-encrypted %d sessions of %s (%d were under the new key already) under key id %s.\n", rewritten, *storeURL, already, to.KeyID())
		fmt.Fprintf(env.stdout, "The key file %s now holds the new key. The keys it held before are kept in %s for other stores and backups still under them; delete that file once none is.\n", keyFile, keyFile+keyFileOld)
		fmt.Fprintln(env.stdout, restartNote)
		return nil
	}
	fmt.Fprintf(env.stdout, "re-encrypted %d sessions of %s (%d were under the new key already) under key id %s.\n", rewritten, *storeURL, already, to.KeyID())
	fmt.Fprintf(env.stdout, "The store now opens only with the new key, saved in %s. Set %s to it, e.g.\n  export %s=\"$(cat %s)\"\nthen keep that file somewhere safe or delete it: it is the key.\n", newPath, seal.EnvKey, seal.EnvKey, newPath)
	fmt.Fprintln(env.stdout, restartNote)
	return nil
}

// restartNote is the last thing a rotation says: a process that opened the
// store before it keeps its old key and writes with it.
const restartNote = "Restart every server or other spool process that had this store open: until then it writes with the old key (running the rotation again re-encrypts what it wrote)."

// checkRotatable checks, before a new key is made, that the store exists,
// opens with the keys at hand (the current ones, and a pending new one
// when a rotation was interrupted) and holds sessions: rotating a store
// named by mistake would make a key for nothing, or an empty store.
func checkRotatable(ctx context.Context, rawURL string, u *url.URL, old []seal.Protector, newPath, keyFile string) error {
	if strings.EqualFold(u.Scheme, "sqlite") {
		path := u.Path
		if u.Opaque != "" {
			path, _ = url.PathUnescape(u.Opaque)
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("no store to re-encrypt at %s: %w", rawURL, err)
		}
	}
	keys := old
	if pending, err := readKeyIfExists(newPath); err != nil {
		return err
	} else if pending != nil {
		a, err := seal.NewAEAD(pending)
		if err != nil {
			return err
		}
		keys = append([]seal.Protector{a}, old...)
	}
	ring, err := seal.NewKeyring(keys[0], keys[1:]...)
	if err != nil {
		return err
	}
	st, err := openWith(ctx, rawURL, ring)
	if err != nil {
		return explainOpen(err, rawURL, encryption{p: ring, source: describeSource(keyFile), keyID: old[0].(*seal.AEAD).KeyID()})
	}
	defer store.Close(st)
	sl, ok := st.(store.NamespaceLister)
	if !ok {
		return fmt.Errorf("store %s cannot list its sessions", rawURL)
	}
	namespaces, err := sl.Namespaces(ctx)
	if err != nil {
		return err
	}
	if len(namespaces) == 0 {
		return fmt.Errorf("the store %s holds no sessions: nothing to re-encrypt (is --store the store you mean?)", rawURL)
	}
	return nil
}

func describeSource(keyFile string) string {
	if keyFile == "" {
		return seal.EnvKey
	}
	return keyFile
}

// installKey makes the new key the key file's: the old key goes first into
// <keyfile>.old (unless it is there), then the new key replaces the key
// file, then the pending file goes. Each step is durable before the next,
// and at every moment the files hold every key some store may be under.
func installKey(keyFile, newPath string, oldKey, newKey []byte) error {
	olds, err := readOldKeys(keyFile + keyFileOld)
	if err != nil {
		return err
	}
	known := false
	for _, k := range olds {
		known = known || bytes.Equal(k, oldKey)
	}
	if !known {
		var b strings.Builder
		b.WriteString(seal.EncodeKey(oldKey) + "\n")
		for _, k := range olds {
			b.WriteString(seal.EncodeKey(k) + "\n")
		}
		if err := durable.WriteFile(keyFile+keyFileOld, []byte(b.String()), 0o600); err != nil {
			return err
		}
	}
	if err := durable.WriteFile(keyFile, []byte(seal.EncodeKey(newKey)+"\n"), 0o600); err != nil {
		return err
	}
	if newPath == keyFile+keyFileNew {
		if err := os.Remove(newPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return durable.SyncDir(filepath.Dir(newPath))
	}
	return nil
}
