package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/model"
)

type compactRequest struct {
	KeepTurns int `json:"keepTurns,omitempty"`
}

// handleCompact is POST /v1/sessions/{id}/compact {"keepTurns"?}: the
// session's older turns summarized for the model (spool.Session.Compact,
// history rule 10). 200 with the spool.CompactResult; 409
// nothing_to_compact, 409 turn_running, 409 approval_pending (naming the
// approval: the compaction would split the turn that waits on it), 502
// summarizer_failed.
func (s *Server) handleCompact(w http.ResponseWriter, r *http.Request) {
	var req compactRequest
	if err := decodeOptional(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.KeepTurns < 0 {
		s.writeError(w, r, errf(http.StatusBadRequest, CodeInvalidRequest, `"keepTurns" must be 0 (the agent's) or more`))
		return
	}
	ctx, sess, ok := s.existing(w, r)
	if !ok {
		return
	}
	res, err := sess.Compact(ctx, spool.CompactOptions{KeepTurns: req.KeepTurns})
	if errors.Is(err, spool.ErrApprovalPending) {
		if pending, perr := sess.PendingApprovals(ctx); perr == nil && len(pending) > 0 {
			p := pending[0]
			err = errf(http.StatusConflict, CodeApprovalPending, fmt.Sprintf("the session's turn %s waits on approval %s (a %s call): approve or deny it first (POST /v1/sessions/{id}/approvals/{approvalId}), then compact; a compaction now would split that turn", p.TurnID, p.ID, p.Tool))
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// historySummary is the history route's "summary": the compaction the
// history uses, and where its two messages are in "messages" (index of
// the question; -1 when the window left them out).
type historySummary struct {
	EntryID   string `json:"entryId"`
	FirstTurn string `json:"firstTurn"`
	LastTurn  string `json:"lastTurn"`
	Text      string `json:"text"`
	Index     int    `json:"index"`
}

// summaryIn returns what the history msgs of the transcript's summary sum
// says for the history route.
func summaryIn(msgs []model.Message, sum history.Summary) *historySummary {
	hs := &historySummary{EntryID: sum.ID, FirstTurn: sum.FirstTurn, LastTurn: sum.LastTurn, Text: sum.Text, Index: -1}
	answer := history.SummaryMessages(sum.Text)[1]
	for i := 0; i+1 < len(msgs); i++ {
		if msgs[i].Role == model.RoleUser && strings.HasSuffix(msgs[i].Content, history.SummaryRequest) && msgs[i+1].Role == answer.Role && msgs[i+1].Content == answer.Content {
			hs.Index = i
			break
		}
	}
	return hs
}
