package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Type names what an entry records.
type Type string

// The entry types spool writes. Other types are valid entries; history
// ignores them.
const (
	TypeUserMessage      Type = "user.message"
	TypeAssistantMessage Type = "assistant.message"
	TypeApprovalRequest  Type = "approval.request"
	TypeApprovalDecision Type = "approval.decision"
	TypeToolResult       Type = "tool.execution_complete"
	TypeGovernanceNotice Type = "governance.notice"
	TypeSessionMode      Type = "session.mode"
	TypeTurnEnd          Type = "assistant.turn_end"
	TypeBranch           Type = "session.branch"
	TypeFork             Type = "session.fork"
	TypeCompaction       Type = "session.compaction"
)

// IsMessage reports whether entries of type t are messages of the
// conversation: what the user said, what the assistant answered, and what a
// tool returned. Message counts and message pages count exactly these.
func (t Type) IsMessage() bool {
	return t == TypeUserMessage || t == TypeAssistantMessage || t == TypeToolResult
}

// Status is how a turn ended. It is set only on TypeTurnEnd entries.
type Status string

// Turn statuses.
const (
	StatusOK              Status = "ok"
	StatusPromptBlocked   Status = "prompt_blocked"
	StatusResponseBlocked Status = "response_blocked"
	StatusError           Status = "error"
	StatusCancelled       Status = "cancelled"
)

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusOK, StatusPromptBlocked, StatusResponseBlocked, StatusError, StatusCancelled:
		return true
	}
	return false
}

// Entry is one line of a transcript.
//
// The JSON field names are wire-stable: id, parentId, timestamp, type,
// turnId, status and data; parentId and status are omitted when empty.
// Data is always a JSON object (an entry built with a nil Data encodes it
// as {}).
type Entry struct {
	ID        string          // unique, sortable by creation (a ULID for entries spool writes)
	ParentID  string          // the id of the entry before it in the session; empty on the first
	Timestamp time.Time       // when it was written; encoded in UTC
	Type      Type            // what it records
	TurnID    string          // the turn it belongs to (spool's sort after the session's earlier turns': a ULID, see NewIDAfter)
	Status    Status          // only on TypeTurnEnd
	Data      json.RawMessage // the content, a JSON object
}

// New returns an entry of type typ in turn turnID with a fresh id, the
// timestamp now (to the millisecond) and data marshaled from data (a typed struct of this package,
// a map, or json.RawMessage). ParentID is left for the writer to set.
func New(now time.Time, typ Type, turnID string, data any) (Entry, error) {
	raw, err := marshalData(data)
	if err != nil {
		return Entry{}, fmt.Errorf("transcript: %s data: %w", typ, err)
	}
	now = now.UTC().Truncate(time.Millisecond)
	return Entry{
		ID:        NewID(now),
		Timestamp: now,
		Type:      typ,
		TurnID:    turnID,
		Data:      raw,
	}, nil
}

// DecodeData unmarshals the entry's data into v, typically a pointer to one
// of the typed data structs of this package.
func (e Entry) DecodeData(v any) error {
	data := e.Data
	if len(data) == 0 {
		data = emptyObject
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("transcript: entry %s (%s): data: %w", e.ID, e.Type, err)
	}
	return nil
}

// Equal reports whether e and o are the same entry: the same fields, and
// data that is the same JSON text once compacted.
func (e Entry) Equal(o Entry) bool {
	if e.ID != o.ID || e.ParentID != o.ParentID || !e.Timestamp.Equal(o.Timestamp) ||
		e.Type != o.Type || e.TurnID != o.TurnID || e.Status != o.Status {
		return false
	}
	a, errA := compactObject(e.Data)
	b, errB := compactObject(o.Data)
	if errA != nil || errB != nil {
		return string(e.Data) == string(o.Data)
	}
	return string(a) == string(b)
}

var emptyObject = json.RawMessage(`{}`)

func marshalData(data any) (json.RawMessage, error) {
	switch d := data.(type) {
	case nil:
		return emptyObject, nil
	case json.RawMessage:
		return compactObject(d)
	}
	// Marshal without HTML escaping, so transcripts stay readable as written.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(data); err != nil {
		return nil, err
	}
	// Encode ends its value with a newline, which would send it to
	// json.Compact: without it, the compact check passes in one scan,
	// and the bytes are ours to keep.
	b := buf.Bytes()
	b = b[:len(b)-1]
	if len(b) > 0 && b[0] == '{' && compactJSON(b) {
		return b, nil
	}
	return compactObject(b)
}
