package sqlitestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spool-go/spool/internal/flock"
	"github.com/spool-go/spool/store"
)

// Lock takes the session's turn lock (store.Locker): an exclusive OS file
// lock on a file of its own in the folder <database>.locks beside the
// database, named by a hash of the key. It excludes every other holder in
// this process and in every process on the machine that opens the same
// database file, and the OS releases it when the holding process dies, so
// a session whose process was killed mid-turn can be continued at once
// (the runtime, holding the lock, closes the dead turn as cancelled rather
// than waiting out the stale-turn limit). It waits until the lock is free
// or ctx is done. Processes on other machines sharing the file through a
// network file system are not excluded: SQLite's own locking is not
// reliable there either.
func (s *Store) Lock(ctx context.Context, key store.Key) (func(), error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	dir := s.path + ".locks"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	h := sha256.Sum256([]byte(key.Agent + "\x00" + key.Owner + "\x00" + key.ID))
	unlock, err := flock.Lock(ctx, filepath.Join(dir, hex.EncodeToString(h[:16])+".lock"))
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: session %s: %w", key, err)
	}
	return unlock, nil
}

var _ store.Locker = (*Store)(nil)
