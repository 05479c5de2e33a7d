package spool

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// Message is one message of a session as people read it: what the user
// wrote, what the assistant answered (with the tool calls it made), and
// what each tool returned. Unlike History, Messages and Page return every
// message of the active branch, including those of failed and blocked
// turns; with PageOptions.AllBranches, of every branch.
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
	// Branch says which version of its place the message's turn is, when
	// the turn has other versions (it was regenerated or edited, or it is
	// a regeneration or an edit); nil otherwise.
	Branch *BranchInfo `json:"branch,omitempty"`
	// Superseded marks a message of a turn that is not on the active
	// branch (listed only with PageOptions.AllBranches).
	Superseded bool `json:"superseded,omitempty"`
}

// BranchInfo places a turn among its versions: the turn shown as "2 / 3"
// has Index 2 and Count 3. Turns lists the versions' turn ids, oldest
// first (Turns[Index-1] is the turn itself): SwitchBranch to one of them
// makes it active.
type BranchInfo struct {
	Index int      `json:"index"`
	Count int      `json:"count"`
	Turns []string `json:"turns"`
}

// branchInfo returns where turn id stands among its versions, or nil.
func branchInfo(br *history.Branches, id string) *BranchInfo {
	turns := br.Alternatives(id)
	if turns == nil {
		return nil
	}
	return &BranchInfo{Index: slices.Index(turns, id) + 1, Count: len(turns), Turns: turns}
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
	// AllBranches lists the messages of every branch, those of turns off
	// the active branch marked Superseded; without it a page holds the
	// active branch only.
	AllBranches bool
}

// MessagePage is one page of a session's messages.
type MessagePage struct {
	Messages   []Message `json:"messages"`
	NextCursor string    `json:"nextCursor"` // empty on the last page
	// Turns describes, in transcript order, each turn of which the page
	// read entries other than user messages: the turns of its messages,
	// and one whose end lies just after the page's (descending) or before
	// it (ascending). A turn split between pages is described by each from
	// its part, so a reader merges them by TurnID.
	Turns []TurnInfo `json:"turns,omitempty"`
}

// Page returns one page of the session's messages, reading only the part
// of the transcript the page needs when the store can read ranges. Pages
// never overlap. The cursor is opaque and bound to this session and order;
// another one is store.ErrInvalidCursor.
//
// Which turns are on the active branch, and their versions, come from the
// markers after the page, which the agent keeps from the pages it served
// (a small record per session): the first page from the newest end reads
// the page alone, and a later page reads what the agent has not seen of
// the transcript after it, nothing on the usual path of a chat view.
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
	pg := &pager{s: s, opt: opt, limit: limit, chunk: max(2*limit, 64)}
	if opt.Order == OrderDesc {
		return pg.desc(ctx, pos)
	}
	return pg.asc(ctx, max(pos, 0))
}

// pager makes one page.
type pager struct {
	s     *Session
	opt   PageOptions
	limit int
	chunk int
	br    *history.Branches
	page  MessagePage
	turns turnInfos
}

// take adds message m, of a turn on the active branch or not, unless the
// page has no room: then it reports false.
func (pg *pager) take(m Message, active bool) bool {
	if !active && !pg.opt.AllBranches {
		return true
	}
	if len(pg.page.Messages) == pg.limit {
		return false
	}
	m.Superseded = !active
	pg.page.Messages = append(pg.page.Messages, m)
	return true
}

// finish gives the page's messages their versions.
func (pg *pager) finish() MessagePage {
	for i := range pg.page.Messages {
		m := &pg.page.Messages[i]
		m.Branch = branchInfo(pg.br, m.TurnID)
	}
	pg.page.Turns = pg.turns.list(pg.opt.Order == OrderDesc)
	return pg.page
}

// desc walks back from pos (exclusive), or from the end when pos < 0.
func (pg *pager) desc(ctx context.Context, pos int) (MessagePage, error) {
	s, st, key := pg.s, pg.s.a.cfg.Store, pg.s.key
	var entries []transcript.Entry
	var total int
	var err error
	first := pos < 0
	if first {
		entries, total, err = store.ReadTail(ctx, st, key, pg.chunk)
		pos = total
	} else {
		entries, total, err = store.ReadRange(ctx, st, key, pos-pg.chunk, pos)
		pos = min(pos, total)
	}
	if err != nil {
		return MessagePage{}, err
	}
	var v pageView
	if first {
		// The walk reads every entry after the page: the markers it needs.
		// The agent's view, when current, holds more for the next pages.
		v = pageView{marks: &history.Branches{}, from: total, to: total}
		if len(entries) > 0 {
			v.head = entries[len(entries)-1].ID
			if c, ok := s.a.views.get(key); ok && c.to == total && c.head == v.head {
				v = c
			}
		}
	} else if v, err = s.markers(ctx, pos, total); err != nil {
		return MessagePage{}, err
	}
	pg.br = v.marks
	start := pos - len(entries)
	peek := "" // the turn of the page's oldest message, once the page is full
	for {
		for i := len(entries) - 1; i >= 0; i-- {
			p, e := start+i, entries[i]
			if peek != "" && e.TurnID != peek {
				return pg.end(v, p+1)
			}
			pg.turns.note(e)
			if e.Type == transcript.TypeBranch {
				pg.br.Add(p, e)
				continue
			}
			m, ok := messageOf(e)
			if !ok || peek != "" {
				continue
			}
			if !pg.take(m, pg.br.ActiveFrom(e.TurnID, p)) {
				// Full. The entries of its oldest turn just before it may
				// hold the turn's own marker, which says its versions.
				pg.page.NextCursor = encodePageCursor(key, pg.opt.Order, p+1)
				peek = pg.page.Messages[len(pg.page.Messages)-1].TurnID
			}
		}
		if start <= 0 {
			return pg.end(v, 0)
		}
		pos = start
		entries, _, err = store.ReadRange(ctx, st, key, pos-pg.chunk, pos)
		if err != nil {
			return MessagePage{}, err
		}
		start = pos - len(entries)
	}
}

// end finishes a descending page that read the transcript back to
// position walked, keeping what its markers said for the next page.
func (pg *pager) end(v pageView, walked int) (MessagePage, error) {
	v.from = min(v.from, walked)
	v.marks = pg.br
	pg.s.a.views.put(pg.s.key, v)
	return pg.finish(), nil
}

// asc walks forward from pos (inclusive).
func (pg *pager) asc(ctx context.Context, pos int) (MessagePage, error) {
	s, st, key := pg.s, pg.s.a.cfg.Store, pg.s.key
	entries, total, err := store.ReadRange(ctx, st, key, pos, pos+pg.chunk)
	if err != nil {
		return MessagePage{}, err
	}
	v, err := s.markers(ctx, pos, total)
	if err != nil {
		return MessagePage{}, err
	}
	pg.br = v.marks
	for {
		for i, e := range entries {
			pg.turns.note(e)
			m, ok := messageOf(e)
			if !ok {
				continue
			}
			if !pg.take(m, pg.br.ActiveFrom(e.TurnID, pos+i)) {
				pg.page.NextCursor = encodePageCursor(key, pg.opt.Order, pos+i)
				return pg.ascEnd(ctx, v)
			}
		}
		pos += len(entries)
		if len(entries) == 0 || pos >= total {
			return pg.ascEnd(ctx, v)
		}
		if entries, _, err = store.ReadRange(ctx, st, key, pos, pos+pg.chunk); err != nil {
			return MessagePage{}, err
		}
	}
}

// ascEnd finishes an ascending page: the entries of its first turn before
// it may hold the turn's own marker, which says its versions.
func (pg *pager) ascEnd(ctx context.Context, v pageView) (MessagePage, error) {
	if len(pg.page.Messages) > 0 {
		from, err := pg.s.peekBack(ctx, pg.br, v.from, pg.page.Messages[0].TurnID)
		if err != nil {
			return MessagePage{}, err
		}
		v.from, v.marks = from, pg.br
		pg.s.a.views.put(pg.s.key, v)
	}
	return pg.finish(), nil
}

// Messages returns the newest limit messages of the active branch, oldest
// first; all of them when limit is zero or less.
func (s *Session) Messages(ctx context.Context, limit int) ([]Message, error) {
	if limit <= 0 {
		entries, err := s.a.cfg.Store.Read(ctx, s.key)
		if err != nil {
			return nil, err
		}
		br := &history.Branches{}
		for i := len(entries) - 1; i >= 0; i-- {
			if entries[i].Type == transcript.TypeBranch {
				br.Add(i, entries[i])
			}
		}
		var out []Message
		for i, e := range entries {
			if m, ok := messageOf(e); ok && br.ActiveFrom(e.TurnID, i) {
				m.Branch = branchInfo(br, e.TurnID)
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
