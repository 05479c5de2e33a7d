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
	"time"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// scope is the in-memory index of one scope folder: a record per session,
// kept in listing order, mirrored on disk by the journal (journal.go).
type scope struct {
	s    *Store
	key  store.Scope
	dir  string
	used uint64 // when last used, under s.mu (see evict)

	// valMu serializes loading and validation, which read transcripts.
	valMu sync.Mutex

	mu           sync.Mutex
	loaded       bool
	recs         map[string]*rec
	folded       map[string]string // fold(id) → id, when the file system folds case
	sorted       []*rec            // listing order (store.Less); nil until needed
	j            journal
	needValidate bool      // compare with the folder at the next chance
	validating   bool      // a validation is under way
	dirMod       time.Time // the folder's mtime when last compared
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

func newScope(s *Store, key store.Scope, dir string) *scope {
	return &scope{
		s:    s,
		key:  key,
		dir:  dir,
		recs: map[string]*rec{},
		j:    journal{path: dir + string(os.PathSeparator) + indexName},
	}
}

func cmpRec(a, b *rec) int {
	if c := b.info.LastActivity.Compare(a.info.LastActivity); c != 0 {
		return c
	}
	return strings.Compare(b.info.ID, a.info.ID)
}

// put installs r as the record of its session, keeping the listing order.
// The caller holds sc.mu.
func (sc *scope) put(r *rec) {
	id := r.info.ID
	old := sc.recs[id]
	if old == nil {
		if sc.sorted != nil {
			i, _ := slices.BinarySearchFunc(sc.sorted, r, cmpRec)
			sc.sorted = slices.Insert(sc.sorted, i, r)
		}
		sc.recs[id] = r
		if sc.s.fold {
			sc.addFolded(id)
		}
		return
	}
	if sc.sorted != nil && !old.info.LastActivity.Equal(r.info.LastActivity) {
		if i, ok := slices.BinarySearchFunc(sc.sorted, old, cmpRec); ok {
			sc.sorted = slices.Delete(sc.sorted, i, i+1)
			*old = *r
			i, _ = slices.BinarySearchFunc(sc.sorted, old, cmpRec)
			sc.sorted = slices.Insert(sc.sorted, i, old)
			return
		}
		sc.sorted = nil
	}
	*old = *r
}

// remove drops the record of id. The caller holds sc.mu.
func (sc *scope) remove(id string) {
	old := sc.recs[id]
	if old == nil {
		return
	}
	if sc.sorted != nil {
		if i, ok := slices.BinarySearchFunc(sc.sorted, old, cmpRec); ok {
			sc.sorted = slices.Delete(sc.sorted, i, i+1)
		} else {
			sc.sorted = nil
		}
	}
	delete(sc.recs, id)
	if sc.folded != nil && sc.folded[fold(id)] == id {
		delete(sc.folded, fold(id))
	}
}

func (sc *scope) addFolded(id string) {
	if sc.folded == nil {
		sc.folded = map[string]string{}
	}
	if _, taken := sc.folded[fold(id)]; !taken {
		sc.folded[fold(id)] = id
	}
}

// replaceAll installs recs as the whole index. The caller holds sc.mu.
func (sc *scope) replaceAll(recs map[string]*rec) {
	sc.recs = recs
	sc.sorted = nil
	sc.folded = nil
	if sc.s.fold {
		for id := range recs {
			sc.addFolded(id)
		}
	}
}

func (sc *scope) listing() []*rec {
	if sc.sorted == nil {
		sc.sorted = make([]*rec, 0, len(sc.recs))
		for _, r := range sc.recs {
			sc.sorted = append(sc.sorted, r)
		}
		slices.SortFunc(sc.sorted, cmpRec)
	}
	return sc.sorted
}

// checkCase refuses a session id that differs only in case from one the
// scope has, on file systems that fold case, where both would be one file.
// On other file systems both are separate sessions. It asks the index, and
// for an id the index does not have, the folder.
func (sc *scope) checkCase(id string) error {
	if !sc.s.fold {
		return nil
	}
	sc.mu.Lock()
	if sc.j.id == nil {
		sc.catchUp()
	}
	_, exact := sc.recs[id]
	other, folded := sc.folded[fold(id)]
	sc.mu.Unlock()
	if exact {
		return nil
	}
	if folded && other != id {
		return caseError(id, other)
	}
	entries, err := os.ReadDir(sc.dir)
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

// openTitle fills in r's title from its sealed form. The caller holds sc.mu.
func (sc *scope) openTitle(r *rec) error {
	if r.titleOK {
		return nil
	}
	if r.sealedTitle == "" || sc.s.cfg.protector == nil {
		r.titleOK = true
		return nil
	}
	key := r.info.Key()
	b, err := base64.RawStdEncoding.DecodeString(r.sealedTitle)
	if err == nil {
		b, err = sc.s.cfg.protector.Open(b, titleAD(key))
	}
	switch {
	case errors.Is(err, seal.ErrWrongKey):
		return fmt.Errorf("session %s: the store is encrypted with another key: %w", key, err)
	case err != nil:
		// The index is derived data: a title that does not open is left
		// out, and the index is rebuilt from the transcripts.
		sc.needValidate = true
		r.size = -1
		r.titleOK = true
		return nil
	}
	r.info.Title = string(b)
	r.titleOK = true
	return nil
}

// List returns a page of the sessions of scope, newest activity first, from
// the index: no transcript is read. A session another process wrote is
// seen as soon as that process has appended to the index; a transcript
// another program wrote or changed is seen once the folder changes or a
// Store opens the scope (see the package documentation).
func (s *Store) List(ctx context.Context, scope store.Scope, opt store.ListOptions) (store.SessionPage, error) {
	page := store.SessionPage{Sessions: []store.SessionInfo{}}
	if err := checkScope(scope); err != nil {
		return page, err
	}
	var after *store.ListPosition
	if opt.Cursor != "" {
		p, err := store.DecodeListCursor(scope, opt.Cursor)
		if err != nil {
			return page, err
		}
		after = &p
	}
	sc, err := s.scope(ctx, scope, false)
	if err != nil || sc == nil {
		return page, err
	}
	if err := s.ready(ctx, sc); err != nil {
		return page, err
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	all := sc.listing()
	i := 0
	if after != nil {
		i = sort.Search(len(all), func(i int) bool {
			return after.Before(all[i].info.LastActivity, all[i].info.ID)
		})
	}
	n := opt.PageSize()
	page.Sessions = make([]store.SessionInfo, 0, min(n, len(all)-i))
	for ; i < len(all) && len(page.Sessions) < n; i++ {
		if err := sc.openTitle(all[i]); err != nil {
			return store.SessionPage{Sessions: []store.SessionInfo{}}, err
		}
		page.Sessions = append(page.Sessions, all[i].info)
	}
	if i < len(all) && len(page.Sessions) > 0 {
		last := page.Sessions[len(page.Sessions)-1]
		page.NextCursor = store.EncodeListCursor(scope, store.ListPosition{LastActivity: last.LastActivity, ID: last.ID})
	}
	return page, nil
}

// Stat returns the session's info from the index, or store.ErrNotFound.
func (s *Store) Stat(ctx context.Context, key store.Key) (store.SessionInfo, error) {
	if err := checkKey(key); err != nil {
		return store.SessionInfo{}, err
	}
	sc, err := s.scope(ctx, key.Scope(), false)
	if err != nil {
		return store.SessionInfo{}, err
	}
	if sc != nil {
		if err := sc.checkCase(key.ID); err != nil {
			return store.SessionInfo{}, err
		}
		if err := s.ready(ctx, sc); err != nil {
			return store.SessionInfo{}, err
		}
		sc.mu.Lock()
		defer sc.mu.Unlock()
		if r := sc.recs[key.ID]; r != nil {
			if err := sc.openTitle(r); err != nil {
				return store.SessionInfo{}, err
			}
			return r.info, nil
		}
	}
	return store.SessionInfo{}, fmt.Errorf("session %s: %w", key, store.ErrNotFound)
}

// victims returns the sessions r does not keep as of now, never keep
// (which counts as kept), each as the index has it now: what the decision
// saw, for the deletion to check that the session is still so. A session
// none of whose lines decodes (corrupt, or sealed with a key this Store
// lacks) has no activity to judge it by: it is neither kept nor deleted, so
// that retention never destroys what a read reports as corrupt. The caller
// holds sc.mu.
func (sc *scope) victims(r store.Retention, now time.Time, keep string) []rec {
	var out []rec
	kept := 0
	for _, x := range sc.listing() {
		if x.info.ID == keep {
			kept++
			continue
		}
		if x.info.LastActivity.IsZero() {
			continue
		}
		if store.Expired(x.info, r, now) || (r.MaxSessions > 0 && kept >= r.MaxSessions) {
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
	if hadTitle {
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
