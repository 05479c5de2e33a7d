package filestore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// index is the in-memory index of one namespace's folder: a record per
// session, kept in listing order, mirrored on disk by the journal
// (journal.go).
//
// Its locks are taken in the order valMu, rewriteMu, mu, and a session's
// file lock before any of them. A function whose name ends in Locked needs
// mu held by its caller (Store.evictLocked: the Store's mu). mu is held
// only for memory work and short appends to the index file, never across
// a sync.
type index struct {
	s    *Store
	key  store.Namespace
	dir  string
	used uint64 // when last used; guarded by s.mu (see evictLocked)

	// valMu serializes loading and validation, which read transcripts.
	valMu sync.Mutex
	// rewriteMu serializes rewrites of the index file (see rewrite).
	rewriteMu sync.Mutex

	mu           sync.Mutex // guards the following fields
	loaded       bool
	recs         map[string]*rec
	folded       map[string]string // fold(id) → id, when the file system folds case
	sorted       []*rec            // listing order (storekit.Less); nil until needed
	j            journal
	needValidate bool            // compare with the folder at the next chance
	validating   bool            // a validation is under way
	dirMod       time.Time       // the folder's mtime when last compared, or after this process's last change to it
	dirChanging  int             // this process's changes to the folder under way (dirchange.go)
	dirForeign   bool            // one of them found the folder changed by something else
	dirGen       uint64          // this process's changes to the folder ended so far
	writers      map[string]bool // writers whose marks are open (marks.go)
	folder       int64           // the folder's mtime by the last F mark, or 0
	rewriting    bool            // a rewrite is writing the new file: records wait in held
	held         [][]byte        // records appended while rewriting, for the new file
	dropped      bool            // evicted or closed: keep no file open
	peeked       bool            // coldFirst answered once (coldlist.go)
	coldSorted   bool            // and from the sorted records (for tests)
	// unsure holds, by session, the writers whose U marks are open
	// (pending.go), and mine this Store's deferred sessions, whose records
	// in memory are newer than the file's; pending counts mine for
	// evictLocked, which must not drop them.
	unsure  map[string]map[string]bool
	mine    map[string]*pending
	pending atomic.Int32
	// sessions are the namespace's sessions in use or with a kept file
	// (sessions.go), live their number for evictLocked, which keeps an
	// index whose sessions are in use.
	sessions map[string]*session
	live     atomic.Int32
	// markedBy is the Store's writer mark once the index names it.
	markedBy atomic.Pointer[writerMark]
}

// rec is what the index knows of one session without reading it.
type rec struct {
	info      store.SessionInfo // Title is set when titleOK
	fileState                   // the transcript's when info was true; any other means info is stale
	head      string            // the last entry's id
	badTail   bool              // the last line does not decode: appends fail

	sealedTitle string // the title as an encrypted store keeps it in the index
	titleOK     bool   // info.Title holds the title (opened, when sealed)
}

func newIndex(s *Store, key store.Namespace, dir string) *index {
	return &index{
		s:    s,
		key:  key,
		dir:  dir,
		recs: map[string]*rec{},
		j:    journal{path: dir + string(os.PathSeparator) + indexName},
	}
}

// drop closes the index file of an index the Store no longer keeps. An
// operation still under way on it finishes on its own, and keeps no file
// open after.
func (ix *index) drop() error {
	ix.mu.Lock()
	ix.dropped = true
	var mine []string
	for id := range ix.mine {
		mine = append(mine, id)
	}
	ix.mu.Unlock()
	// Deferred records an append made while the index was being evicted
	// (pending.go): no later flush would find them. The caller holds no
	// session lock.
	for _, id := range mine {
		ix.s.flushOne(ix, id)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.j.close()
}

func cmpRec(a, b *rec) int {
	if c := b.info.LastActivity.Compare(a.info.LastActivity); c != 0 {
		return c
	}
	return strings.Compare(b.info.ID, a.info.ID)
}

// putLocked installs r as the record of its session, keeping the listing order.
// The caller holds ix.mu.
func (ix *index) putLocked(r *rec) {
	if old := ix.recs[r.info.ID]; old != nil {
		ix.updateLocked(old, r)
		return
	}
	ix.insertLocked(r)
}

// putCopyLocked is putLocked of a copy of r, which stays the caller's: an
// append's record lives on its stack, and a new one is made only for a
// session the index did not have. The caller holds ix.mu.
func (ix *index) putCopyLocked(r *rec) {
	if old := ix.recs[r.info.ID]; old != nil {
		ix.updateLocked(old, r)
		return
	}
	c := *r
	ix.insertLocked(&c)
}

// insertLocked adds r, the record of a session the index does not have.
// The caller holds ix.mu.
func (ix *index) insertLocked(r *rec) {
	id := r.info.ID
	if ix.sorted != nil {
		i, _ := slices.BinarySearchFunc(ix.sorted, r, cmpRec)
		ix.sorted = slices.Insert(ix.sorted, i, r)
	}
	ix.recs[id] = r
	if ix.s.fold {
		ix.addFoldedLocked(id)
	}
}

// updateLocked makes old, the record in the index, r. The caller holds
// ix.mu.
func (ix *index) updateLocked(old, r *rec) {
	if ix.sorted == nil || old.info.LastActivity.Equal(r.info.LastActivity) {
		*old = *r
		return
	}
	i, ok := slices.BinarySearchFunc(ix.sorted, old, cmpRec)
	*old = *r
	if !ok {
		ix.sorted = nil
		return
	}
	// Move it to its new place, shifting only the records it passes: an
	// append moves its session towards the front, most often not at all
	// (it is the newest already), and the index may hold thousands.
	sorted := ix.sorted
	switch {
	case i > 0 && cmpRec(old, sorted[i-1]) < 0:
		j, _ := slices.BinarySearchFunc(sorted[:i], old, cmpRec)
		copy(sorted[j+1:i+1], sorted[j:i])
		sorted[j] = old
	case i+1 < len(sorted) && cmpRec(old, sorted[i+1]) > 0:
		j, _ := slices.BinarySearchFunc(sorted[i+1:], old, cmpRec)
		j += i + 1
		copy(sorted[i:j-1], sorted[i+1:j])
		sorted[j-1] = old
	}
}

// removeLocked drops the record of id. The caller holds ix.mu.
func (ix *index) removeLocked(id string) {
	old := ix.recs[id]
	if old == nil {
		return
	}
	if ix.sorted != nil {
		if i, ok := slices.BinarySearchFunc(ix.sorted, old, cmpRec); ok {
			ix.sorted = slices.Delete(ix.sorted, i, i+1)
		} else {
			ix.sorted = nil
		}
	}
	delete(ix.recs, id)
	if ix.folded != nil && ix.folded[fold(id)] == id {
		delete(ix.folded, fold(id))
	}
}

func (ix *index) addFoldedLocked(id string) {
	if ix.folded == nil {
		ix.folded = map[string]string{}
	}
	if _, taken := ix.folded[fold(id)]; !taken {
		ix.folded[fold(id)] = id
	}
}

// replaceAllLocked installs recs as the whole index. The caller holds ix.mu.
func (ix *index) replaceAllLocked(recs map[string]*rec) {
	ix.recs = recs
	ix.sorted = nil
	ix.folded = nil
	if ix.s.fold {
		for id := range recs {
			ix.addFoldedLocked(id)
		}
	}
}

func (ix *index) listingLocked() []*rec {
	if ix.sorted == nil {
		ix.sorted = make([]*rec, 0, len(ix.recs))
		for _, r := range ix.recs {
			ix.sorted = append(ix.sorted, r)
		}
		slices.SortFunc(ix.sorted, cmpRec)
	}
	return ix.sorted
}

// firstLocked returns the first k records in listing order, choosing them
// in one pass over the records. The caller holds ix.mu.
func (ix *index) firstLocked(k int) []*rec {
	first := make([]*rec, 0, k+1)
	for _, r := range ix.recs {
		if len(first) == k && cmpRec(r, first[k-1]) >= 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(first, r, cmpRec)
		first = slices.Insert(first, i, r)
		if len(first) > k {
			first = first[:k]
		}
	}
	return first
}

// checkCase refuses a session id that differs only in case from one the
// namespace has, on file systems that fold case, where both would be one file.
// On other file systems both are separate sessions. It asks the index, and
// for an id the index does not have, the folder.
func (ix *index) checkCase(id string) error {
	if !ix.s.fold {
		return nil
	}
	ix.mu.Lock()
	if ix.j.id == nil {
		ix.catchUpLocked()
	}
	_, exact := ix.recs[id]
	other, folded := ix.folded[fold(id)]
	ix.mu.Unlock()
	if exact {
		return nil
	}
	if folded && other != id {
		return caseError(id, other)
	}
	entries, err := os.ReadDir(ix.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("filestore: %w", err)
	}
	for _, e := range entries {
		if other, ok := sessionID(e.Name()); ok && other != id && strings.EqualFold(other, id) {
			return caseError(id, other)
		}
	}
	return nil
}

func caseError(id, other string) error {
	return fmt.Errorf("%w: session id %q differs only in case from the existing session %q, and this file system does not tell them apart", store.ErrInvalidKey, id, other)
}

// titleAD binds a sealed title to its session; no line has its position.
func titleAD(key store.Key) []byte { return seal.AssociatedData(key.Agent, key.Owner, key.ID, -1) }

func (s *Store) sealTitle(key store.Key, title string) (string, error) {
	if title == "" {
		return "", nil
	}
	b, err := s.cfg.protector.Seal([]byte(title), titleAD(key))
	if err != nil {
		return "", err
	}
	return base64.RawStdEncoding.EncodeToString(b), nil
}

// openTitleLocked fills in r's title from its sealed form. The caller holds ix.mu.
func (ix *index) openTitleLocked(r *rec) error {
	if r.titleOK {
		return nil
	}
	if r.sealedTitle == "" || ix.s.cfg.protector == nil {
		r.titleOK = true
		return nil
	}
	key := r.info.Key()
	b, err := base64.RawStdEncoding.DecodeString(r.sealedTitle)
	if err == nil {
		b, err = ix.s.cfg.protector.Open(b, titleAD(key))
	}
	switch {
	case errors.Is(err, seal.ErrWrongKey):
		return fmt.Errorf("filestore: session %s: the store is encrypted with another key: %w", key, err)
	case err != nil:
		// The index is derived data: a title that does not open is left
		// out, and the index is rebuilt from the transcripts.
		ix.needValidate = true
		r.size = -1
		r.titleOK = true
		return nil
	}
	r.info.Title = string(b)
	r.titleOK = true
	return nil
}

// List returns a page of the sessions of namespace, newest activity first, from
// the index: no transcript is read. A session another process wrote is
// seen as soon as that process has appended to the index; a transcript
// another program wrote or changed is seen once the folder changes or a
// Store opens the namespace (see the package documentation).
func (s *Store) List(ctx context.Context, ns store.Namespace, opt store.ListOptions) (store.SessionPage, error) {
	page := store.SessionPage{Sessions: []store.SessionInfo{}}
	if err := checkNamespace(ns); err != nil {
		return page, err
	}
	var after *storekit.ListPosition
	if opt.Cursor != "" {
		p, err := storekit.DecodeListCursor(ns, opt.Cursor)
		if err != nil {
			return page, err
		}
		after = &p
	}
	ix, err := s.index(ctx, ns, false)
	if err != nil || ix == nil {
		return page, err
	}
	n := opt.PageSize()
	if after == nil {
		// A first page of a namespace not loaded yet: from the index file
		// without loading it, when it proves itself current.
		if first, ok := ix.coldFirst(n + 1); ok {
			return pageOf(ns, first, n), nil
		}
	}
	if err := s.ready(ctx, ix); err != nil {
		return page, err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	var all []*rec
	if after == nil && ix.sorted == nil {
		// A first page from records not in order yet (a cold Store):
		// choose the page, and one more to know whether a next one
		// follows, rather than sorting every session.
		all = ix.firstLocked(n + 1)
	} else {
		all = ix.listingLocked()
	}
	i := 0
	if after != nil {
		i = sort.Search(len(all), func(i int) bool {
			return after.Before(all[i].info.LastActivity, all[i].info.ID)
		})
	}
	page.Sessions = make([]store.SessionInfo, 0, min(n, len(all)-i))
	for ; i < len(all) && len(page.Sessions) < n; i++ {
		if err := ix.openTitleLocked(all[i]); err != nil {
			return store.SessionPage{Sessions: []store.SessionInfo{}}, err
		}
		page.Sessions = append(page.Sessions, all[i].info)
	}
	if i < len(all) && len(page.Sessions) > 0 {
		last := page.Sessions[len(page.Sessions)-1]
		page.NextCursor = storekit.EncodeListCursor(ns, storekit.ListPosition{LastActivity: last.LastActivity, ID: last.ID})
	}
	return page, nil
}

// pageOf is the first page of n sessions from first, the first n+1
// records in listing order, titles opened.
func pageOf(ns store.Namespace, first []*rec, n int) store.SessionPage {
	page := store.SessionPage{Sessions: make([]store.SessionInfo, 0, min(n, len(first)))}
	for _, r := range first[:min(n, len(first))] {
		page.Sessions = append(page.Sessions, r.info)
	}
	if len(first) > n && n > 0 {
		last := page.Sessions[n-1]
		page.NextCursor = storekit.EncodeListCursor(ns, storekit.ListPosition{LastActivity: last.LastActivity, ID: last.ID})
	}
	return page
}

// Stat returns the session's info from the index, or store.ErrNotFound.
func (s *Store) Stat(ctx context.Context, key store.Key) (store.SessionInfo, error) {
	if err := checkKey(key); err != nil {
		return store.SessionInfo{}, err
	}
	ix, err := s.index(ctx, key.Namespace(), false)
	if err != nil {
		return store.SessionInfo{}, err
	}
	if ix != nil {
		if err := ix.checkCase(key.ID); err != nil {
			return store.SessionInfo{}, err
		}
		if err := s.ready(ctx, ix); err != nil {
			return store.SessionInfo{}, err
		}
		ix.mu.Lock()
		defer ix.mu.Unlock()
		if r := ix.recs[key.ID]; r != nil {
			if err := ix.openTitleLocked(r); err != nil {
				return store.SessionInfo{}, err
			}
			return r.info, nil
		}
	}
	return store.SessionInfo{}, fmt.Errorf("filestore: session %s: %w", key, store.ErrNotFound)
}

// victimsLocked returns the sessions r does not keep as of now, never keep
// (which counts as kept), each as the index has it now: what the decision
// saw, for the deletion to check that the session is still so. A session
// none of whose lines decodes (corrupt, or sealed with a key this Store
// lacks) has no activity to judge it by: it is neither kept nor deleted, so
// that retention never destroys what a read reports as corrupt. The caller
// holds ix.mu.
func (ix *index) victimsLocked(r store.Retention, now time.Time, keep string) []rec {
	var out []rec
	kept := 0
	for _, x := range ix.listingLocked() {
		if x.info.ID == keep {
			kept++
			continue
		}
		if x.info.LastActivity.IsZero() {
			continue
		}
		if storekit.Expired(x.info, r, now) || (r.MaxSessions > 0 && kept >= r.MaxSessions) {
			out = append(out, *x)
			continue
		}
		kept++
	}
	return out
}

// unchangedSince reports whether the session whose record is now cur is
// still as seen (a victim's record when retention chose it): no entry
// added, no activity since, and the same transcript. An append between the
// decision and the deletion makes the session one retention may keep.
func unchangedSince(cur *rec, seen rec) bool {
	return cur != nil &&
		cur.info.Entries == seen.info.Entries &&
		cur.info.LastActivity.Equal(seen.info.LastActivity) &&
		(seen.size < 0 || cur.size == seen.size) &&
		(seen.ino == 0 || cur.ino == 0 || cur.ino == seen.ino)
}

// applyEntry advances r by entry e, appended to session key.
func (s *Store) applyEntry(r *rec, key store.Key, e transcript.Entry) error {
	hadTitle := r.info.Title != "" || r.sealedTitle != ""
	title := r.info.Title
	r.info.Apply(key, e)
	if hadTitle && !store.Retitles(e) {
		r.info.Title = title
		return nil
	}
	if r.info.Title != "" {
		r.titleOK = true
		if s.cfg.protector != nil {
			st, err := s.sealTitle(key, r.info.Title)
			if err != nil {
				return err
			}
			r.sealedTitle = st
		}
	}
	return nil
}
