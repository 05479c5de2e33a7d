package spool

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// Message is one message of a session as people read it: what the user
// wrote, what the assistant answered (with the tool calls it made), and
// what each tool returned. Unlike History, Messages and Page return every
// message ever exchanged, including those of failed and blocked turns.
type Message struct {
	ID         string                `json:"id"` // the transcript entry's id
	TurnID     string                `json:"turnId"`
	Role       model.Role            `json:"role"`
	Text       string                `json:"text"`
	ToolCalls  []transcript.ToolCall `json:"toolCalls,omitempty"`  // assistant
	ToolCallID string                `json:"toolCallId,omitempty"` // tool
	Tool       string                `json:"tool,omitempty"`       // tool
	IsError    bool                  `json:"isError,omitempty"`    // tool
	Time       time.Time             `json:"time"`
}

// messageOf returns the message an entry holds, if it is one.
func messageOf(e transcript.Entry) (Message, bool) {
	m := Message{ID: e.ID, TurnID: e.TurnID, Time: e.Timestamp}
	switch e.Type {
	case transcript.TypeUserMessage:
		var d transcript.UserMessage
		if e.DecodeData(&d) != nil {
			return m, false
		}
		m.Role, m.Text = model.RoleUser, d.Text
	case transcript.TypeAssistantMessage:
		var d transcript.AssistantMessage
		if e.DecodeData(&d) != nil {
			return m, false
		}
		m.Role, m.Text, m.ToolCalls = model.RoleAssistant, d.Text, d.ToolCalls
	case transcript.TypeToolResult:
		var d transcript.ToolResult
		if e.DecodeData(&d) != nil {
			return m, false
		}
		m.Role, m.Text, m.ToolCallID, m.Tool, m.IsError = model.RoleTool, d.Result, d.CallID, d.Tool, d.IsError
	default:
		return m, false
	}
	return m, true
}

// Order is the direction of a page.
type Order string

// Orders.
const (
	OrderAsc  Order = "asc"  // oldest first
	OrderDesc Order = "desc" // newest first: how a chat view loads on scroll
)

// PageOptions selects a page of messages.
type PageOptions struct {
	Limit  int    // messages per page: 50 when zero or less, at most 1000
	Order  Order  // OrderDesc (default) or OrderAsc
	Cursor string // NextCursor of the page before; empty for the first
}

// MessagePage is one page of a session's messages.
type MessagePage struct {
	Messages   []Message `json:"messages"`
	NextCursor string    `json:"nextCursor"` // empty on the last page
}

// Page returns one page of the session's messages, reading only the part
// of the transcript the page needs when the store can read ranges. Pages
// never overlap. The cursor is opaque and bound to this session and order;
// another one is store.ErrInvalidCursor.
func (s *Session) Page(ctx context.Context, opt PageOptions) (MessagePage, error) {
	limit := store.ListOptions{Limit: opt.Limit}.PageSize()
	if opt.Order == "" {
		opt.Order = OrderDesc
	}
	if opt.Order != OrderAsc && opt.Order != OrderDesc {
		return MessagePage{}, fmt.Errorf("spool: unknown order %q (asc or desc)", opt.Order)
	}
	pos := -1
	if opt.Cursor != "" {
		p, err := decodePageCursor(s.key, opt.Order, opt.Cursor)
		if err != nil {
			return MessagePage{}, err
		}
		pos = p
	}
	st := s.a.cfg.Store
	chunk := max(2*limit, 64)
	var page MessagePage
	if opt.Order == OrderDesc {
		// Walk back from pos (exclusive), or from the end.
		var entries []transcript.Entry
		var total int
		var err error
		if pos < 0 {
			entries, total, err = store.ReadTail(ctx, st, s.key, chunk)
			pos = total
		} else {
			entries, total, err = store.ReadRange(ctx, st, s.key, pos-chunk, pos)
			pos = min(pos, total)
		}
		for {
			if err != nil {
				return MessagePage{}, err
			}
			start := pos - len(entries)
			for i := len(entries) - 1; i >= 0; i-- {
				if m, ok := messageOf(entries[i]); ok {
					if len(page.Messages) == limit {
						page.NextCursor = encodePageCursor(s.key, opt.Order, start+i+1)
						return page, nil
					}
					page.Messages = append(page.Messages, m)
				}
			}
			if start <= 0 {
				return page, nil
			}
			pos = start
			entries, _, err = store.ReadRange(ctx, st, s.key, pos-chunk, pos)
		}
	}
	// Ascending: walk forward from pos (inclusive), or from the start.
	pos = max(pos, 0)
	for {
		entries, total, err := store.ReadRange(ctx, st, s.key, pos, pos+chunk)
		if err != nil {
			return MessagePage{}, err
		}
		for i, e := range entries {
			if m, ok := messageOf(e); ok {
				if len(page.Messages) == limit {
					page.NextCursor = encodePageCursor(s.key, opt.Order, pos+i)
					return page, nil
				}
				page.Messages = append(page.Messages, m)
			}
		}
		pos += len(entries)
		if len(entries) == 0 || pos >= total {
			return page, nil
		}
	}
}

// Messages returns the newest limit messages, oldest first; all of them
// when limit is zero or less.
func (s *Session) Messages(ctx context.Context, limit int) ([]Message, error) {
	if limit <= 0 {
		entries, err := s.a.cfg.Store.Read(ctx, s.key)
		if err != nil {
			return nil, err
		}
		var out []Message
		for _, e := range entries {
			if m, ok := messageOf(e); ok {
				out = append(out, m)
			}
		}
		return out, nil
	}
	var out []Message
	opt := PageOptions{Limit: min(limit, store.MaxListLimit), Order: OrderDesc}
	for len(out) < limit {
		opt.Limit = min(limit-len(out), store.MaxListLimit)
		p, err := s.Page(ctx, opt)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Messages...)
		if p.NextCursor == "" {
			break
		}
		opt.Cursor = p.NextCursor
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// A page cursor is a transcript position bound to the session and order:
// version, an 8-byte tag of both, and the position.
func encodePageCursor(k store.Key, o Order, pos int) string {
	b := append([]byte{1}, pageTag(k, o)...)
	b = binary.BigEndian.AppendUint64(b, uint64(pos))
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodePageCursor(k store.Key, o Order, c string) (int, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) != 17 || b[0] != 1 {
		return 0, fmt.Errorf("%w: not a page cursor", store.ErrInvalidCursor)
	}
	if string(b[1:9]) != string(pageTag(k, o)) {
		return 0, fmt.Errorf("%w: a cursor of another session or order", store.ErrInvalidCursor)
	}
	pos := binary.BigEndian.Uint64(b[9:])
	if pos > 1<<40 {
		return 0, fmt.Errorf("%w: position out of range", store.ErrInvalidCursor)
	}
	return int(pos), nil
}

func pageTag(k store.Key, o Order) []byte {
	h := sha256.Sum256([]byte("spool page cursor\x00" + k.Agent + "\x00" + k.Owner + "\x00" + k.ID + "\x00" + string(o)))
	return h[:8]
}

// prune applies the agent's Retention to the caller's namespace. It runs
// when a new session is created; a failure is logged, never fails the turn.
func (a *Agent) prune(ctx context.Context) {
	s, err := a.namespace(ctx)
	if err != nil {
		return
	}
	if _, err := store.Prune(context.WithoutCancel(ctx), a.cfg.Store, s, a.cfg.Retention, a.now()); err != nil {
		a.log.WarnContext(ctx, "retention: prune failed", "error", err)
	}
}
