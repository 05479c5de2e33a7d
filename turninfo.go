package spool

import (
	"slices"

	"github.com/spool-go/spool/transcript"
)

// TurnInfo is what the entries of a turn other than its messages say of
// it, for a reader to show beside its messages: how it ended (the status
// the history rules read: a cancelled, failed or refused turn is left
// out of the next request), the model that answered, the turn's usage
// and duration, its notices (a guard's refusal, a budget), and how each
// of its approvals was answered.
type TurnInfo struct {
	TurnID string `json:"turnId"`
	// Status is empty while the turn runs or waits on an approval, or when
	// the page did not read its end (see MessagePage.Turns).
	Status     transcript.Status             `json:"status,omitempty"`
	Model      string                        `json:"model,omitempty"`
	Usage      *transcript.Usage             `json:"usage,omitempty"`
	DurationMs int64                         `json:"durationMs,omitempty"`
	Error      *transcript.ErrorInfo         `json:"error,omitempty"`
	Notices    []transcript.GovernanceNotice `json:"notices,omitempty"`
	Decisions  []transcript.ApprovalDecision `json:"decisions,omitempty"`
}

// turnInfos gathers TurnInfo from the entries a page reads, in the order
// it reads them.
type turnInfos struct {
	byTurn map[string]*TurnInfo
	order  []string // turn ids, as first noted
}

// note records what entry e says of its turn.
func (t *turnInfos) note(e transcript.Entry) {
	switch e.Type {
	case transcript.TypeTurnEnd, transcript.TypeAssistantMessage, transcript.TypeGovernanceNotice, transcript.TypeApprovalDecision:
	default:
		return
	}
	if t.byTurn == nil {
		t.byTurn = map[string]*TurnInfo{}
	}
	ti := t.byTurn[e.TurnID]
	if ti == nil {
		ti = &TurnInfo{TurnID: e.TurnID}
		t.byTurn[e.TurnID] = ti
		t.order = append(t.order, e.TurnID)
	}
	switch e.Type {
	case transcript.TypeTurnEnd:
		var d transcript.TurnEnd
		if e.DecodeData(&d) == nil {
			ti.Status, ti.DurationMs, ti.Error = e.Status, d.DurationMs, d.Error
			u := d.Usage
			ti.Usage = &u
		}
	case transcript.TypeAssistantMessage:
		var d transcript.AssistantMessage
		if e.DecodeData(&d) == nil && d.Model != "" {
			ti.Model = d.Model
		}
	case transcript.TypeGovernanceNotice:
		var d transcript.GovernanceNotice
		if e.DecodeData(&d) == nil {
			ti.Notices = append(ti.Notices, d)
		}
	case transcript.TypeApprovalDecision:
		var d transcript.ApprovalDecision
		if e.DecodeData(&d) == nil {
			ti.Decisions = append(ti.Decisions, d)
		}
	}
}

// list returns the infos in transcript order. Entries noted newest first
// (a descending page) are put back in that order, the turns' notices and
// decisions too.
func (t *turnInfos) list(reversed bool) []TurnInfo {
	out := make([]TurnInfo, 0, len(t.order))
	for _, id := range t.order {
		ti := *t.byTurn[id]
		if reversed {
			slices.Reverse(ti.Notices)
			slices.Reverse(ti.Decisions)
		}
		out = append(out, ti)
	}
	if reversed {
		slices.Reverse(out)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
