// Package sockbus carries a store's notifications (store.Notifier)
// between the processes of one machine that share the store (a file
// store's folder, a SQLite file), through Unix domain sockets. The file
// and SQLite stores use it; it builds on Unix only, and elsewhere those
// stores have no Notifier.
//
// # Sockets
//
// A Bus that listens binds one socket, "PID.RANDOM.sock", in the store's
// socket folder, and keeps it for its life. Notify delivers a message to
// the Bus's own listeners at once (in-process, through a store.Hub) and
// queues it for every other socket of the folder, each over a connection
// of its own that stays open. A socket whose owner is gone (a process
// killed without closing its store) refuses connections
// (ECONNREFUSED) while its process no longer exists: the next Notify
// removes it.
//
// The socket folder is the one the store names (the file store's
// <root>/+live, the SQLite store's <file>-live) unless a socket path in
// it would not fit a socket address (sun_path: 104 bytes on macOS and the
// BSDs, 108 on Linux). Then it is
//
//	$XDG_RUNTIME_DIR/spool-UID/HASH      (os.TempDir() when XDG_RUNTIME_DIR is unset, /tmp when that is too long too)
//
// where UID is the user's id and HASH 16 hex digits of a SHA-256 of the
// store's absolute path (symbolic links resolved), so that every process
// opening the store finds the same folder and two stores never share one.
//
// # Security
//
// Every folder is made 0700 (and a socket 0600), and one that exists is
// used only when it is a folder (not a link) owned by the user (one open
// to others is made 0700): only the user's own processes (and root) can
// connect. Notify writes only to sockets of the user's, never through a
// link, so that nothing another user left in a folder once open to them
// receives a message. Keys never appear on the wire: a message names its key by
// a SHA-256 of its length-framed parts. Payloads are never logged.
//
// # Frames
//
// A connection begins with the 8 bytes "spoolbs1" and carries frames: a
// 4-byte big-endian length, then that many bytes of body, whose first
// byte says what it is:
//
//	'm' HASH(32) PAYLOAD    a message for the key whose hash is HASH
//	'g' HASH(32)...         a gap: messages for these keys were lost (none listed: for any key)
//
// A body is at most MaxMessage bytes of payload and its header.
//
// # Order and bounds
//
// Each connection has a queue of at most store.ListenBuffer frames and
// queueBytes bytes, written by a goroutine of its own, so Notify never
// waits for another process. Messages of one Bus reach each listener in
// the order Notify was called. When a queue is full (the other process
// does not read: it is stopped, or stuck), its messages are discarded
// and a gap frame naming their keys goes next instead: the receiving
// process drops (closes) its listeners of those keys, as the Notifier
// contract says of a listener that fell behind, and they catch up
// another way. A receiving process's listeners fall behind on their own
// as a store.Hub's do. A listening Bus whose socket is removed behind its
// back (a cleaner of temporary files) notices within a second, drops
// its listeners and binds a new socket at the next Listen.
package sockbus
