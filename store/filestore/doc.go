// Package filestore is spool's default store: one JSON-lines file per
// session, on the device, that any program can read.
//
// Open it with New(ctx, root), or with store.Open and a "file:" URL (see Open):
// "file:" is DefaultRoot, spool/sessions in the user's data folder
// ($XDG_DATA_HOME or ~/.local/share on Linux and the BSDs, ~/Library/Application
// Support on macOS, %LOCALAPPDATA% on Windows).
//
// # Layout
//
//	<root>/<agent>/<id>.jsonl                 a project-scope session
//	<root>/<agent>/users/<owner>/<id>.jsonl   a user-scope session
//	<folder>/.index                           the listing index of the folder's sessions
//	<folder>/<id>.jsonl.torn                  torn last lines set aside (see below)
//	<folder>/<id>.jsonl.off                   sparse offsets for range reads
//	<folder>/<id>.jsonl.lock                  the session's turn lock (Locker)
//	<root>/+encryption                        the encryption marker of an encrypted store
//	<root>/+live/PID.RANDOM.sock              a listening Store's socket (see Notifications)
//
// Each line of a transcript is one entry in exactly the transcript wire
// shape (transcript.AppendLine), so a transcript written by another program
// in that shape is read too; blank lines are skipped. Only names ending in
// ".jsonl" are transcripts, and every other file ends in another suffix, so
// no session id can name the index, the users folder or another session's
// file. Ids are validated (store.ValidateKey) before any path is built, so
// no key reaches outside the root. Folders are made 0700 and files 0600,
// whatever the umask (on Windows they inherit the ACL of their folder,
// which under %LOCALAPPDATA% is the user's own).
//
// # Durability
//
// When Append returns nil, the entry's line has been written and fdatasync'd
// (F_FULLFSYNC on macOS, FlushFileBuffers on Windows), and when the append
// created the file, its folder has been synced too (package internal/durable
// holds these calls and says what each guarantees): the entry survives the
// process being killed (kill -9) and the machine losing power, on a disk
// that honours cache flushes. When Append returns an error, nothing was
// acknowledged and the store cut the line off again (or, if even that
// failed, the next open sets it aside as a torn line). Delete syncs the
// folder, so a deleted session does not come back after a crash.
//
// An entry's line may be up to transcript.MaxLineSize bytes, as
// transcript.Decoder reads; Append refuses a longer one with
// store.ErrInvalidEntry.
//
// A crash in the middle of an append can leave a last line without its
// newline (a torn write). The next open of the session under its exclusive
// lock notices it, appends the fragment to <id>.jsonl.torn (synced) and
// cuts the transcript back to its last complete line; nothing is destroyed
// and no complete line is ever lost. A last line that is a whole entry
// lacking only its newline, as other programs may write, gets its newline
// instead.
//
// A complete line that does not decode (garbage, JSON that is not an entry,
// a sealed line that does not open) fails Read with a *store.CorruptError
// (store.ErrCorrupt) naming the file, the line and the entry's position. It
// is never skipped; other sessions list and read as before. So does a
// broken chain (storekit.CheckChain): an entry whose parentId is not the id of
// the entry before it, which is what a removed, moved or replaced line
// leaves, or a first entry with a parent. ReadRange and ReadTail check the
// links within what they return. A parentId left out, as other programs may
// write, is accepted.
//
// The index, the offsets and the lock files are derived data and are not
// synced: after a crash they are checked against the transcripts and
// rebuilt where they disagree (see Listing).
//
// # Concurrency
//
// Every append takes an exclusive OS file lock (flock on Unix, LockFileEx on
// Windows) on the transcript, checks the entry's parent against the session's
// last entry and writes under it; reads take the shared lock. So appends from
// any number of goroutines and processes never interleave one session, a
// conditional append is checked against what is on disk, and a reader never
// sees half an append. Locker holds a separate lock per session for a whole
// turn. Between appends a Store keeps a few recently appended transcripts
// open, unlocked (not on Windows; see handles.go), and checks at the next
// append that the file still has its name. A Delete waits for the appends and reads in progress; an append
// that waited on a deleted file starts over on the new one.
//
// Every wait for a session's lock (the transcript's, the turn lock, and
// this process's queue for them) ends when the call's context does. A wait
// that its context can end polls the lock without blocking, at intervals
// growing from 1ms to 50ms, so an abandoned wait leaves no goroutine and
// no open file behind; a context that can never end (context.Background)
// waits in the blocking call, which wakes as soon as the lock is free.
// Two waits do not watch the context, both short unless a process stops
// while holding what they wait for: for the index file's lock, which a
// process holds only while it appends a record or rewrites the index, and
// for another goroutine of the same Store that is bringing the namespace's
// index up to date.
//
// # Listing
//
// Each folder of sessions has an index, ".index", with every session's
// SessionInfo and its transcript's size and mtime, so List reads no
// transcript. Appends and deletes add a record to the index (not synced: it
// is derived data); a process rewrites it when superseded records pile up.
// Read needs no index, and an append reads the index's records but does
// not compare the folder. Only the first append of a burst to a session
// writes its record, with a mark saying that the Store appends to it
// without records; the record follows once the session has been idle for
// a moment, and at Close (pending.go). So an append in a burst is the
// transcript's lock, an fstat, the write, its fdatasync and the unlock,
// and other processes compare just the marked sessions with their
// transcripts before they list.
//
// The index also says who may have left it behind (marks.go): a Store that
// writes holds a lock on <root>/+writer.<nonce> for its life, names it in
// each namespace's index before its first change there (synced), and says
// when it is done at Close; and every change this package makes to a
// folder (a transcript made or removed) records the folder's mtime after
// it. So the first List of a namespace in a process proves the index
// current with a stat of the folder and a lock attempt per live writer,
// whatever the number of sessions, and compares every session with its
// transcript only when that fails. A first page asked of a namespace the
// Store has not loaded is chosen from the index file without loading it,
// parsing only the page's records (coldlist.go); a rewrite writes the
// records in listing order, so that it reads the records appended since
// and, of the sorted ones, only the page's.
//
// What another writer's changes look like:
//
//   - Another process using this package: its appends and deletes are in
//     the index when they return (a burst's later appends as the mark on
//     their session), and every List, Stat and append first applies the
//     records added since (one stat when there are none) and compares the
//     marked sessions with their transcripts (a stat each).
//   - A process using this package killed, or a power loss: the writer it
//     named in the index no longer holds its lock, so the next Store to
//     open the namespace compares every session's size and mtime with the
//     index and finds the appends whose record was lost; a missing or
//     damaged index, or one of another version, is rebuilt from the
//     transcripts.
//   - Another program adding or removing a transcript: the folder's mtime
//     is not the one the index recorded, so List compares every session
//     with the index and reads the transcripts that differ. A Store that
//     changes the folder itself records the mtime its change left only
//     when the folder was as it last saw it before: otherwise it compares
//     too. (On a file system whose timestamps are coarse, a change in the
//     same clock tick as one by this package, or one made while this
//     package's own change is under way, can go unnoticed until the folder
//     next changes.)
//   - Another program appending to an existing transcript: Read, ReadTail,
//     ReadRange and Append see it at once and record it; List and Stat see
//     it then, or when the folder is next compared.
//
// ReadTail reads backwards from the end of the file, so its cost follows
// the number of entries asked for, not the transcript's length. ReadRange
// starts from a sparse offset index, <id>.jsonl.off, which holds the offset
// of every 256th entry (written by appends, rebuilt from the transcript
// when missing or wrong), or reads backwards for a range near the end.
//
// # Retention
//
// Each namespace keeps the newest 50 sessions and none idle over 90 days
// (store.DefaultRetention), enforced when a session is created; WithRetention
// changes both, and store.Retention{} keeps everything. The session being
// created is never its own victim (an imported session with old timestamps
// survives its import), and a session that cannot be deleted then (or
// whose lock is not free before the creating append's context ends) is
// tried again at the next creation. Retention and Prune choose their
// victims from the index, then delete each only if, under its exclusive
// lock, it is as it was when chosen (same entry count, last activity and
// file): a session appended to in between is kept, so an acknowledged
// append is never followed by its session's deletion on the strength of a
// choice made before it. A session none of whose lines can be read
// (corrupt, or sealed under a key the Store lacks) has no known activity
// and is never deleted by retention. Prune applies any policy on demand.
//
// # Notifications
//
// On Unix a Store is a store.Notifier, so that a process follows the
// turns another process runs on the root delta by delta, and stops them:
// each Store that listens binds a Unix domain socket in <root>/+live
// (0700; the socket 0600), and Notify writes to every socket there over
// connections it keeps open, through queues that never make it wait
// (package store/internal/sockbus says how, and what happens to a
// process that does not read). When the root's path is too long for a
// socket address, the sockets go in $XDG_RUNTIME_DIR/spool-UID/HASH (or
// the same under os.TempDir()), HASH a hash of the root's path. Only the
// user's processes can connect; no id appears on the wire. Elsewhere the
// Store has no Notifier, and processes follow each other's turns through
// the transcripts.
//
// # Case-insensitive file systems
//
// On a file system that folds case (macOS and Windows by default), two ids
// that differ only in case would be one file. The store checks the file
// system when it opens and there refuses an agent, owner or session id that
// differs only in case from an existing one with store.ErrInvalidKey. Where
// case matters (Linux), they are separate sessions.
//
// # Encryption
//
// With WithProtector, every line is sealed on its own, bound to its session
// and position (seal.AssociatedData), and stored as seal.SealLine makes it: a
// marker and base64, never starting with '{'. A plain line in an encrypted
// store is corrupt (store.ErrCorrupt), as is a sealed line that was changed
// or moved; a sealed line in a store opened without a protector fails with
// ErrEncrypted, and one sealed with a key the protector lacks with an error
// matching seal.ErrWrongKey that says so. The index keeps each title sealed
// too; it holds no content, only ids, counts, times and sizes.
//
// A store is encrypted or not for its whole life. The first sealed append
// writes the encryption marker, <root>/+encryption (synced, mode 0600): a
// fixed text sealed by the protector. New refuses a marked store opened
// without a protector (ErrEncrypted) or with one that cannot open the
// marker (seal.ErrWrongKey), before anything is read or written, so such a
// Store never creates sessions, applies retention or prunes. A Store
// without a protector also looks for the marker before it creates a
// session or prunes, in case another process marked the store since New.
// A store without a marker opened with a protector (New, and again its
// first sealed append) is refused if it holds plain sessions
// (ErrUnencrypted) or sessions sealed under a key the protector lacks. The marker guards against mistakes, not against
// someone who can change the folder: whoever deletes it can also delete the
// sessions.
//
// Reseal re-encrypts a store under a new key, session by session, each
// rewritten to a temporary file and renamed over its transcript under the
// session's lock; it rewrites the marker last. Read with a seal.Keyring of
// both keys meanwhile (see Reseal).
package filestore
