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
	case transcript.TypeSessionTitle:
		var t transcript.SessionTitle
		if e.DecodeData(&t) == nil && oneLine(t.Title) != "" {
			i.Title = oneLine(t.Title)
		}
	case transcript.TypeCompaction:
		i.Compactions++
	case transcript.TypeApprovalRequest:
		i.PendingApprovals++
	case transcript.TypeApprovalDecision:
		if i.PendingApprovals > 0 {
			i.PendingApprovals--
		}
	}
}

// Retitles reports whether e renames its session (a session.title entry
// with a title): a store that keeps the title of its list records apart
// from SessionInfo.Apply sets it from such an entry even when the session
// has one, where it otherwise keeps the first.
func Retitles(e transcript.Entry) bool {
	if e.Type != transcript.TypeSessionTitle {
		return false
	}
	var t transcript.SessionTitle
	return e.DecodeData(&t) == nil && oneLine(t.Title) != ""
}

// Title returns the beginning of text as a one-line title: runs of white
// space become one space, and at most TitleLength runes are kept. Leading
// command lines (a line such as "/call save_note {...}" that scripts a
// tool call) are no title: the text after them is, and a text of nothing
// else gives none, so that the next user message names the session.
func Title(text string) string {
	return oneLine(skipCommands(text))
}

// oneLine is text as one trimmed line of at most TitleLength runes: what
// a title is, whether taken from a message or given by a rename.
func oneLine(text string) string {
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

// skipCommands returns text after its leading command lines: lines whose
// first word is a slash and a lower-case name ("/call", "/retry"), not a
// path ("/etc/hosts").
func skipCommands(text string) string {
	for {
		t := strings.TrimLeftFunc(text, unicode.IsSpace)
		if !isCommand(t) {
			return text
		}
		_, rest, ok := strings.Cut(t, "\n")
		if !ok {
			return ""
		}
		text = rest
	}
}

func isCommand(line string) bool {
	if len(line) < 2 || line[0] != '/' {
		return false
	}
	for i := 1; i < len(line); i++ {
		c := line[i]
		switch {
		case c >= 'a' && c <= 'z', c == '_', c == '-', i > 1 && c >= '0' && c <= '9':
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return i > 1
		default:
			return false
		}
	}
	return true
}
