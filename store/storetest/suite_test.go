package storetest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// searching is a memstore with a Searcher (the scan of store.Search), so
// the suite's Searcher checks run on a store that passes them.
type searching struct{ *memstore.Store }

func (s searching) Search(ctx context.Context, ns store.Namespace, q store.SearchQuery) ([]store.SearchHit, error) {
	return store.Search(ctx, s.Store, ns, q)
}

func TestSearcherChecks(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return searching{memstore.New()} })
}

// A mutant is a memstore with one rule broken on purpose. The suite must
// fail each in the subtest that owns the rule, with a message naming it.
var mutants = []struct {
	name    string
	subtest string // the subtest that must fail
	message string // a part of its failure message
}{
	{"blind-append", "Append/Conflict/StaleParent", "must fail with ErrConflict"},
	{"racy-append", "Append/Conflict/RacingWriters", "racing writers"},
	{"lossy-data", "Read/ExactlyAsAppended", "exactly as appended"},
	{"offset-cursor", "List/Paging/WhileAppending", "pages must never overlap"},
	{"sticky-title", "Delete/SameIDStartsEmpty", "Title"},
	{"no-key-check", "Keys/Invalid", "must fail with ErrInvalidKey"},
	{"case-folding", "Keys/CaseNeverMixes", "differs only in case"},
	{"owner-leak", "Isolation/Owners", "owner B reads nothing"},
	{"last-entry-activity", "Info/ClockGoingBack", "not by the last entry's"},
	{"tail-off-by-one", "TailReader", "newest n entries"},
	{"prune-own-clock", "Pruner", "exactly the sessions storekit.Victims keeps"},
	{"no-lock", "Locker/MutualExclusion", "mutual exclusion"},
}

// TestSuiteCatchesBrokenStores runs the suite on each mutant in a child
// process (a failing suite fails its test, which cannot be undone in this
// one) and expects the failure the mutant deserves.
func TestSuiteCatchesBrokenStores(t *testing.T) {
	if os.Getenv("STORETEST_MUTANT") != "" {
		t.Skip("inside a mutant run")
	}
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestMutant$/"+m.subtest, "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "STORETEST_MUTANT="+m.name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the suite passed a store that breaks %s (err %v):\n%s", m.subtest, err, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestMutant/"+m.subtest) || !strings.Contains(string(out), m.message) {
				t.Fatalf("want subtest %s to fail with a message containing %q; got:\n%s", m.subtest, m.message, out)
			}
		})
	}
}

// TestMutant runs the suite on the mutant STORETEST_MUTANT names, for
// TestSuiteCatchesBrokenStores.
func TestMutant(t *testing.T) {
	kind := os.Getenv("STORETEST_MUTANT")
	if kind == "" {
		t.Skip("run by TestSuiteCatchesBrokenStores")
	}
	storetest.Run(t, func(t *testing.T) store.Store {
		return &mutant{Store: memstore.New(), kind: kind, titles: map[store.Key]string{}}
	})
}

type mutant struct {
	*memstore.Store
	kind   string
	titles map[store.Key]string // sticky-title: the first title a key ever had
}

// key applies the mutant's key handling.
func (m *mutant) key(k store.Key) store.Key {
	switch m.kind {
	case "case-folding":
		return store.Key{Agent: strings.ToLower(k.Agent), Owner: strings.ToLower(k.Owner), ID: strings.ToLower(k.ID)}
	case "no-key-check":
		clean := func(s string) string {
			s = strings.Map(func(r rune) rune {
				if r < 128 && (r == '.' || r == '-' || r == '_' || r == '@' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
					return r
				}
				return '_'
			}, s)
			if s == "" || s == "." || s == ".." {
				s = "_" + s
			}
			return s[:min(len(s), store.MaxIDLength)]
		}
		owner := k.Owner
		if owner != "" {
			owner = clean(owner)
		}
		return store.Key{Agent: clean(k.Agent), Owner: owner, ID: clean(k.ID)}
	}
	return k
}

func (m *mutant) Append(ctx context.Context, k store.Key, e transcript.Entry) error {
	k = m.key(k)
	switch m.kind {
	case "blind-append", "racy-append":
		entries, err := m.Store.Read(ctx, k)
		if err != nil {
			return err
		}
		if m.kind == "racy-append" {
			if e.ParentID != storetest.Head(entries) {
				return storekit.ConflictError(k, e.ParentID, storetest.Head(entries))
			}
			time.Sleep(time.Millisecond) // check, then act
			entries, err = m.Store.Read(ctx, k)
			if err != nil {
				return err
			}
		}
		e.ParentID = storetest.Head(entries)
	case "lossy-data":
		if len(e.Data) > 1<<16 {
			e.Data = []byte(`{"text":"cut"}`)
		}
	case "sticky-title":
		if err := m.Store.Append(ctx, k, e); err != nil {
			return err
		}
		if info, err := m.Store.Stat(ctx, k); err == nil && info.Title != "" && m.titles[k] == "" {
			m.titles[k] = info.Title
		}
		return nil
	}
	return m.Store.Append(ctx, k, e)
}

func (m *mutant) Read(ctx context.Context, k store.Key) ([]transcript.Entry, error) {
	entries, err := m.Store.Read(ctx, m.key(k))
	if m.kind == "owner-leak" && err == nil && len(entries) == 0 && k.Owner != "" {
		return m.Store.Read(ctx, store.Key{Agent: k.Agent, ID: k.ID})
	}
	return entries, err
}

func (m *mutant) Delete(ctx context.Context, k store.Key) error {
	return m.Store.Delete(ctx, m.key(k))
}

func (m *mutant) List(ctx context.Context, ns store.Namespace, opt store.ListOptions) (store.SessionPage, error) {
	if m.kind == "sticky-title" {
		page, err := m.Store.List(ctx, ns, opt)
		for i, info := range page.Sessions {
			if t := m.titles[info.Key()]; t != "" {
				page.Sessions[i].Title = t
			}
		}
		return page, err
	}
	if m.kind == "last-entry-activity" {
		page, err := m.Store.List(ctx, ns, opt)
		for i, info := range page.Sessions {
			entries, _ := m.Store.Read(ctx, info.Key())
			page.Sessions[i].LastActivity = entries[len(entries)-1].Timestamp
		}
		storekit.SortSessions(page.Sessions)
		return page, err
	}
	if m.kind != "offset-cursor" {
		return m.Store.List(ctx, m.key(ns.Key("x")).Namespace(), opt)
	}
	var all []store.SessionInfo
	inner := store.ListOptions{Limit: store.MaxListLimit}
	for {
		page, err := m.Store.List(ctx, ns, inner)
		if err != nil {
			return page, err
		}
		all = append(all, page.Sessions...)
		if page.NextCursor == "" {
			break
		}
		inner.Cursor = page.NextCursor
	}
	off := 0
	if opt.Cursor != "" {
		var err error
		if off, err = strconv.Atoi(opt.Cursor); err != nil || off < 0 || off > len(all) {
			return store.SessionPage{}, store.ErrInvalidCursor
		}
	}
	end := min(off+opt.PageSize(), len(all))
	page := store.SessionPage{Sessions: all[off:end]}
	if end < len(all) {
		page.NextCursor = strconv.Itoa(end)
	}
	return page, nil
}

func (m *mutant) ReadTail(ctx context.Context, k store.Key, n int) ([]transcript.Entry, int, error) {
	if m.kind == "tail-off-by-one" {
		n++
	}
	return m.Store.ReadTail(ctx, k, n)
}

func (m *mutant) Prune(ctx context.Context, ns store.Namespace, r store.Retention, now time.Time) (int, error) {
	if m.kind == "prune-own-clock" {
		now = time.Now()
	}
	return m.Store.Prune(ctx, ns, r, now)
}

func (m *mutant) Lock(ctx context.Context, k store.Key) (func(), error) {
	if m.kind == "no-lock" {
		return func() {}, nil
	}
	return m.Store.Lock(ctx, k)
}
