package history

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// checkIncremental feeds entries to a Builder one at a time and, after
// every one (or, where skip says so, after a run of them, so that the
// Builder also catches up on several), checks that it gives what Build
// gives for the transcript so far, and Window's report too. With decoded,
// entries whose data came from a value are given with it (AddDecoded).
func checkIncremental(entries []transcript.Entry, values []any, opt Options, decoded bool, skip func(i int) bool) error {
	b := NewBuilder(opt)
	for i, e := range entries {
		if decoded && values[i] != nil {
			b.AddDecoded(e, values[i])
		} else {
			b.Add(e)
		}
		if skip != nil && skip(i) && i != len(entries)-1 {
			continue
		}
		want, wantFull := Window(entries[:i+1], opt)
		got, gotFull := b.Window()
		if !reflect.DeepEqual(got, want) || gotFull != wantFull {
			return fmt.Errorf("after entry %d: incremental (full %v)\n%s\nBuild (full %v)\n%s", i, gotFull, dumpMessages(got), wantFull, dumpMessages(want))
		}
		// View, the Builder's own slice made from what changed since the
		// last View, is the same window.
		view, viewFull := b.View()
		if !reflect.DeepEqual(view, want) || viewFull != wantFull {
			return fmt.Errorf("after entry %d: View (full %v)\n%s\nBuild (full %v)\n%s", i, viewFull, dumpMessages(view), wantFull, dumpMessages(want))
		}
	}
	return nil
}

// TestBuilderMatchesBuild is the property the runtime relies on: a Builder
// fed a transcript entry by entry gives, after every append, exactly what
// Build gives over the whole transcript. The transcripts are random: tool
// calls and results, approvals and decisions, every turn status, merged
// questions, interleaved turns, malformed data, with caps and budgets down
// to one message.
func TestBuilderMatchesBuild(t *testing.T) {
	n := 1500
	if testing.Short() {
		n = 300
	}
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 12))
		in := make([]byte, 3+2*(1+r.IntN(90)))
		for i := range in {
			in[i] = byte(r.UintN(256))
		}
		entries, values, opt := fuzzTranscript(in)
		every := 1 + r.IntN(4)
		skip := func(i int) bool { return i%every != 0 }
		if err := checkIncremental(entries, values, opt, seed%2 == 0, skip); err != nil {
			t.Fatalf("seed %d, opt %+v: %v\ntranscript:\n%s", seed, opt, err, dumpEntries(entries))
		}
	}
}

// FuzzBuilder holds the Builder to Build on the fuzzer's transcripts.
func FuzzBuilder(f *testing.F) {
	f.Add([]byte("\x00\x00\x00"+"\x00\x00\x02\x01\x06\x01"+"\x00\x00\x02\x11\x04\x01\x02\x01\x06\x01"), true)
	f.Add([]byte("\x01\x02\x01"+"\x00\x00\x02\x11\x07\x01"+"\x00\x00\x06\x21"+"\x01\x01\x06\x01"), false)
	f.Add([]byte("\x03\x01\x02"+"\x00\x00\x02\x21\x00\x03\x04\x11\x06\x11\x08\x01\x0b\x00\x09\x00"), true)
	f.Add([]byte("\x02\x00\x00"+"\x00\x00\x06\x31\x00\x00\x02\x51\x05\x11\x00\x00\x02\x01\x07\x01"), false)
	f.Fuzz(func(t *testing.T, in []byte, decoded bool) {
		entries, values, opt := fuzzTranscript(in)
		if err := checkIncremental(entries, values, opt, decoded, nil); err != nil {
			t.Fatalf("opt %+v: %v\ntranscript:\n%s", opt, err, dumpEntries(entries))
		}
	})
}

// TestBuilderGolden runs the golden transcripts through a Builder, entry
// by entry.
func TestBuilderGolden(t *testing.T) {
	for _, tc := range goldenCases {
		entries := readTranscript(t, tc.transcript)
		if err := checkIncremental(entries, make([]any, len(entries)), tc.opt, false, nil); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestBuilderDecodesOnce: a long session's old turns are never decoded,
// and an entry decoded once is not decoded again as the window moves on.
func TestBuilderDecodesOnce(t *testing.T) {
	entries := benchSession(t, 3000)
	b := NewBuilder(Options{})
	for _, e := range entries[:2000] {
		b.Add(e)
	}
	window := len(b.Messages())
	decoded := map[int]*part{}
	for i, p := range b.parts {
		if p != nil {
			decoded[i] = p
		}
	}
	if len(decoded) > 2*window {
		t.Fatalf("%d of 2,000 entries decoded for a window of %d messages", len(decoded), window)
	}
	for _, e := range entries[2000:2100] {
		b.Add(e)
		b.Messages()
	}
	for i, p := range decoded {
		if b.parts[i] != p {
			t.Fatalf("entry %d was decoded again", i)
		}
	}
	if got, want := b.Messages(), Build(entries[:2100], Options{}); !reflect.DeepEqual(got, want) {
		t.Fatal("Builder and Build differ")
	}
}

// TestBuilderSharesNoResult: changing a result does not change the next.
func TestBuilderSharesNoResult(t *testing.T) {
	entries := readTranscript(t, "plain")
	b := NewBuilder(Options{})
	for _, e := range entries {
		b.Add(e)
	}
	got := b.Messages()
	got[0] = model.Message{Role: model.RoleUser, Content: "changed"}
	if again := b.Messages(); again[0].Content == "changed" {
		t.Fatal("Messages returned the Builder's own slice")
	}
}

// TestBuilderForget: a Builder that forgets what its window no longer
// needs, rebuilt from the whole transcript whenever it says it cannot
// tell (full=false with Base() > 0), as the runtime does, gives Build's
// history after every append, and holds far less than the transcript.
func TestBuilderForget(t *testing.T) {
	long := benchSession(t, 1500)
	for _, opt := range []Options{{MaxMessages: 5}, {}, {MaxMessages: NoLimit, Budget: 3000}, {MaxMessages: 40, Budget: 5000, Counter: perMessage}} {
		b := NewBuilder(opt)
		rebuilt, most := 0, 0
		for i, e := range long {
			b.Add(e)
			got, full := b.Window()
			if !full && b.Base() > 0 {
				rebuilt++
				b = NewBuilder(opt)
				for _, e := range long[:i+1] {
					b.Add(e)
				}
				got, full = b.Window()
			}
			b.Forget()
			most = max(most, b.Len())
			if i%53 == 0 || i == len(long)-1 {
				want, wantFull := Window(long[:i+1], opt)
				if !reflect.DeepEqual(got, want) || full != wantFull {
					t.Fatalf("%+v: after entry %d (base %d): incremental (full %v)\n%s\nBuild (full %v)\n%s", opt, i, b.Base(), full, dumpMessages(got), wantFull, dumpMessages(want))
				}
			}
		}
		if opt.MaxMessages == 5 && (b.Base() == 0 || most > 1000) {
			t.Errorf("%+v: base %d, held up to %d of %d entries", opt, b.Base(), most, len(long))
		}
		t.Logf("%+v: base %d, held up to %d entries, rebuilt %d times", opt, b.Base(), most, rebuilt)
	}
	// Random transcripts, forgetting at every step, a few entries at a time.
	defer func(n int) { forgetMin = n }(forgetMin)
	forgetMin = 4
	forgot := 0
	for seed := range 300 {
		r := rand.New(rand.NewPCG(uint64(seed), 13))
		in := make([]byte, 3+2*(1+r.IntN(400)))
		for i := range in {
			in[i] = byte(r.UintN(256))
		}
		if seed%4 != 0 {
			// Turns in order, as spool writes them: what Forget can shorten.
			in[3] &= 0x7f
			for i := 4; i < len(in); i += 2 {
				if in[i]&3 == 3 {
					in[i] &^= 1
				}
				if seed%2 == 0 && in[i-1]%13 == 7 {
					in[i-1]-- // no approval requests, which hold turns open
				}
				if seed%3 != 0 && in[i-1]%13 == 12 {
					in[i-1]-- // no compactions, which hold the turns they cover
				}
			}
		}
		entries, _, opt := fuzzTranscript(in)
		forgot += forgetting(t, fmt.Sprint("seed ", seed), entries, entries, opt)
	}
	if forgot == 0 {
		t.Error("no random transcript was ever forgotten in part")
	}
	t.Logf("forgot %d times", forgot)
}

// forgetting adds entries to a Builder one at a time, forgetting after
// each window (and starting anew, as a caller does, when a window could
// reach what was forgotten), and holds every window to Build's over the
// same prefix of want. It returns how many times Forget dropped entries.
func forgetting(t *testing.T, name string, entries, want []transcript.Entry, opt Options) (forgot int) {
	t.Helper()
	b := NewBuilder(opt)
	for i, e := range entries {
		b.Add(e)
		got, full := b.Window()
		if !full && b.Base() > 0 {
			b = NewBuilder(opt)
			for _, e := range entries[:i+1] {
				b.Add(e)
			}
			got, full = b.Window()
		}
		base := b.Base()
		b.Forget()
		if b.Base() != base {
			forgot++
		}
		if w, wFull := Window(want[:i+1], opt); !reflect.DeepEqual(got, w) || full != wFull {
			t.Fatalf("%s, %+v: after entry %d (base %d): differs from Build\n%s\nwant\n%s\ntranscript:\n%s",
				name, opt, i, b.Base(), dumpMessages(got), dumpMessages(w), dumpEntries(entries[:i+1]))
		}
	}
	return forgot
}

// TestBuilderViewSlides: over a long session, View is the window after
// every entry, as it slides along its buffer, is moved back to the start
// of it, and as the Builder forgets what the window no longer needs; it
// copies only what changed.
func TestBuilderViewSlides(t *testing.T) {
	entries := benchSession(t, 3000)
	for _, opt := range []Options{{}, {MaxMessages: 7, Instructions: "Be brief."}, {MaxMessages: NoLimit, Budget: 900}} {
		b := NewBuilder(opt)
		for i, e := range entries {
			b.Add(e)
			view, viewFull := b.View()
			want, wantFull := b.Window()
			if !reflect.DeepEqual(view, want) || viewFull != wantFull {
				t.Fatalf("%+v, after entry %d: View\n%s\nWindow\n%s", opt, i, dumpMessages(view), dumpMessages(want))
			}
			if cap(view) != len(view) {
				t.Fatalf("View has room after it (cap %d, len %d): an append to it would write in the Builder", cap(view), len(view))
			}
			if i%50 == 0 {
				b.Forget()
			}
		}
	}
}

func BenchmarkView(b *testing.B) {
	entries := benchSession(b, 3000)
	bl := NewBuilder(Options{})
	for _, e := range entries[:1000] {
		bl.Add(e)
	}
	bl.View()
	b.ReportAllocs()
	i := 1000
	for b.Loop() {
		bl.Add(entries[i])
		bl.View()
		if i++; i == len(entries) {
			b.StopTimer()
			bl, i = NewBuilder(Options{}), 1000
			for _, e := range entries[:1000] {
				bl.Add(e)
			}
			b.StartTimer()
		}
	}
}

// TestForgetInPlace: Forget moves what it keeps to the front of the
// Builder's own arrays (a long session's Builder forgets every few hundred
// entries; allocating them anew was most of what a turn allocated), never
// to the front of a caller's array given to Build, and the history is the
// same either way.
func TestForgetInPlace(t *testing.T) {
	long := benchSession(t, 1500)
	opt := Options{MaxMessages: 5}
	b := NewBuilder(opt)
	moved := 0
	for i, e := range long {
		b.Add(e)
		b.Window()
		entries, parts, turns := unsafe.SliceData(b.entries), unsafe.SliceData(b.parts), unsafe.SliceData(b.turns)
		base := b.Base()
		b.Forget()
		if b.Base() == base {
			continue
		}
		moved++
		if unsafe.SliceData(b.entries) != entries || unsafe.SliceData(b.parts) != parts || unsafe.SliceData(b.turns) != turns {
			t.Fatalf("after entry %d: Forget allocated new arrays", i)
		}
		if got, want := b.Messages(), Build(long[:i+1], opt); !reflect.DeepEqual(got, want) {
			t.Fatalf("after entry %d: after Forget\n%s\nBuild\n%s", i, dumpMessages(got), dumpMessages(want))
		}
	}
	if moved == 0 {
		t.Fatal("the Builder never forgot")
	}

	// A Builder over a caller's array (as Build makes) copies what it keeps.
	given := slices.Clone(long[:900])
	b = NewBuilder(opt)
	b.addAll(given)
	b.Window()
	b.Forget()
	if b.Base() == 0 {
		t.Fatal("the Builder over a given array did not forget")
	}
	if !reflect.DeepEqual(given, long[:900]) {
		t.Fatal("Forget wrote over the entries given to the Builder")
	}
	for i := 900; i < 950; i++ {
		b.Add(long[i])
		if got, want := b.Messages(), Build(long[:i+1], opt); !reflect.DeepEqual(got, want) {
			t.Fatalf("after entry %d: \n%s\nBuild\n%s", i, dumpMessages(got), dumpMessages(want))
		}
	}
}

// TestForkHeadOutOfOrder: a fork's first entry (session.fork) has a turn
// id newer than the copied turns after it. The Builder takes it out of
// the order of turn ids: its windows are Build's over the same transcript
// with a fork entry whose turn id sorts first, at every step and as it
// forgets, and a fork is forgotten in part as any session is.
func TestForkHeadOutOfOrder(t *testing.T) {
	defer func(n int) { forgetMin = n }(forgetMin)
	forgetMin = 4
	forgot := 0
	for seed := range 300 {
		r := rand.New(rand.NewPCG(uint64(seed), 14))
		in := make([]byte, 3+2*(1+r.IntN(400)))
		for i := range in {
			in[i] = byte(r.UintN(256))
		}
		in[3] &= 0x7f // turn ids in order, as spool writes them
		for i := 4; i < len(in); i += 2 {
			if in[i]&3 == 3 {
				in[i] &^= 1
			}
			if seed%2 == 0 && (in[i-1]%13 == 7 || in[i-1]%13 == 12) {
				in[i-1]-- // no approval requests or compactions, which hold turns
			}
		}
		entries, _, opt := fuzzTranscript(in)
		forked := func(turn string) []transcript.Entry {
			head := fuzzEntry(len(entries), turn, transcript.TypeFork, "", transcript.Fork{Source: "src", TurnID: "t01"})
			return append([]transcript.Entry{head}, entries...)
		}
		forgot += forgetting(t, fmt.Sprint("seed ", seed, ", the fork's turn first for Build"), forked("zz"), forked("a"), opt)
	}
	if forgot == 0 {
		t.Error("no fork was ever forgotten in part")
	}
	t.Logf("forgot %d times", forgot)
}
