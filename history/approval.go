package history

import (
	"encoding/json"

	"github.com/spool-go/spool/transcript"
)

// PendingApprovals returns the approval requests among entries that have no
// decision: no approval.decision with the same approvalId anywhere in
// entries. They are in transcript order. A request without an approvalId
// string is left out (Build ignores it too); its other fields are read as
// far as they decode.
//
// It looks at the requests alone, whatever their turn became: a request of
// a turn that has since ended (cancelled, say) is still listed, while Build
// counts a turn as waiting only until it ends. A suffix of a transcript
// lists only the requests it holds.
func PendingApprovals(entries []transcript.Entry) []transcript.ApprovalRequest {
	var decided []string
	requests := 0
	for i := range entries {
		switch entries[i].Type {
		case transcript.TypeApprovalDecision:
			if id, ok := approvalID(entries[i].Data); ok {
				decided = append(decided, id)
			}
		case transcript.TypeApprovalRequest:
			requests++
		}
	}
	if requests == 0 {
		return nil
	}
	isDecided := decidedSet(decided)
	var pending []transcript.ApprovalRequest
	for i := range entries {
		if entries[i].Type != transcript.TypeApprovalRequest {
			continue
		}
		id, ok := approvalID(entries[i].Data)
		if !ok || isDecided(id) {
			continue
		}
		var r transcript.ApprovalRequest
		_ = json.Unmarshal(entries[i].Data, &r) // other fields are read as far as they go
		pending = append(pending, r)
	}
	return pending
}

// approvalID returns the approvalId of an approval entry's data, and false
// when there is none: such an entry answers or asks nothing Build or
// PendingApprovals can match.
func approvalID(data json.RawMessage) (string, bool) {
	a, ok := fastApproval(data)
	if !ok {
		a = approvalData{}
		ok = json.Unmarshal(data, &a) == nil
	}
	if !ok || a.ApprovalID == "" {
		return "", false
	}
	return a.ApprovalID, true
}

// decidedSet returns a membership test for ids: a scan for the few
// decisions of a usual session, a map when there are many.
func decidedSet(ids []string) func(string) bool {
	if len(ids) <= 16 {
		return func(id string) bool {
			for _, d := range ids {
				if d == id {
					return true
				}
			}
			return false
		}
	}
	m := make(map[string]struct{}, len(ids))
	for _, d := range ids {
		m[d] = struct{}{}
	}
	return func(id string) bool {
		_, ok := m[id]
		return ok
	}
}
