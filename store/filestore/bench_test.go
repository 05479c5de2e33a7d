package filestore

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// Benchmarks. Run them with, for example:
//
//	go test -run '^$' -bench . -benchtime 2s ./store/filestore/
//
// BenchmarkAppend times a durable Append of a 300-byte entry and, in the
// same loop, a raw write+fdatasync of the same bytes to a file in the same
// folder, and reports both and their ratio. BenchmarkList lists the first
// page of 10,000 sessions from the index, warm and cold, for sessions of 20
// and of 2,000 entries, and the design that reads every transcript to list.
// BenchmarkReadTail reads the newest 50 entries of a 1,000- and of a
// 100,000-entry session.

// entry300 returns an entry after parent whose stored line is 300 bytes.
func entry300(b testing.TB, parent string, at time.Time) (transcript.Entry, []byte) {
	e := storetest.NewEntry(parent, at, transcript.TypeUserMessage, transcript.UserMessage{})
	line, _ := transcript.AppendLine(nil, e)
	text := strings.Repeat("x", 300-len(line))
	e = storetest.NewEntry(parent, at, transcript.TypeUserMessage, transcript.UserMessage{Text: text})
	line, _ = transcript.AppendLine(nil, e)
	if len(line) != 300 {
		b.Fatalf("entry line is %d bytes", len(line))
	}
	return e, line
}

func BenchmarkAppend(b *testing.B) {
	root := b.TempDir()
	s := open(b, root)
	key := store.Key{Agent: "bench", ID: "s"}
	first, _ := entry300(b, "", time.Now())
	if err := s.Append(b.Context(), key, first); err != nil {
		b.Fatal(err)
	}
	raw, err := os.OpenFile(filepath.Join(root, "bench", "raw.bin"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	head := first.ID
	var inStore, inRaw time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e, line := entry300(b, head, time.Now())
		start := time.Now()
		if err := s.Append(b.Context(), key, e); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := raw.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := syncData(raw); err != nil {
			b.Fatal(err)
		}
		inStore += mid.Sub(start)
		inRaw += time.Since(mid)
		head = e.ID
	}
	b.ReportMetric(float64(inStore.Nanoseconds())/float64(b.N), "append-ns/op")
	b.ReportMetric(float64(inRaw.Nanoseconds())/float64(b.N), "raw-ns/op")
	b.ReportMetric(float64(inStore)/float64(inRaw), "append/raw")
}

const listSessions = 10_000

// listDataset makes root/bench/ hold listSessions sessions of n entries
// each, written directly as another program would (synced appends would
// take minutes), and their index. With n = 20 every transcript is a file
// of its own and the index is built by a Store, as after losing it. With
// n = 2,000 (10,000 distinct files would be 4.6 GB) one transcript is
// hard-linked under every name and the index written from its info;
// listing cares only that there are 10,000 names and records.
func listDataset(b *testing.B, root string, n int) {
	dir := filepath.Join(root, "bench")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	scope := store.Scope{Agent: "bench"}
	if n <= 100 {
		for i := range listSessions {
			entries := storetest.Chain("", t0.Add(time.Duration(i)*time.Second), n)
			writeRaw(b, filepath.Join(dir, fmt.Sprintf("s%05d.jsonl", i)), lines(b, entries...), 0)
		}
		s := open(b, root)
		if _, err := s.List(b.Context(), scope, store.ListOptions{}); err != nil {
			b.Fatal(err)
		}
		return
	}
	entries := storetest.Chain("", t0, n)
	template := filepath.Join(root, "template.jsonl")
	writeRaw(b, template, lines(b, entries...), 0)
	st, err := os.Stat(template)
	if err != nil {
		b.Fatal(err)
	}
	buf := []byte((&Store{}).indexHeader())
	for i := range listSessions {
		id := fmt.Sprintf("s%05d", i)
		if err := os.Link(template, filepath.Join(dir, id+transcriptExt)); err != nil {
			b.Fatal(err)
		}
		r := &rec{info: store.Info(scope.Key(id), entries), fileState: stateOf(st), head: storetest.Head(entries)}
		buf = appendRecord(buf, r, false)
	}
	writeRaw(b, filepath.Join(dir, indexName), buf, 0)
}

// naiveList lists the way a store without an index must: read and decode
// every transcript (or every every-th), then sort.
func naiveList(b *testing.B, dir string, scope store.Scope, limit, every int) []store.SessionInfo {
	all, err := filepath.Glob(filepath.Join(dir, "*"+transcriptExt))
	if err != nil {
		b.Fatal(err)
	}
	var names []string
	for i := 0; i < len(all); i += every {
		names = append(names, all[i])
	}
	infos := make([]store.SessionInfo, 0, len(names))
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			b.Fatal(err)
		}
		dec := transcript.NewDecoder(f)
		key := scope.Key(strings.TrimSuffix(filepath.Base(name), transcriptExt))
		var info store.SessionInfo
		for {
			e, err := dec.Decode()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			info.Apply(key, e)
		}
		f.Close()
		infos = append(infos, info)
	}
	store.SortSessions(infos)
	return infos[:min(limit, len(infos))]
}

func firstPage(b *testing.B, s *Store, scope store.Scope) {
	page, err := s.List(b.Context(), scope, store.ListOptions{Limit: 50})
	if err != nil || len(page.Sessions) != 50 {
		b.Fatalf("List: %d sessions, %v", len(page.Sessions), err)
	}
}

func BenchmarkList(b *testing.B) {
	scope := store.Scope{Agent: "bench"}
	for _, n := range []int{20, 2000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			// Built once, used by every sub-benchmark below.
			root := b.TempDir()
			listDataset(b, root, n)
			var warmNs, coldNs float64
			b.Run("warm", func(b *testing.B) {
				s := open(b, root)
				firstPage(b, s, scope)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					firstPage(b, s, scope)
				}
				warmNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			})
			b.Run("cold", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					s, err := New(root, WithRetention(store.Retention{}))
					if err != nil {
						b.Fatal(err)
					}
					firstPage(b, s, scope)
					s.Close()
				}
				coldNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			})
			// With 2,000-entry sessions the naive lister would decode 20
			// million entries, minutes a run: it reads one session in a
			// hundred, and the figures are scaled up (its cost is linear
			// in the sessions by construction).
			every := 1
			if n > 100 {
				every = 100
			}
			b.Run(fmt.Sprintf("naive-1-in-%d", every), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					naiveList(b, filepath.Join(root, "bench"), scope, 50, every)
				}
				naive := float64(b.Elapsed().Nanoseconds()) / float64(b.N) * float64(every)
				b.ReportMetric(naive, "naive-ns/list")
				if warmNs > 0 && coldNs > 0 {
					b.ReportMetric(naive/warmNs, "naive/warm")
					b.ReportMetric(naive/coldNs, "naive/cold")
				}
			})
		})
	}
}

// tailSession writes a session of n entries of about 300 bytes directly
// and returns its key.
func tailSession(b *testing.B, root string, n int) store.Key {
	key := store.Key{Agent: "bench", ID: fmt.Sprintf("n%d", n)}
	f, err := os.Create(filepath.Join(root, "bench", key.ID+transcriptExt))
	if err != nil {
		b.Fatal(err)
	}
	parent := ""
	var buf []byte
	for i := range n {
		e, line := entry300(b, parent, t0.Add(time.Duration(i)*time.Millisecond))
		buf = append(buf, line...)
		parent = e.ID
		if len(buf) > 1<<20 || i == n-1 {
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
			buf = buf[:0]
		}
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return key
}

func BenchmarkReadTail(b *testing.B) {
	root := b.TempDir()
	os.MkdirAll(filepath.Join(root, "bench"), 0o700)
	small, large := tailSession(b, root, 1_000), tailSession(b, root, 100_000)
	s := open(b, root)
	for _, key := range []store.Key{small, large} {
		if _, total, err := s.ReadTail(b.Context(), key, 50); err != nil || total < 1000 {
			b.Fatal(total, err)
		}
	}
	tail := func(b *testing.B, key store.Key) {
		entries, _, err := s.ReadTail(b.Context(), key, 50)
		if err != nil || len(entries) != 50 {
			b.Fatal(len(entries), err)
		}
	}
	b.Run("entries=1000", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			tail(b, small)
		}
	})
	b.Run("entries=100000", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			tail(b, large)
		}
	})
	b.Run("ratio", func(b *testing.B) {
		// Both in one loop, so that the machine's mood is the same for both.
		var inSmall, inLarge time.Duration
		for i := 0; i < b.N; i++ {
			t := time.Now()
			tail(b, small)
			m := time.Now()
			tail(b, large)
			inSmall += m.Sub(t)
			inLarge += time.Since(m)
		}
		b.ReportMetric(float64(inLarge)/float64(inSmall), "100k/1k")
	})
}
