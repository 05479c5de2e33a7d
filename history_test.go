package spool_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

// TestRequestHistoryIsBuild checks the runtime's incremental history
// against its definition: every model request carries exactly
// history.Build over the transcript as stored at that moment. The session
// is long enough for the state to forget old entries, and has every kind
// of turn: tool steps, approvals allowed and denied, refused prompts,
// stopped answers, stopped streams, turns another process appends
// between this one's, regenerates, edits (of recent turns and of turns
// the state has forgotten) and switches, and compactions (rule 10), from
// this process and the other.
func TestRequestHistoryIsBuild(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  spool.Config
	}{
		{"cap 6", spool.Config{MaxMessages: 6}},
		{"default", spool.Config{Instructions: "Be brief."}},
		{"budget", spool.Config{MaxMessages: -1, HistoryBudget: 400, Instructions: "Be brief."}},
		{"cap and budget", spool.Config{MaxMessages: 9, HistoryBudget: 150}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			st := memstore.New()
			cfg := c.cfg
			cfg.Store = st
			cfg.Tools = approvalTools(nil)
			opt := history.Options{Instructions: cfg.Instructions, MaxMessages: cfg.MaxMessages, Budget: cfg.HistoryBudget}
			requests := 0
			var s *spool.Session
			cfg.Model = echoScript(func(req *model.Request) []model.Event {
				requests++
				entries, err := st.Read(ctx, s.Key())
				if err != nil {
					t.Fatal(err)
				}
				if want := history.Build(entries, opt); !reflect.DeepEqual(req.Messages, want) {
					t.Fatalf("request %d (%d entries): history\n%v\nwant\n%v", requests, len(entries), req.Messages, want)
				}
				last := req.Messages[len(req.Messages)-1]
				switch {
				case last.Role == model.RoleTool:
					return []model.Event{text("done: " + last.Content)}
				case strings.HasPrefix(last.Content, "tool"):
					return []model.Event{call(fmt.Sprint("c", requests), "lookup_order", `{"order": 7}`), call(fmt.Sprint("d", requests), "lookup_order", `{"order":8}`)}
				case strings.HasPrefix(last.Content, "ask"):
					return []model.Event{call(fmt.Sprint("c", requests), "delete_order", `{"order":9}`)}
				}
				return []model.Event{text("an answer to " + last.Content), text(" in two parts")}
			})
			cfg.PromptGuards = []spool.PromptGuard{func(ctx context.Context, p string) error {
				if strings.HasPrefix(p, "refuse") {
					return errors.New("no")
				}
				return nil
			}}
			cfg.AnswerGuards = []spool.AnswerGuard{func(ctx context.Context, a string) error {
				if strings.Contains(a, "stop me") {
					return errors.New("stopped")
				}
				return nil
			}}
			a := newAgent(t, cfg)
			other := newAgent(t, spool.Config{Store: st})
			s = session(t, a, ctx, "long")
			o := session(t, other, ctx, "long")
			r := rand.New(rand.NewPCG(7, 7))
			branch := func(sess *spool.Session, k int) *spool.Result {
				t.Helper()
				msgs, err := sess.Messages(ctx, 0)
				if err != nil {
					t.Fatal(err)
				}
				var qs []spool.Message
				for _, m := range msgs {
					if m.Role == model.RoleUser && (len(qs) == 0 || qs[len(qs)-1].TurnID != m.TurnID) {
						qs = append(qs, m)
					}
				}
				if len(qs) == 0 {
					return nil
				}
				var res *spool.Result
				switch k {
				case 0:
					res, err = sess.Regenerate(ctx)
				case 1:
					q := qs[len(qs)-1-r.IntN(min(len(qs), 3))]
					if r.IntN(4) == 0 {
						q = qs[r.IntN(len(qs))] // far back, forgotten by the state
					}
					res, err = sess.Edit(ctx, q.TurnID, "edited "+q.Text)
				default:
					for _, q := range qs {
						if q.Branch != nil && r.IntN(2) == 0 {
							err = sess.SwitchBranch(ctx, q.Branch.Turns[r.IntN(q.Branch.Count)])
							break
						}
					}
				}
				var te *spool.TurnError
				if err != nil && !errors.As(err, &te) {
					t.Fatal(err)
				}
				return res
			}
			resolve := func(sess *spool.Session, res *spool.Result) {
				t.Helper()
				var err error
				for res != nil && len(res.Pending) > 0 {
					ap := res.Pending[0]
					if r.IntN(2) == 0 {
						res, err = sess.Approve(ctx, ap.ID, transcript.ApprovalScopeOnce)
					} else {
						res, err = sess.Deny(ctx, ap.ID, "not today")
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			compacted := 0
			summarize := func(ctx context.Context, in spool.SummaryInput) (spool.Summary, error) {
				return spool.Summary{Text: fmt.Sprintf("%s+%d", in.Previous, len(in.Messages))}, nil
			}
			for i := range 300 {
				p := fmt.Sprint("prompt ", i)
				switch k := r.IntN(26); {
				case k >= 23:
					// A compaction, here or in the other process.
					sess := s
					if k == 25 {
						sess = o
					}
					_, err := sess.Compact(ctx, spool.CompactOptions{KeepTurns: 1 + r.IntN(3), Summarizer: summarize})
					if err == nil {
						compacted++
					} else if !errors.Is(err, spool.ErrNothingToCompact) {
						t.Fatal(err)
					}
					continue
				case k >= 20:
					// A regenerate, an edit or a switch, here or in the
					// other process (this one catches up with its marker).
					sess := s
					if r.IntN(3) == 0 {
						sess = o
					}
					resolve(sess, branch(sess, k-20))
					continue
				case k < 3:
					p = "tool " + p
				case k < 5:
					p = "ask " + p
				case k < 6:
					p = "refuse " + p
				case k < 7:
					p = "stop me " + p
				case k < 8:
					// Another process's turn: this one catches up.
					if _, err := o.Send(ctx, "from elsewhere "+p); err != nil {
						t.Fatal(err)
					}
					continue
				case k < 9:
					// A consumer that stops after the first event.
					for _, err := range s.Stream(ctx, p) {
						if err != nil {
							t.Fatal(err)
						}
						break
					}
					continue
				}
				res, err := s.Send(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				resolve(s, res)
			}
			entries, _ := s.Transcript(ctx)
			if requests < 200 || len(entries) < 800 {
				t.Fatalf("%d requests over %d entries, want at least 200 over 800: the run checked too little", requests, len(entries))
			}
			kinds := map[transcript.BranchKind]int{}
			for _, e := range entries {
				var b transcript.Branch
				if e.Type == transcript.TypeBranch && e.DecodeData(&b) == nil {
					kinds[b.Kind]++
				}
			}
			if kinds[transcript.BranchRegenerate] < 5 || kinds[transcript.BranchEdit] < 5 || kinds[transcript.BranchSwitch] < 3 {
				t.Fatalf("markers %v: the run branched too little", kinds)
			}
			if compacted < 10 {
				t.Fatalf("%d compactions: the run compacted too little", compacted)
			}
			got, err := s.History(ctx)
			if err != nil || !reflect.DeepEqual(got, history.Build(entries, opt)) {
				t.Fatalf("History = %v, want exactly history.Build of the transcript", err)
			}
		})
	}
}
