//go:build !unix

package sqlitestore

// notifier is nothing here: without Unix domain sockets the Store is no
// store.Notifier, and a process follows another's turns through the
// transcript.
type notifier struct{}

func (*notifier) Close() error { return nil }
