package spool_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/transcript"
)

// validHistory returns what is wrong with msgs as a model request: it
// starts with a user message after the system one, no two user messages
// follow each other, and every tool call is answered right after its
// message, each result by a call of it.
func validHistory(msgs []model.Message) error {
	if len(msgs) > 0 && msgs[0].Role == model.RoleSystem {
		msgs = msgs[1:]
	}
	if len(msgs) == 0 || msgs[0].Role != model.RoleUser {
		return fmt.Errorf("does not start with a user message")
	}
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if i > 0 && m.Role == model.RoleUser && msgs[i-1].Role == model.RoleUser {
			return fmt.Errorf("messages %d and %d are both user messages", i-1, i)
		}
		if m.Role == model.RoleTool {
			return fmt.Errorf("message %d: a tool result no call asked for", i)
		}
		if m.Role != model.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		asked := map[string]bool{}
		for _, c := range m.ToolCalls {
			asked[c.ID] = true
		}
		at := i
		for range m.ToolCalls {
			i++
			if i >= len(msgs) || msgs[i].Role != model.RoleTool || !asked[msgs[i].ToolCallID] {
				return fmt.Errorf("the calls of message %d are not each answered right after it", at)
			}
			delete(asked, msgs[i].ToolCallID)
		}
	}
	return nil
}

// TestCompactWhileAnApprovalWaits: Compact on a session whose turn waits
// on an approval fails with ErrApprovalPending naming the approval, and
// appends nothing; once the approval is decided (allowed or denied), the
// turn goes on and ends ok, and compactions cover the turns before it and
// then it. Every request the model is sent after them is a valid history
// with the summary in front and every call answered, and the transcript's
// turns never interleave. The compaction was appended inside the waiting
// turn, whose decision and answer came after it: one turn in two parts
// (spool sessions show gave it two headings, watch --tail counted it
// twice), which Rename and SetToolMode refuse to make.
func TestCompactWhileAnApprovalWaits(t *testing.T) {
	for _, allow := range []bool{true, false} {
		t.Run(fmt.Sprint("allow=", allow), func(t *testing.T) {
			ctx := t.Context()
			var mu sync.Mutex
			var requests []*model.Request
			m := echoScript(func(req *model.Request) []model.Event {
				mu.Lock()
				copied := *req // the runtime reuses the messages' array
				copied.Messages = slices.Clone(req.Messages)
				requests = append(requests, &copied)
				mu.Unlock()
				return echo.Reply(req)
			})
			a := newAgent(t, spool.Config{Model: m, Instructions: "Be brief.", Tools: approvalTools(nil)})
			s := session(t, a, ctx, "waits")
			sendAll(t, s, "My name is Ana.", "I live in Porto.", "My order is 1042.")
			res, err := s.Send(ctx, `/call delete_order {"order":1042}`)
			if err != nil || len(res.Pending) != 1 {
				t.Fatalf("Send = %+v, %v; want a pending approval", res, err)
			}
			before, _ := s.Transcript(ctx)
			_, err = s.Compact(ctx, spool.CompactOptions{KeepTurns: 1})
			if !errors.Is(err, spool.ErrApprovalPending) || !strings.Contains(err.Error(), res.Pending[0].ID) {
				t.Fatalf("Compact while an approval waits = %v, want ErrApprovalPending naming %s", err, res.Pending[0].ID)
			}
			if after, _ := s.Transcript(ctx); len(after) != len(before) {
				t.Fatalf("the refused compaction appended %d entries", len(after)-len(before))
			}
			var done *spool.Result
			if allow {
				done, err = s.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeOnce)
			} else {
				done, err = s.Deny(ctx, res.Pending[0].ID, "not now")
			}
			if err != nil || done.Status != transcript.StatusOK || done.TurnID != res.TurnID {
				t.Fatalf("the decision = %+v, %v; want the waiting turn ended ok", done, err)
			}
			c, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: 1})
			if err != nil || c.Turns != 3 {
				t.Fatalf("Compact after the decision = %+v, %v; want the 3 turns before it covered", c, err)
			}
			sendAll(t, s, "Thanks.")
			c2, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: 1})
			if err != nil || c2.Turns != 4 || c2.LastTurn != res.TurnID {
				t.Fatalf("Compact after the next turn = %+v, %v; want the decided turn covered too", c2, err)
			}
			sendAll(t, s, "Bye.")
			var turns []*model.Request // the summarizer's requests left out
			for _, req := range requests {
				if _, _, ok := model.ReadSummaryRequest(req); !ok {
					turns = append(turns, req)
				}
			}
			for i, want := range map[int]spool.CompactResult{2: *c, 1: *c2} {
				req := turns[len(turns)-i]
				if err := validHistory(req.Messages); err != nil {
					t.Fatalf("request %d from the end: %v\n%v", i, err, req.Messages)
				}
				if !reflect.DeepEqual(req.Messages[1:3], history.SummaryMessages(want.Summary)) {
					t.Fatalf("request %d from the end does not begin with the summary: %v", i, req.Messages)
				}
			}
			entries, err := s.Transcript(ctx)
			if err != nil {
				t.Fatal(err)
			}
			checkWellFormed(t, entries)
			got, err := s.History(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := history.Build(entries, history.Options{Instructions: "Be brief.", MaxMessages: 200}); !reflect.DeepEqual(got, want) {
				t.Fatalf("History is not Build of the transcript:\n%v\n%v", got, want)
			}
		})
	}
}
