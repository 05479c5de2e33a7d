package spool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// ErrEmptyTitle is the error of Rename with a title of nothing but white
// space.
var ErrEmptyTitle = errors.New("spool: the title is empty")

// Rename gives the session a title: it appends a session.title entry,
// and from then on the session's SessionInfo (and every store's list)
// has this title, on one line and at most store.TitleLength runes, in
// place of the beginning of the first user message. The newest rename
// wins. It fails with store.ErrNotFound for a session that has no entry
// (a rename never creates one), ErrEmptyTitle for a blank title, and
// ErrApprovalPending while a turn waits on an approval (an entry of
// another turn inside it would split it).
func (s *Session) Rename(ctx context.Context, title string) error {
	if strings.TrimSpace(title) == "" {
		return ErrEmptyTitle
	}
	return s.with(ctx, writing, func(ctx context.Context, sl *slot) error {
		if sl.st.count == 0 {
			return fmt.Errorf("%w: session %s", store.ErrNotFound, s.key)
		}
		if len(sl.st.pending) > 0 {
			return fmt.Errorf("%w (session %s)", ErrApprovalPending, s.key)
		}
		w := s.writer(sl)
		_, err := w.append(ctx, transcript.TypeSessionTitle, sl.st.newTurnID(s.a.now()), "", transcript.SessionTitle{Title: title})
		return err
	})
}
