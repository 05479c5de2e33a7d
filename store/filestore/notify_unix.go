//go:build unix

package filestore

import (
	"context"
	"path/filepath"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/internal/sockbus"
)

// Notifications (store.Notifier) go between the processes sharing the
// root through Unix domain sockets in <root>/+live (package
// store/internal/sockbus; the package documentation's "Notifications").

var _ store.Notifier = (*Store)(nil)

// liveDir is the folder of the sockets, beside the encryption marker: no
// agent's folder starts with '+'.
const liveDir = "+live"

// notifier is the Store's bus, opened at its first Notify or Listen.
type notifier = sockbus.Once

// Notify implements store.Notifier: the Store's listeners get msg at
// once, those of the other Stores and processes on the root through
// their sockets. It never waits for them. A message may be up to
// sockbus.MaxMessage (64 MiB) long.
func (s *Store) Notify(ctx context.Context, key store.Key, msg []byte) error {
	return s.live.Bus(filepath.Join(s.root, liveDir), s.root, ErrClosed).Notify(ctx, key, msg)
}

// Listen implements store.Notifier; it returns once the Store's socket
// is bound (at its first Listen, in a folder it makes 0700).
func (s *Store) Listen(ctx context.Context, key store.Key) (<-chan []byte, error) {
	return s.live.Bus(filepath.Join(s.root, liveDir), s.root, ErrClosed).Listen(ctx, key)
}
