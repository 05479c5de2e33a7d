package store

import (
	"strings"
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

// CheckAppend checks e before a store appends it to session key whose last
// entry id is head (empty for a new session): ErrInvalidEntry for an entry
// that cannot be stored, ErrConflict for a parent that is not head.
func CheckAppend(key Key, head string, e transcript.Entry) error {
	switch {
	case e.ID == "":
		return errorf(ErrInvalidEntry, "session %s: entry without id", key)
	case e.Type == "":
		return errorf(ErrInvalidEntry, "session %s: entry %q without type", key, e.ID)
	case e.Timestamp.IsZero():
		return errorf(ErrInvalidEntry, "session %s: entry %q without timestamp", key, e.ID)
	}
	if _, err := transcript.AppendJSON(nil, e); err != nil {
		return errorf(ErrInvalidEntry, "session %s: %v", key, err)
	}
	if e.ParentID != head {
		return ConflictError(key, e.ParentID, head)
	}
	return nil
}
