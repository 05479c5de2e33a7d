package history

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/spool-go/spool/transcript"
)

// linear returns the transcript rule 11 says entries are equivalent to:
// without its session.branch markers, and without the entries of the
// turns they leave superseded. It is the rule written the plainest way:
// the markers in order, each naming only turns that began before it, the
// newest marker naming a turn deciding.
func linear(entries []transcript.Entry) []transcript.Entry {
	began := map[string]bool{}
	superseded := map[string]bool{}
	for _, e := range entries {
		if e.Type == transcript.TypeCompaction {
			continue // like a marker, a compaction begins no turn
		}
		if e.Type != transcript.TypeBranch {
			began[e.TurnID] = true
			continue
		}
		var b transcript.Branch
		if e.DecodeData(&b) != nil {
			continue
		}
		for _, id := range b.Supersedes {
			if began[id] {
				superseded[id] = true
			}
		}
		for _, id := range b.Restores {
			if began[id] {
				superseded[id] = false
			}
		}
	}
	var out []transcript.Entry
	for _, e := range entries {
		if e.Type == transcript.TypeCompaction || e.Type != transcript.TypeBranch && !superseded[e.TurnID] {
			out = append(out, e)
		}
	}
	return out
}

// TestBranchesAreLinear is rule 11 as a property: on random transcripts
// with markers (regenerates, edits, switches, names of turns not begun,
// markers amid a turn's entries) the history is the history of the
// equivalent linear transcript, the active branch alone, with every
// earlier rule, cap and budget; and a Builder fed the entries one at a
// time says the same after every append.
func TestBranchesAreLinear(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 400
	}
	marked := 0
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 15))
		in := make([]byte, 3+2*(1+r.IntN(90)))
		for i := range in {
			in[i] = byte(r.UintN(256))
		}
		// Markers are op 9 with sub-op 4 to 7: make a third of the
		// entries markers, so that chains of them meet.
		for i := 3; i+1 < len(in); i += 2 {
			if in[i]%13 == 12 {
				in[i] = 11 // no compactions: TestCompactionIsReplacement has both
			}
			if r.IntN(3) == 0 {
				in[i] = 9
				in[i+1] = in[i+1]&^(7<<2) | byte(4+r.IntN(4))<<2
			}
		}
		entries, _, opt := fuzzTranscript(in)
		lin := linear(entries)
		if len(lin) != len(entries) {
			marked++
		}
		got, gotFull := Window(entries, opt)
		want, wantFull := Window(lin, opt)
		if !reflect.DeepEqual(got, want) || gotFull != wantFull {
			t.Fatalf("seed %d, opt %+v: with markers (full %v)\n%s\nlinear (full %v)\n%s\ntranscript:\n%s", seed, opt, gotFull, dumpMessages(got), wantFull, dumpMessages(want), dumpEntries(entries))
		}
		if err := checkInvariants(entries, opt, got); err != nil {
			t.Fatalf("seed %d: invariant: %v\ntranscript:\n%s", seed, err, dumpEntries(entries))
		}
		if err := checkBranches(entries, lin); err != nil {
			t.Fatalf("seed %d: %v\ntranscript:\n%s", seed, err, dumpEntries(entries))
		}
		if seed%4 == 0 {
			if err := checkIncremental(entries, nil, opt, false, nil); err != nil {
				t.Fatalf("seed %d, opt %+v: %v\ntranscript:\n%s", seed, opt, err, dumpEntries(entries))
			}
		}
	}
	if marked < n/2 {
		t.Fatalf("only %d of %d transcripts had a marker that superseded anything", marked, n)
	}
}

// TestBranchesForget: a Builder that forgets what its window no longer
// needs, rebuilt whenever it says it cannot tell, as the runtime keeps
// one, follows a long session through markers that name turns it holds
// and turns it forgot: a regenerate, an edit far back, switches back to
// the versions left.
func TestBranchesForget(t *testing.T) {
	entries := benchSession(t, 1500)
	var turns []string
	for _, e := range entries {
		if e.Type == transcript.TypeUserMessage && (len(turns) == 0 || turns[len(turns)-1] != e.TurnID) {
			turns = append(turns, e.TurnID)
		}
	}
	now := entries[len(entries)-1].Timestamp
	add := func(typ transcript.Type, turn string, status transcript.Status, data any) string {
		now = now.Add(time.Second)
		e, err := transcript.New(now, typ, turn, data)
		if err != nil {
			t.Fatal(err)
		}
		if turn == "" {
			e.TurnID = e.ID
		}
		e.ParentID, e.Status = entries[len(entries)-1].ID, status
		entries = append(entries, e)
		return e.TurnID
	}
	active := slices.Clone(turns)
	// replace supersedes the active turns from index from on with a new
	// turn, and returns what it superseded.
	replace := func(from int, kind transcript.BranchKind) []string {
		gone := slices.Clone(active[from:])
		id := transcript.NewID(now.Add(time.Second))
		add(transcript.TypeBranch, id, "", transcript.Branch{Kind: kind, Supersedes: gone, Alternatives: []string{gone[0], id}})
		add(transcript.TypeUserMessage, id, "", transcript.UserMessage{Text: "asked again " + id})
		add(transcript.TypeAssistantMessage, id, "", transcript.AssistantMessage{Text: "answered again " + id})
		add(transcript.TypeTurnEnd, id, transcript.StatusOK, transcript.TurnEnd{})
		active = append(active[:from], id)
		return gone
	}
	switchBack := func(from int, back []string) {
		gone := slices.Clone(active[from:])
		add(transcript.TypeBranch, "", "", transcript.Branch{Kind: transcript.BranchSwitch, Supersedes: gone, Restores: back})
		active = append(active[:from], back...)
	}
	start := len(entries)
	replace(len(active)-1, transcript.BranchRegenerate)
	n := len(active)
	back := replace(n-20, transcript.BranchEdit)
	switchBack(n-20, back)
	replace(len(active)-1, transcript.BranchRegenerate)
	back = replace(5, transcript.BranchEdit)
	replace(len(active)-1, transcript.BranchRegenerate)
	switchBack(5, back)

	for _, opt := range []Options{{MaxMessages: 5}, {}, {MaxMessages: 40, Budget: 5000, Counter: perMessage}} {
		b := NewBuilder(opt)
		rebuilt := 0
		for i, e := range entries {
			b.Add(e)
			got, full := b.Window()
			if !full && b.Base() > 0 {
				rebuilt++
				b = NewBuilder(opt)
				for _, e := range entries[:i+1] {
					b.Add(e)
				}
				got, full = b.Window()
			}
			b.Forget()
			if i >= start || i%97 == 0 {
				want, wantFull := Window(entries[:i+1], opt)
				if !reflect.DeepEqual(got, want) || full != wantFull {
					t.Fatalf("%+v: after entry %d (base %d): incremental (full %v)\n%s\nBuild (full %v)\n%s", opt, i, b.Base(), full, dumpMessages(got), wantFull, dumpMessages(want))
				}
			}
		}
		if want := Build(linear(entries), opt); !reflect.DeepEqual(b.Messages(), want) {
			t.Fatalf("%+v: the history is not the active branch's", opt)
		}
		t.Logf("%+v: base %d at the end, rebuilt %d times", opt, b.Base(), rebuilt)
	}
}

// checkBranches holds Branches to rule 11 as linear reads it: given the
// entries forwards, backwards, or the markers first and the turns' first
// entries after (a reader's cache), each turn is active exactly when its
// entries are in the linear transcript.
func checkBranches(entries, lin []transcript.Entry) error {
	kept := map[string]bool{}
	for _, e := range lin {
		kept[e.TurnID] = true
	}
	forward := ReadBranches(entries)
	backward := &Branches{}
	for i := len(entries) - 1; i >= 0; i-- {
		backward.Add(i, entries[i])
	}
	cached := forward.Markers()
	for i, e := range entries {
		if e.Type != transcript.TypeBranch {
			cached.Add(i, e)
		}
	}
	for _, e := range entries {
		if e.Type == transcript.TypeBranch {
			continue
		}
		for name, b := range map[string]*Branches{"forward": forward, "backward": backward, "cached": cached} {
			if got := b.Active(e.TurnID); got != kept[e.TurnID] {
				return fmt.Errorf("%s: turn %s active %v, want %v", name, e.TurnID, got, kept[e.TurnID])
			}
		}
	}
	return nil
}
