package history

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// replaced returns the transcript rules 10 and 11 say entries are
// equivalent to, written the plainest way: the active branch (linear),
// without compaction entries, and with the turns that the newest
// compaction that applies covers replaced by one ok turn that asks
// SummaryRequest and is answered with the summary. The new turn begins
// where the last covered turn began and ends where the last covered entry
// was; the covered turns' approval decisions stay, since what a person
// decided stays decided. ok reports whether a compaction applied.
//
// A compaction applies when, as it was written, its first and last turns
// had begun, the first not after the last, both on the active branch, and
// every turn of the active branch between them that had a message had
// ended; and the turns
// between them on the active branch now are the same as then.
func replaced(entries []transcript.Entry) (out []transcript.Entry, ok bool) {
	index := map[string]int{}
	var order []string
	superseded := map[string]bool{}
	ended := map[string]bool{}
	said := map[string]bool{} // turns with a message
	type comp struct {
		first, last int
		covered     map[string]bool
		summary     string
	}
	var comps []comp
	for _, e := range entries {
		switch e.Type {
		case transcript.TypeBranch:
			var b transcript.Branch
			if e.DecodeData(&b) != nil {
				continue
			}
			for _, id := range b.Supersedes {
				if _, ok := index[id]; ok {
					superseded[id] = true
				}
			}
			for _, id := range b.Restores {
				if _, ok := index[id]; ok {
					superseded[id] = false
				}
			}
		case transcript.TypeCompaction:
			var c transcript.Compaction
			if e.DecodeData(&c) != nil || c.FirstTurn == "" || c.LastTurn == "" {
				continue
			}
			f, okF := index[c.FirstTurn]
			l, okL := index[c.LastTurn]
			if !okF || !okL || f > l || superseded[c.FirstTurn] || superseded[c.LastTurn] {
				continue
			}
			covered, valid := map[string]bool{}, true
			for _, id := range order[f : l+1] {
				if !superseded[id] {
					covered[id] = true
					valid = valid && (ended[id] || !said[id])
				}
			}
			if valid {
				comps = append(comps, comp{f, l, covered, c.Summary})
			}
		default:
			if _, ok := index[e.TurnID]; !ok {
				index[e.TurnID] = len(order)
				order = append(order, e.TurnID)
			}
			if e.Type == transcript.TypeTurnEnd {
				ended[e.TurnID] = true
			}
			if e.Type.IsMessage() {
				said[e.TurnID] = true
			}
		}
	}
	var win *comp
	for j := len(comps) - 1; j >= 0 && win == nil; j-- {
		now := map[string]bool{}
		for _, id := range order[comps[j].first : comps[j].last+1] {
			if !superseded[id] {
				now[id] = true
			}
		}
		if reflect.DeepEqual(now, comps[j].covered) {
			win = &comps[j]
		}
	}
	var lin []transcript.Entry
	for _, e := range linear(entries) {
		if e.Type != transcript.TypeCompaction {
			lin = append(lin, e)
		}
	}
	if win == nil {
		return lin, false
	}
	anchor := order[win.last]
	begins, lastCovered := -1, -1
	for i, e := range lin {
		if win.covered[e.TurnID] {
			lastCovered = i
			if begins < 0 && e.TurnID == anchor {
				begins = i
			}
		}
	}
	for i, e := range lin {
		if !win.covered[e.TurnID] {
			out = append(out, e)
			continue
		}
		if i == begins {
			out = append(out, fuzzEntry(1000+i, anchor, transcript.TypeUserMessage, "", transcript.UserMessage{Text: SummaryRequest}))
		}
		if e.Type == transcript.TypeApprovalDecision {
			out = append(out, e)
		}
		if i == lastCovered {
			out = append(out,
				fuzzEntry(2000+i, anchor, transcript.TypeAssistantMessage, "", transcript.AssistantMessage{Text: SummaryPrefix + win.summary}),
				fuzzEntry(3000+i, anchor, transcript.TypeTurnEnd, transcript.StatusOK, nil))
		}
	}
	return out, true
}

// TestCompactionIsReplacement is rule 10 (with rule 11) as a property: on
// random transcripts with compactions (rolling ones, ones that cover
// unfinished or waiting turns, ones whose turns later leave or return to
// the active branch, ones naming turns not begun) and markers, the
// history is the history of the transcript with the covered turns
// replaced by the summary, with every earlier rule, cap and budget; it
// obeys the rules every history obeys; what it keeps is in the order of
// the history without compaction; and a Builder fed the entries one at a
// time says the same after every append.
func TestCompactionIsReplacement(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 600
	}
	applied := 0
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 10))
		in := make([]byte, 3+2*(1+r.IntN(90)))
		for i := range in {
			in[i] = byte(r.UintN(256))
		}
		// Mostly whole ok turns, a compaction in every fifth entry, a
		// marker in every tenth: so that compactions apply, and branches
		// meet them.
		for i := 3; i+1 < len(in); i += 2 {
			switch x := r.IntN(20); {
			case x < 4:
				in[i] = 12
			case x < 6:
				in[i] = 9
				in[i+1] = in[i+1]&^(7<<2) | byte(4+r.IntN(4))<<2
			case x < 9:
				in[i], in[i+1] = 6, in[i+1]&^(7<<2) // an ok end
			}
		}
		entries, _, opt := fuzzTranscript(in)
		rep, ok := replaced(entries)
		if ok {
			applied++
		}
		got, gotFull := Window(entries, opt)
		want, wantFull := Window(rep, opt)
		if !reflect.DeepEqual(got, want) || gotFull != wantFull {
			t.Fatalf("seed %d, opt %+v: with compactions (full %v)\n%s\nreplaced (full %v)\n%s\ntranscript:\n%s", seed, opt, gotFull, dumpMessages(got), wantFull, dumpMessages(want), dumpEntries(entries))
		}
		if err := checkInvariants(entries, opt, got); err != nil {
			t.Fatalf("seed %d: invariant: %v\ntranscript:\n%s", seed, err, dumpEntries(entries))
		}
		if err := checkKeptInOrder(entries); err != nil {
			t.Fatalf("seed %d: %v\ntranscript:\n%s", seed, err, dumpEntries(entries))
		}
		if seed%3 == 0 {
			if err := checkIncremental(entries, nil, opt, false, nil); err != nil {
				t.Fatalf("seed %d, opt %+v: %v\ntranscript:\n%s", seed, opt, err, dumpEntries(entries))
			}
		}
	}
	if applied < n/4 {
		t.Fatalf("a compaction applied in only %d of %d transcripts", applied, n)
	}
	t.Logf("a compaction applied in %d of %d transcripts", applied, n)
}

// checkKeptInOrder checks that what the uncapped history keeps besides
// the summary is the history without compactions, in its order, less
// what the summary stands for: every user, assistant and tool part of it
// is in the history without the compaction entries, in the same order.
func checkKeptInOrder(entries []transcript.Entry) error {
	var plain []transcript.Entry
	for _, e := range entries {
		if e.Type != transcript.TypeCompaction {
			plain = append(plain, e)
		}
	}
	opt := Options{MaxMessages: NoLimit}
	flat := func(msgs []model.Message) []string {
		var out []string
		for _, m := range msgs {
			if m.Role == model.RoleAssistant && strings.HasPrefix(m.Content, SummaryPrefix) {
				continue
			}
			parts := []string{m.Content}
			if m.Role == model.RoleUser {
				parts = strings.Split(m.Content, "\n\n")
			}
			for _, p := range parts {
				if m.Role == model.RoleUser && p == SummaryRequest {
					continue
				}
				out = append(out, fmt.Sprintf("%s:%s:%s:%v", m.Role, p, m.ToolCallID, m.ToolCalls))
			}
		}
		return out
	}
	got, all := flat(Build(entries, opt)), flat(Build(plain, opt))
	j := 0
	for _, p := range got {
		for j < len(all) && all[j] != p {
			j++
		}
		if j == len(all) {
			return fmt.Errorf("%q is not in the history without compaction, or not in its order", p)
		}
		j++
	}
	return nil
}

// TestPlanCompactionApplies: on the random transcripts of
// TestCompactionIsReplacement, a compaction made by PlanCompaction and
// appended applies at once, extends the summary in use, and leaves the
// newest keep turns with a message and every unended one as they are.
func TestPlanCompactionApplies(t *testing.T) {
	planned := 0
	for seed := range 1500 {
		r := rand.New(rand.NewPCG(uint64(seed), 10))
		in := make([]byte, 3+2*(1+r.IntN(90)))
		for i := range in {
			in[i] = byte(r.UintN(256))
		}
		for i := 3; i+1 < len(in); i += 2 {
			if x := r.IntN(20); x < 2 {
				in[i] = 12
			} else if x < 9 {
				in[i], in[i+1] = 6, in[i+1]&^(7<<2)
			}
		}
		entries, _, _ := fuzzTranscript(in)
		keep := 1 + seed%3
		p, ok := PlanCompaction(entries, keep)
		if !ok {
			continue
		}
		planned++
		if p.Previous != nil && p.Previous.FirstTurn != p.FirstTurn {
			t.Fatalf("seed %d: plan from %s does not extend the summary from %s", seed, p.FirstTurn, p.Previous.FirstTurn)
		}
		c := fuzzEntry(len(entries), "tc", transcript.TypeCompaction, "", transcript.Compaction{Summary: "planned", FirstTurn: p.FirstTurn, LastTurn: p.LastTurn, Turns: p.Turns})
		all := append(entries[:len(entries):len(entries)], c)
		b := NewBuilder(Options{MaxMessages: NoLimit})
		for _, e := range all {
			b.Add(e)
		}
		s, ok := b.Summary()
		if !ok || s.ID != c.ID {
			t.Fatalf("seed %d, keep %d: the planned compaction %s–%s does not apply (summary in use %+v)\ntranscript:\n%s", seed, keep, p.FirstTurn, p.LastTurn, s, dumpEntries(entries))
		}
		// The newest keep turns with a message, and every open one, are
		// sent as themselves.
		said := []int{}
		for k := range b.turns {
			if tr := &b.turns[k]; !tr.superseded && tr.firstMsg >= 0 {
				said = append(said, k)
				if !tr.ended() && b.covered(k) {
					t.Fatalf("seed %d: open turn %d covered", seed, k)
				}
			}
		}
		for _, k := range said[len(said)-keep:] {
			if b.covered(k) || b.isSummary(k) {
				t.Fatalf("seed %d: one of the newest %d turns (%d) covered", seed, keep, k)
			}
		}
	}
	if planned < 300 {
		t.Fatalf("only %d plans", planned)
	}
}
