// Package transfer moves sessions between stores: Export writes them as
// JSON lines, Import reads such lines into a store, and Copy copies from
// one store to another directly. All three stream: they hold one chunk of
// one transcript at a time, whatever the size of the store, and all three
// are idempotent: running them again appends only what the target lacks.
//
// An export line is one entry with its session's key:
//
//	{"agent":"support","owner":"","session":"ses_01J…","entry":{"id":…,"parentId":…,"timestamp":…,"type":…,"turnId":…,"data":{…}}}
//
// Entries keep their ids, parents and timestamps, so a session copied into
// another store is the same chain, and the target's conditional append
// checks every link. (A parent that a transcript another program wrote
// leaves out after its first entry is said: the entry before it.)
//
// A target that applies retention when a session is created (the file
// store by default: the newest 50 sessions per namespace, none idle over 90
// days) deletes imported sessions beyond it as they arrive, though Stats
// counts them: open such a target with retention off for a transfer
// (filestore.WithRetention(store.Retention{}), or "file:...?retention=none",
// which spool sessions import and spool migrate do by themselves).
//
// A target with a TTL (store.Expiring) gets each session in one write, so
// the transfer holds one whole session at a time there: SQLite and
// Postgres measure idleness from the newest entry's timestamp, and a
// session begun longer ago than the TTL, written a chunk at a time, would
// be expired after its first chunk. A session idle longer than the TTL
// arrives whole and expired (Stats.Expired counts it).
package transfer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// Record is one line of an export.
type Record struct {
	Agent   string           `json:"agent"`
	Owner   string           `json:"owner"`
	Session string           `json:"session"`
	Entry   transcript.Entry `json:"entry"`
}

// Key returns the record's session key.
func (r Record) Key() store.Key { return store.Key{Agent: r.Agent, Owner: r.Owner, ID: r.Session} }

// chunk is how many entries are read from a store at a time (a variable
// so tests can make it small).
var chunk = 1000

// Progress is told after each session with the running totals (entries
// placed, some of them written in the next batch); nil for none.
type Progress func(sessions, entries int)

// Stats counts what a transfer did.
type Stats struct {
	Sessions int // sessions visited
	Entries  int // entries written (exported, or appended to the target)
	Skipped  int // entries the target already had
	// Expired counts the sessions written to a target with a TTL
	// (store.Expiring) that were idle longer than it when they arrived:
	// the runtime starts them afresh on their next message, and SQLite
	// and Postgres hide them and sweep them away, unless an approval
	// waits in them.
	Expired int
}

// Sessions walks every session of the given namespaces of src, calling fn for
// each session key once. With no namespaces, it walks every namespace src holds,
// which needs store.NamespaceLister.
//
// A listing is newest activity first, and its cursor a place in that
// order: a session appended to while the walk goes on (by its users, or
// by fn) moves ahead of the cursor, and one page of the walk would never
// show it, though it was there all along. So each namespace is walked
// again, calling fn for the sessions it had not met, until a walk meets
// none (or after maxWalks walks: sessions made since the transfer began
// need not be in it).
func Sessions(ctx context.Context, src store.Store, namespaces []store.Namespace, fn func(store.Key) error) error {
	if len(namespaces) == 0 {
		sl, ok := src.(store.NamespaceLister)
		if !ok {
			return errors.New("transfer: the source store cannot list its agents and users (no store.NamespaceLister); name a namespace")
		}
		var err error
		if namespaces, err = sl.Namespaces(ctx); err != nil {
			return err
		}
	}
	for _, sc := range namespaces {
		met := map[string]bool{}
		for walk := 1; ; walk++ {
			found, err := walkOnce(ctx, src, sc, met, fn)
			if err != nil {
				return err
			}
			// A walk that met only one page cannot have missed a session.
			if found.sessions == 0 || found.pages == 1 || walk == maxWalks {
				break
			}
		}
	}
	return nil
}

// maxWalks bounds the walks of one namespace (see Sessions).
const maxWalks = 10

type walked struct{ sessions, pages int }

// walkOnce lists sc whole, calling fn for each session not in met, and
// adds it there.
func walkOnce(ctx context.Context, src store.Store, sc store.Namespace, met map[string]bool, fn func(store.Key) error) (walked, error) {
	var w walked
	opt := store.ListOptions{Limit: store.MaxListLimit}
	for {
		page, err := src.List(ctx, sc, opt)
		if err != nil {
			return w, fmt.Errorf("transfer: listing %s: %w", sc, err)
		}
		w.pages++
		for _, info := range page.Sessions {
			if met[info.ID] {
				continue
			}
			met[info.ID] = true
			w.sessions++
			if err := fn(info.Key()); err != nil {
				return w, err
			}
		}
		if page.NextCursor == "" {
			return w, nil
		}
		opt.Cursor = page.NextCursor
	}
}

// eachEntry calls fn for every entry of key in src, a chunk at a time.
// An entry after the first that leaves its parent out (a transcript
// another program wrote) is given with its parent said, the entry before
// it, as the store reads it: an entry without a parent where the ones
// before named theirs begins another session for Import.
func eachEntry(ctx context.Context, src store.Store, key store.Key, fn func(transcript.Entry) error) error {
	prev := ""
	for pos := 0; ; {
		entries, total, err := store.ReadRange(ctx, src, key, pos, pos+chunk)
		if err != nil {
			return err
		}
		for i, e := range entries {
			if e.ParentID == "" && pos+i > 0 {
				e.ParentID = prev
			}
			prev = e.ID
			if err := fn(e); err != nil {
				return err
			}
		}
		pos += len(entries)
		if len(entries) == 0 || pos >= total {
			return nil
		}
	}
}

// Export writes every entry of the given sessions of src to w as JSON
// lines (see Record).
func Export(ctx context.Context, w io.Writer, src store.Store, keys []store.Key) (Stats, error) {
	var st Stats
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, k := range keys {
		if err := store.ValidateKey(k); err != nil {
			return st, err
		}
		st.Sessions++
		err := eachEntry(ctx, src, k, func(e transcript.Entry) error {
			st.Entries++
			return enc.Encode(Record{Agent: k.Agent, Owner: k.Owner, Session: k.ID, Entry: e})
		})
		if err != nil {
			return st, fmt.Errorf("transfer: exporting %s: %w", k, err)
		}
	}
	return st, bw.Flush()
}

// maxRecordLine is the longest line Import reads: an entry's line as long
// as a store keeps (transcript.MaxLineSize, the file store's limit, and
// the longest a transcript Decoder takes back) with the key Export writes
// around it, three ids of at most 128 characters, with room to spare for
// a record written otherwise (escapes, spaces).
const maxRecordLine = transcript.MaxLineSize + 4<<10

// Import appends the records read from r to dst. Entries dst already has
// (the same entry, id and content, at the same position) are skipped, so
// an import can be run again after it was interrupted, and a session the
// input holds twice (two exports, one taken after the other, read as one)
// is placed once, with what its later copy adds; an entry that
// differs from what dst has at its position fails the import with
// store.ErrConflict naming the session, and nothing of that session is
// changed by it; so does a target holding another session under a key of
// the input (another store's export, whose sessions have the same ids).
// An input holding two different sessions under one key fails with
// store.ErrConflict at the line where the second begins, naming the line
// of the first: the lines before it are imported, the key holding the
// first session alone, and a run again stops there too. (The second is
// told by its first entry, which names no parent, where the entries
// before it named theirs or where the key's lines begin again after
// another session's; a session whose entries all leave their parent out,
// followed at once by another, reads as one. Export says every parent, so
// that a session whose later entries leave theirs out reads as one; in
// lines written otherwise, or by an Export before it did, it reads as two,
// and Copy moves it.) Lines that are not records
// fail the import with their line number.
func Import(ctx context.Context, dst store.Store, r io.Reader, progress Progress) (Stats, error) {
	s := newSink(dst)
	err := s.end(ctx, s.importFrom(ctx, r, progress))
	return s.stats, err
}

// importFrom places the records of r.
func (s *sink) importFrom(ctx context.Context, r io.Reader, progress Progress) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxRecordLine)
	line := 0
	var prev store.Key
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		rec, err := parseRecord(sc.Bytes())
		if err != nil {
			return fmt.Errorf("transfer: line %d: not an export record: %w", line, err)
		}
		k := rec.Key()
		if k != prev && progress != nil && prev.ID != "" {
			progress(s.stats.Sessions, s.placed())
		}
		prev = k
		s.line = line
		if err := s.put(ctx, k, rec.Entry); err != nil {
			if errors.As(err, new(*bulkError)) {
				return fmt.Errorf("transfer: %w", err) // it names its own lines
			}
			return fmt.Errorf("transfer: line %d: %w", line, err)
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("transfer: line %d: not an export record: longer than %d bytes", line+1, maxRecordLine)
	} else if err != nil {
		return fmt.Errorf("transfer: after line %d: %w", line, err)
	}
	return nil
}

// Copy copies the given sessions (every session src holds when keys is
// nil) from src to dst, with Import's idempotence.
func Copy(ctx context.Context, dst, src store.Store, keys []store.Key, progress Progress) (Stats, error) {
	s := newSink(dst)
	one := func(k store.Key) error {
		err := eachEntry(ctx, src, k, func(e transcript.Entry) error { return s.put(ctx, k, e) })
		if errors.As(err, new(*bulkError)) {
			return fmt.Errorf("transfer: %w", err) // not k's: the store's error names its session
		}
		if err != nil {
			return fmt.Errorf("transfer: copying %s: %w", k, err)
		}
		if progress != nil {
			progress(s.stats.Sessions, s.placed())
		}
		return nil
	}
	var err error
	if keys == nil {
		err = Sessions(ctx, src, nil, one)
	} else {
		for _, k := range keys {
			if err = one(k); err != nil {
				break
			}
		}
	}
	err = s.end(ctx, err)
	return s.stats, err
}

// sink appends entries to a store session by session, skipping those the
// store already has. It keeps the position reached in each session it has
// seen, and a window of the target's entries being compared. Entries to append
// are held, a batch per session, and written chunk entries at a time
// (store.AppendBulk: one transaction or a few at once, or overlapping
// syncs, for many sessions; store.AppendBatch's one sync for a long
// session's chunk).
//
// A namespace that held no session when the sink first met it (List finds
// none: a new store, a new agent or user) holds only the sessions the sink
// puts there, so a session of it first seen is new, and is not read from
// the store: an import into an empty store costs no read a session. (A
// session that another writer creates there meanwhile fails the transfer
// with store.ErrConflict, as one created after the sink read it does.)
//
// A target with a TTL gets each session in one write (see the package
// doc): the sink holds a whole session, its lines together as an export
// lists them, however many chunks it spans. (A session whose lines come
// apart in the input goes in a write for each part, and when it arrives
// expired the second part conflicts.)
//
// One bulk is written while the next is read and placed: the store's
// commit (a server's, or a disk's sync) overlaps decoding the input, the
// other half of an import's time. A bulk is never started before the one
// before it has returned, so the store sees each session's entries in
// order, and what a failed bulk left is read again by a run that follows
// (see flush).
type sink struct {
	dst   store.Store
	stats Stats
	cur   map[store.Key]*target
	last  *target
	empty map[store.Namespace]bool // whether each namespace met held no session then
	held  []store.Batch            // to append, in order
	count int                      // entries held
	ttl   time.Duration            // the target's TTL (store.Expiring); zero for none

	writing chan error // the bulk being written answers here; nil when none
	wrote   int        // entries in that bulk

	// Input lines (Import; zero for Copy): the line being placed, the
	// first and last of those held, and of the bulk being written.
	line                      int
	heldFirst, heldLast       int
	writingFirst, writingLast int
}

// bulkError is the failure of a bulk. It comes back while later entries
// are placed, a chunk or more on, so it names the lines it held (Import)
// rather than being put on the line being read then, which holds nothing
// wrong.
type bulkError struct {
	first, last int // input lines of the bulk; zero when there are none
	err         error
}

func (e *bulkError) Error() string {
	switch {
	case e.first == 0:
		return e.err.Error()
	case e.first == e.last:
		return fmt.Sprintf("line %d: %v", e.first, e.err)
	}
	return fmt.Sprintf("lines %d-%d: %v", e.first, e.last, e.err)
}

func (e *bulkError) Unwrap() error { return e.err }

type target struct {
	pos    int                // position of the next entry to place
	total  int                // entries the store had when first seen
	have   []transcript.Entry // the store's entries at positions [haveAt, haveAt+len)
	haveAt int
	loaded bool
	head   string    // the id of the entry at pos-1: the next one's parent
	newest time.Time // the newest timestamp of the entries placed
	first  string    // the id of the session's first entry, once placed
	line   int       // the input line of that entry (Import; zero for Copy)
	copied int       // the positions an earlier copy of it in the input covered
	said   bool      // whether the entry before, as the input gave it, named its parent
	wrote  bool      // whether the sink appends any of its entries
	gone   bool      // counted as expired (leave)
}

func newSink(dst store.Store) *sink {
	s := &sink{dst: dst, cur: map[store.Key]*target{}, empty: map[store.Namespace]bool{}}
	if e, ok := dst.(store.Expiring); ok {
		s.ttl = e.TTL()
	}
	return s
}

// leave counts the session of t, which the sink has placed all it will
// of, as expired when it was written to a target with a TTL and was idle
// longer than that.
func (s *sink) leave(t *target) {
	if t != nil && t.wrote && !t.gone && s.ttl > 0 && time.Since(t.newest) > s.ttl {
		s.stats.Expired++
		t.gone = true // once, should its lines come apart in the input
	}
}

func (s *sink) put(ctx context.Context, k store.Key, e transcript.Entry) error {
	if err := store.ValidateKey(k); err != nil {
		return err
	}
	if s.count >= chunk && (s.ttl <= 0 || s.held[len(s.held)-1].Key != k) {
		if err := s.start(ctx); err != nil {
			return err
		}
	}
	t := s.cur[k]
	if t == nil {
		s.stats.Sessions++
		t = &target{}
		s.cur[k] = t
	}
	resumed := t != s.last // the session's lines begin again here, after another's
	if t != s.last {
		if s.last != nil {
			s.last.have = nil // keep memory to one session's window
			s.leave(s.last)
		}
		s.last = t
	}
	if e.Timestamp.After(t.newest) {
		t.newest = e.Timestamp
	}
	if !t.loaded {
		// A session first seen is not in the bulk being written (only
		// sessions placed before are), so what the store says of it now
		// is what it has.
		empty, err := s.emptyNamespace(ctx, k.Namespace())
		if err != nil {
			return err
		}
		if !empty {
			if _, t.total, err = store.ReadTail(ctx, s.dst, k, 0); err != nil {
				return err
			}
		}
		t.loaded = true
	}
	said := e.ParentID != ""
	if e.ParentID == "" && t.pos > 0 && e.ID != t.first && (t.said || resumed) {
		// An entry without a parent where the entries before it named
		// theirs, or where the session's lines begin again after
		// another's, begins another transcript under the same key (two
		// stores' exports of the same id, read as one). Taken for the
		// entry after the one before it (a transcript that leaves its
		// parents out), it would merge two sessions into one. What is
		// held is written first, so that the import stops with every
		// session before this line whole, as a run again finds it.
		if err := s.start(ctx); err != nil {
			return err
		}
		if err := s.wait(); err != nil {
			return err
		}
		return &conflictError{fmt.Sprintf("session %s: the input holds two different sessions under this key: one begins %s (its first entry %q) and another here (its first entry %q); the lines before this one are imported; give one of the two another session id (the \"session\" of its lines), or import them into different stores", k, lineOf(t.line), t.first, e.ID)}
	}
	if e.ParentID == "" && t.pos > 0 && e.ID == t.first {
		// The session's first entry again: the input holds the session
		// twice (exports concatenated, one taken later than the other).
		// Its second copy is compared from the start with what is placed,
		// as a run again would compare it, rather than appended after the
		// first copy as entries whose parent was left out: that gave the
		// session every entry twice.
		if err := s.restart(ctx, k, t); err != nil {
			return err
		}
	}
	if e.ParentID == "" && t.pos > 0 {
		// A transcript another program wrote may leave the parent out
		// after its first entry, meaning the entry before it, and the
		// stores read it so (storekit.CheckChain); their appends need
		// it said. Filled in, the session can be moved, and compares
		// with what an earlier run placed.
		e.ParentID = t.head
	}
	if t.first == "" {
		t.first, t.line = e.ID, s.line
	}
	if t.pos < t.total {
		have, err := s.entryAt(ctx, k, t)
		if err != nil {
			return err
		}
		if t.pos < t.copied && !have.Equal(e) {
			// The store's entry is the earlier copy's, placed or found
			// there: the input holds the session twice, and its copies
			// part here.
			return &conflictError{fmt.Sprintf("session %s: the input holds this session twice, and its copies differ: position %d is entry %q in the copy that begins %s, %q here; keep one copy's lines", k, t.pos, have.ID, lineOf(t.line), e.ID)}
		}
		if have.ID != e.ID && t.pos == 0 && e.ParentID == "" {
			// Two first entries: another session. (One naming a
			// parent begins a later part of the session, which may
			// be the target's.)
			return &conflictError{fmt.Sprintf("session %s: the target holds another session under this key (its first entry %q, the source's %q), which is left as it was; import the source's under another session id, or into another store, or delete the target's first", k, have.ID, e.ID)}
		}
		if have.ID != e.ID {
			return fmt.Errorf("session %s: %w: the target has entry %q at position %d where the source has %q", k, store.ErrConflict, have.ID, t.pos, e.ID)
		}
		// The same id with other content (an edited export, a session
		// rewritten elsewhere) is another transcript too: skipping it
		// would report the target as holding what it does not.
		if !have.Equal(e) {
			return fmt.Errorf("session %s: %w: the target's entry %q at position %d differs from the source's", k, store.ErrConflict, e.ID, t.pos)
		}
		t.pos++
		t.head, t.said = e.ID, said
		s.stats.Skipped++
		return nil
	}
	// Checked here, as the store will check it, so that an entry the
	// store would refuse fails with its line (Import) rather than later,
	// from inside a bulk that holds many lines.
	if err := storekit.ValidEntry(k, e); err != nil {
		return err
	}
	if err := storekit.CheckParent(k, t.head, e); err != nil {
		return err
	}
	t.head, t.said, t.wrote = e.ID, said, true
	if n := len(s.held); n > 0 && s.held[n-1].Key == k {
		s.held[n-1].Entries = append(s.held[n-1].Entries, e)
	} else {
		s.held = append(s.held, store.Batch{Key: k, Entries: []transcript.Entry{e}})
	}
	if s.count == 0 {
		s.heldFirst = s.line
	}
	s.heldLast = s.line
	s.count++
	t.pos++
	t.total++
	return nil
}

// conflictError is a conflict (store.ErrConflict) that says in its own
// words what is in the way: another session under the key, where the
// store's "the session has moved on" would mislead.
type conflictError struct{ msg string }

func (e *conflictError) Error() string        { return e.msg }
func (e *conflictError) Is(target error) bool { return target == store.ErrConflict }

// lineOf says where an earlier copy of a session begins: "at line 4" of
// an import's input, or "earlier in the source" for a Copy, which reads
// no lines.
func lineOf(line int) string {
	if line == 0 {
		return "earlier in the source"
	}
	return fmt.Sprintf("at line %d", line)
}

// restart sets t back to the session's start, to compare the entries
// that follow with what the store holds. The entries held are written
// first, so that the store holds every entry placed, and the store is
// asked what it has: a target with a TTL holds none of a session that
// arrived expired, whose second copy is then written afresh, as a run
// again writes it.
func (s *sink) restart(ctx context.Context, k store.Key, t *target) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	if err := s.wait(); err != nil {
		return err
	}
	_, total, err := store.ReadTail(ctx, s.dst, k, 0)
	if err != nil {
		return err
	}
	t.copied = max(t.copied, t.pos)
	t.pos, t.total, t.head, t.have, t.haveAt = 0, total, "", nil, 0
	return nil
}

// placed is how many entries were appended or are held to be.
func (s *sink) placed() int { return s.stats.Entries + s.wrote + s.count }

// start waits for the bulk being written, then starts writing the held
// entries, and returns the error of the bulk waited for.
func (s *sink) start(ctx context.Context) error {
	if err := s.wait(); err != nil {
		return err
	}
	if s.count == 0 {
		return nil
	}
	held, n := s.held, s.count
	s.held, s.count = nil, 0 // the bulk being written keeps its own
	s.writing, s.wrote = make(chan error, 1), n
	s.writingFirst, s.writingLast = s.heldFirst, s.heldLast
	go func(done chan<- error) { done <- store.AppendBulk(ctx, s.dst, held) }(s.writing)
	return nil
}

// wait waits for the bulk being written, if any. A failure may leave some
// of it in the store, as the appends one by one would: a run again skips
// what is there.
func (s *sink) wait() error {
	if s.writing == nil {
		return nil
	}
	err := <-s.writing
	s.writing = nil
	n := s.wrote
	s.wrote = 0
	if err != nil {
		// Where the store stands is unknown now: the next put of a
		// session reads it again.
		clear(s.cur)
		clear(s.empty)
		s.last = nil
		return &bulkError{first: s.writingFirst, last: s.writingLast, err: err}
	}
	s.stats.Entries += n
	return nil
}

// end ends a transfer that stopped with err: with nil, it writes what is
// held and waits until it is written; else it waits for the bulk being
// written (so that nothing writes to the store after the transfer
// returned, and Stats counts it) and returns err.
func (s *sink) end(ctx context.Context, err error) error {
	if err != nil {
		_ = s.wait() // err says why the transfer stopped; a run again sees the rest
		return err
	}
	if err := s.start(ctx); err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	if err := s.wait(); err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	s.leave(s.last)
	return nil
}

// emptyNamespace reports whether ns held no session when the sink first
// met it. It asks the store once: the first time is before any bulk of the
// sink wrote to ns.
func (s *sink) emptyNamespace(ctx context.Context, ns store.Namespace) (bool, error) {
	empty, seen := s.empty[ns]
	if !seen {
		page, err := s.dst.List(ctx, ns, store.ListOptions{Limit: 1})
		if err != nil {
			return false, err
		}
		empty = len(page.Sessions) == 0
		s.empty[ns] = empty
	}
	return empty, nil
}

// entryAt returns the store's entry at t.pos, reading the target's
// entries a chunk at a time.
func (s *sink) entryAt(ctx context.Context, k store.Key, t *target) (transcript.Entry, error) {
	if t.pos < t.haveAt || t.pos >= t.haveAt+len(t.have) {
		entries, _, err := store.ReadRange(ctx, s.dst, k, t.pos, t.pos+chunk)
		if err != nil {
			return transcript.Entry{}, err
		}
		t.have, t.haveAt = entries, t.pos
		if len(t.have) == 0 {
			return transcript.Entry{}, fmt.Errorf("session %s: the target changed during the transfer", k)
		}
	}
	return t.have[t.pos-t.haveAt], nil
}
