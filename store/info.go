package store

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spool-go/spool/transcript"
)

// TitleLength is the most runes of the first user message a title keeps.
const TitleLength = 80

// Apply updates i for entry e appended to session key. Stores call it on
// every append, starting from the zero SessionInfo, so that listing needs
// no transcript; Info does the same over a whole transcript.
func (i *SessionInfo) Apply(key Key, e transcript.Entry) {
	if i.Entries == 0 {
		i.ID, i.Agent, i.Owner = key.ID, key.Agent, key.Owner
		i.Started = e.Timestamp
	}
	i.Entries++
	if e.Timestamp.After(i.LastActivity) || i.Entries == 1 {
		i.LastActivity = e.Timestamp
	}
	if e.Type.IsMessage() {
		i.MessageCount++
	}
	switch e.Type {
	case transcript.TypeUserMessage:
		if i.Title == "" {
			var m transcript.UserMessage
			if e.DecodeData(&m) == nil {
				i.Title = Title(m.Text)
			}
		}
	case transcript.TypeApprovalRequest:
		i.PendingApprovals++
	case transcript.TypeApprovalDecision:
		if i.PendingApprovals > 0 {
			i.PendingApprovals--
		}
	}
}

// Info builds the SessionInfo of a whole transcript. It is the reference
// for what stores maintain incrementally with Apply.
func Info(key Key, entries []transcript.Entry) SessionInfo {
	var i SessionInfo
	for _, e := range entries {
		i.Apply(key, e)
	}
	return i
}

// Title returns the beginning of text as a one-line title: runs of white
// space become one space, and at most TitleLength runes are kept.
func Title(text string) string {
	var b strings.Builder
	n := 0
	space := false
	for _, r := range strings.TrimSpace(text) {
		if n == TitleLength {
			break
		}
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			if n == TitleLength-1 {
				break // a title never ends in a space
			}
			b.WriteByte(' ')
			n++
			space = false
		}
		if r == utf8.RuneError || unicode.IsControl(r) {
			continue
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// Timestamps a store must keep. Stores hold times as Unix nanoseconds
// (SQL columns, Redis scores, IndexedDB numbers), which reach from 1678 to
// 2262; CheckAppend refuses anything outside, so every store keeps the
// same entries.
var (
	MinTimestamp = time.Unix(0, math.MinInt64).UTC().Add(time.Second).Truncate(time.Second)
	MaxTimestamp = time.Unix(0, math.MaxInt64).UTC().Truncate(time.Second)
)

// CheckAppend checks e before a store appends it to session key whose last
// entry id is head (empty for a new session): ErrInvalidEntry for an entry
// that cannot be stored and read back exactly (no id, no type, a time
// outside MinTimestamp and MaxTimestamp, an unknown status, ids or a type
// that are not valid UTF-8 or hold control characters, data that is not a
// JSON object), ErrConflict for a parent that is not head. Every store
// calls it (or CheckEntry and CheckParent), so an entry one store takes,
// every store takes.
func CheckAppend(key Key, head string, e transcript.Entry) error {
	if _, err := CheckEntry(key, e); err != nil {
		return err
	}
	return CheckParent(key, head, e)
}

// CheckEntry is CheckAppend without the parent: it checks e alone and
// returns its wire encoding (transcript.AppendJSON), so that a store that
// keeps lines encodes each entry once. What it accepts reads back exactly
// as e (transcript.Parse of the encoding equals e); FuzzCheckEntry holds
// it to that.
func CheckEntry(key Key, e transcript.Entry) ([]byte, error) {
	switch {
	case e.ID == "":
		return nil, errorf(ErrInvalidEntry, "session %s: entry without id", key)
	case e.Type == "":
		return nil, errorf(ErrInvalidEntry, "session %s: entry %q without type", key, e.ID)
	case e.Timestamp.IsZero():
		return nil, errorf(ErrInvalidEntry, "session %s: entry %q without timestamp", key, e.ID)
	case e.Timestamp.Before(MinTimestamp) || e.Timestamp.After(MaxTimestamp):
		return nil, errorf(ErrInvalidEntry, "session %s: entry %q: timestamp %v outside %d-%d", key, e.ID, e.Timestamp, MinTimestamp.Year(), MaxTimestamp.Year())
	case e.Status != "" && !e.Status.Valid():
		return nil, errorf(ErrInvalidEntry, "session %s: entry %q: unknown status %q", key, e.ID, e.Status)
	}
	for _, f := range [...]struct{ name, v string }{{"id", e.ID}, {"parentId", e.ParentID}, {"turnId", e.TurnID}, {"type", string(e.Type)}} {
		if !plainText(f.v) {
			return nil, errorf(ErrInvalidEntry, "session %s: entry %.40q: %s %.40q is not valid UTF-8 without control characters", key, e.ID, f.name, f.v)
		}
	}
	line, err := transcript.AppendJSON(make([]byte, 0, 192+len(e.Data)), e)
	if err != nil {
		return nil, errorf(ErrInvalidEntry, "session %s: %v", key, err)
	}
	return line, nil
}

// CheckBatch checks entries, to be appended together in this order to
// session key (store.BatchAppender): each alone as CheckEntry does, and
// each one's parent the entry before it (ErrConflict otherwise, as
// appending them one by one would fail there). The first one's parent is
// the store's to check against the session's head. It returns their wire
// encodings.
func CheckBatch(key Key, entries []transcript.Entry) ([][]byte, error) {
	lines := make([][]byte, len(entries))
	for i, e := range entries {
		line, err := CheckEntry(key, e)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			if err := CheckParent(key, entries[i-1].ID, e); err != nil {
				return nil, err
			}
		}
		lines[i] = line
	}
	return lines, nil
}

// CheckParent returns ErrConflict (see ConflictError) unless e's parent is
// head, the id of the session's last entry (empty for a new session).
func CheckParent(key Key, head string, e transcript.Entry) error {
	if e.ParentID != head {
		return ConflictError(key, e.ParentID, head)
	}
	return nil
}

func plainText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// CheckChain checks that entries, read from session key starting at
// position start, are one chain: each entry's ParentID is the id of the
// entry before it (prev for the first; prev empty means unknown, and the
// first is not checked). An empty ParentID after the first entry is
// accepted, as other programs' transcripts may leave it out. A broken link
// (an entry missing, moved or replaced) is a *CorruptError naming the
// session and position.
func CheckChain(key Key, start int, prev string, entries []transcript.Entry) error {
	for i, e := range entries {
		if e.ParentID != "" && prev != "" && e.ParentID != prev {
			return &CorruptError{Key: key, Position: start + i,
				Err: fmt.Errorf("entry %.40q follows %.40q but names %.40q as its parent: an entry is missing or out of place", e.ID, prev, e.ParentID)}
		}
		if i == 0 && prev == "" && start == 0 && e.ParentID != "" {
			return &CorruptError{Key: key, Position: 0,
				Err: fmt.Errorf("the first entry %.40q names a parent %.40q: the start of the transcript is missing", e.ID, e.ParentID)}
		}
		prev = e.ID
	}
	return nil
}
