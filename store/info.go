package store

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spool-go/spool/transcript"
)

// TitleLength is the most runes of the first user message a title keeps.
const TitleLength = 80

// Apply updates i for entry e appended to session key: it is the
// definition of each field of SessionInfo. Stores call it on every append,
// starting from the zero SessionInfo, so that listing needs no transcript.
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
