package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// hangLimit is how long the suite lets a call run before it reports that
// the call hangs. It is not a performance bound: a correct store answers in
// far less, and only a call that never returns reaches it.
const hangLimit = 10 * time.Second

// name returns a random id with the given prefix, valid as an agent, owner
// or session id, so that subtests never meet each other's data in a store
// that shares state.
func name(prefix string) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return prefix + "-" + hex.EncodeToString(b[:])
}

// newNamespace returns a project scope of an agent of the subtest's own.
func newNamespace() store.Namespace { return store.Namespace{Agent: name("agent")} }

// base is a timestamp near the present, to the millisecond, that a subtest
// builds its timestamps from.
func base() time.Time { return time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour) }

func appendAll(t *testing.T, s store.Store, key store.Key, entries ...transcript.Entry) {
	t.Helper()
	for i, e := range entries {
		if err := s.Append(t.Context(), key, e); err != nil {
			t.Fatalf("Append of entry %d (%s) to %s, a valid child of the session's last entry: %v", i, e.Type, key, err)
		}
	}
}

// seed appends a new session of n chained entries starting at start and
// returns them.
func seed(t *testing.T, s store.Store, key store.Key, start time.Time, n int) []transcript.Entry {
	t.Helper()
	entries := Chain("", start, n)
	appendAll(t, s, key, entries...)
	return entries
}

func read(t *testing.T, s store.Store, key store.Key) []transcript.Entry {
	t.Helper()
	got, err := s.Read(t.Context(), key)
	if err != nil {
		t.Fatalf("Read %s: %v", key, err)
	}
	return got
}

// sameEntries reports, as a message, how got differs from want; empty when
// they are the same entries in the same order (transcript.Entry.Equal).
func sameEntries(got, want []transcript.Entry) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d entries, want %d (ids %s, want %s)", len(got), len(want), ids(got), ids(want))
	}
	for i := range got {
		if !got[i].Equal(want[i]) {
			return fmt.Sprintf("entry %d differs:\n got  %s\n want %s", i, show(got[i]), show(want[i]))
		}
	}
	return ""
}

// show renders an entry for a failure message, with long data cut short.
func show(e transcript.Entry) string {
	b, err := transcript.AppendJSON(nil, e)
	if err != nil {
		return fmt.Sprintf("%+v", e)
	}
	if len(b) > 300 {
		return fmt.Sprintf("%s… (%d bytes; timestamp %s)", b[:300], len(b), e.Timestamp.Format(time.RFC3339Nano))
	}
	return string(b)
}

func ids(entries []transcript.Entry) string {
	s := make([]string, len(entries))
	for i, e := range entries {
		s[i] = e.ID
	}
	if len(s) > 8 {
		return fmt.Sprintf("[%s … %s]", strings.Join(s[:4], " "), strings.Join(s[len(s)-4:], " "))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// checkRead fails t unless the session reads exactly want.
func checkRead(t *testing.T, s store.Store, key store.Key, want []transcript.Entry, rule string) {
	t.Helper()
	if d := sameEntries(read(t, s, key), want); d != "" {
		t.Errorf("%s: Read %s: %s", rule, key, d)
	}
}

// diffInfo reports, as a message, the fields in which got differs from
// want; empty when they agree (times compared with Equal).
func diffInfo(got, want store.SessionInfo) string {
	var d []string
	f := func(field string, g, w any) { d = append(d, fmt.Sprintf("%s %v, want %v", field, g, w)) }
	if got.ID != want.ID {
		f("ID", got.ID, want.ID)
	}
	if got.Agent != want.Agent {
		f("Agent", got.Agent, want.Agent)
	}
	if got.Owner != want.Owner {
		f("Owner", got.Owner, want.Owner)
	}
	if !got.Started.Equal(want.Started) {
		f("Started", got.Started, want.Started)
	}
	if !got.LastActivity.Equal(want.LastActivity) {
		f("LastActivity", got.LastActivity, want.LastActivity)
	}
	if got.Title != want.Title {
		f("Title", fmt.Sprintf("%q", got.Title), fmt.Sprintf("%q", want.Title))
	}
	if got.MessageCount != want.MessageCount {
		f("MessageCount", got.MessageCount, want.MessageCount)
	}
	if got.PendingApprovals != want.PendingApprovals {
		f("PendingApprovals", got.PendingApprovals, want.PendingApprovals)
	}
	if got.Compactions != want.Compactions {
		f("Compactions", got.Compactions, want.Compactions)
	}
	if got.Entries != want.Entries {
		f("Entries", got.Entries, want.Entries)
	}
	return strings.Join(d, "; ")
}

// listAll walks every page of namespace's listing with page size limit and
// returns the sessions in the order the pages gave them.
func listAll(t *testing.T, s store.Store, ns store.Namespace, limit int) []store.SessionInfo {
	t.Helper()
	var all []store.SessionInfo
	opt := store.ListOptions{Limit: limit}
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatalf("List of %s: over 10000 pages; the cursors never end", ns)
		}
		page, err := s.List(t.Context(), ns, opt)
		if err != nil {
			t.Fatalf("List of %s (page %d): %v", ns, pages+1, err)
		}
		if len(page.Sessions) > opt.PageSize() {
			t.Fatalf("List of %s (page %d): %d sessions with Limit %d", ns, pages+1, len(page.Sessions), limit)
		}
		all = append(all, page.Sessions...)
		if page.NextCursor == "" {
			return all
		}
		if len(page.Sessions) == 0 {
			t.Fatalf("List of %s (page %d): an empty page with a NextCursor; an empty page is the last", ns, pages+1)
		}
		opt.Cursor = page.NextCursor
	}
}

// find returns the info of session id in sessions.
func find(sessions []store.SessionInfo, id string) (store.SessionInfo, int) {
	n := 0
	var found store.SessionInfo
	for _, info := range sessions {
		if info.ID == id {
			found = info
			n++
		}
	}
	return found, n
}

// infoIDs lists the session ids of sessions, for failure messages.
func infoIDs(sessions []store.SessionInfo) []string {
	s := make([]string, len(sessions))
	for i, info := range sessions {
		s[i] = info.ID
	}
	return s
}

// returns runs f and fails t if it has not returned within hangLimit. It
// reports whether f returned.
func returns(t *testing.T, what string, f func()) bool {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return true
	case <-time.After(hangLimit):
		t.Errorf("%s has not returned after %v: it hangs", what, hangLimit)
		return false
	}
}

// cancelled returns a context that is already cancelled.
func cancelled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}
