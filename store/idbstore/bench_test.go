//go:build js && wasm

package idbstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// Run in Chromium with:
//
//	go test ./store/idbstore -run TestInBrowser -wasm.bench . -wasm.benchtime 2s

func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct {
		name string
		opts []Option
	}{
		{"strict", nil},
		{"relaxed", []Option{WithRelaxedDurability()}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := openBench(b, c.opts...)
			key := store.Key{Agent: "bench", ID: "append"}
			head := ""
			at := time.Now().UTC()
			for b.Loop() {
				at = at.Add(time.Millisecond)
				e := storetest.NewEntry(head, at, transcript.TypeUserMessage, transcript.UserMessage{Text: "a message of a typical length, about a hundred bytes of text in all, more or less"})
				if err := s.Append(b.Context(), key, e); err != nil {
					b.Fatal(err)
				}
				head = e.ID
			}
		})
	}
}

func BenchmarkList(b *testing.B) {
	s := openBench(b, WithRelaxedDurability())
	ns := store.Namespace{Agent: "bench"}
	start := time.Now().UTC().Add(-time.Hour)
	for i := range 500 {
		seedBench(b, s, ns.Key(fmt.Sprintf("s%03d", i)), start.Add(time.Duration(i)*time.Second), 3)
	}
	first, err := s.List(b.Context(), ns, store.ListOptions{Limit: 50})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		cursor string
	}{{"first-page-of-50", ""}, {"second-page-of-50", first.NextCursor}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				page, err := s.List(b.Context(), ns, store.ListOptions{Limit: 50, Cursor: c.cursor})
				if err != nil || len(page.Sessions) != 50 {
					b.Fatalf("List: %d sessions, %v", len(page.Sessions), err)
				}
			}
		})
	}
}

func BenchmarkRead(b *testing.B) {
	s := openBench(b, WithRelaxedDurability())
	key := store.Key{Agent: "bench", ID: "long"}
	seedBench(b, s, key, time.Now().UTC().Add(-time.Hour), 1000)
	b.Run("all-1000", func(b *testing.B) {
		for b.Loop() {
			if got, err := s.Read(b.Context(), key); err != nil || len(got) != 1000 {
				b.Fatalf("Read: %d entries, %v", len(got), err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "µs/entry")
	})
	b.Run("tail-20-of-1000", func(b *testing.B) {
		for b.Loop() {
			if got, _, err := s.ReadTail(b.Context(), key, 20); err != nil || len(got) != 20 {
				b.Fatalf("ReadTail: %d entries, %v", len(got), err)
			}
		}
	})
}

func openBench(b *testing.B, opts ...Option) *Store {
	name := dbName()
	s, err := New(b.Context(), name, append([]Option{WithRetention(store.Retention{})}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		s.Close()
		<-rawDelete(name)
	})
	return s
}

func seedBench(b *testing.B, s *Store, key store.Key, start time.Time, n int) {
	for i, e := range storetest.Chain("", start, n) {
		if err := s.Append(b.Context(), key, e); err != nil {
			b.Fatalf("seed entry %d of %s: %v", i, key, err)
		}
	}
}
