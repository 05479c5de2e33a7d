package spool_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

// boundedSummarizer folds each covered question into the summary as the
// echo model does, and keeps its newest 40 lines: a summary of bounded
// size, as a model told to summarize writes one.
func boundedSummarizer(ctx context.Context, in spool.SummaryInput) (spool.Summary, error) {
	var users []string
	for _, m := range in.Messages {
		if m.Role == model.RoleUser {
			users = append(users, m.Content)
		}
	}
	lines := strings.Split(echo.Summary(in.Previous, users), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return spool.Summary{Text: strings.Join(lines, "\n"), Model: "bench"}, nil
}

// BenchmarkCompactedSession runs a 10,000-turn session with compaction
// on (every 50 turns, keeping the newest 10; Session.Compact, the same
// code the automatic trigger runs) and reports, at turn 1,000 and at turn
// 10,000: the per-turn time of the next 200 turns, compactions included
// (ns/turn-1k, ns/turn-10k and their ratio), the request's size
// (req-bytes-1k, req-bytes-10k), a compaction's own cost per turn it
// newly covers (ns/covered-turn), and the request's tokens at turn
// 10,000 with compaction and without it (the default window of 200
// messages over the same transcript without its compaction entries).
func BenchmarkCompactedSession(b *testing.B) {
	const (
		turns, every, keep = 10_000, 50, 10
		probe              = 200
	)
	for b.Loop() {
		ctx := b.Context()
		var lastReq *model.Request
		m := echoScript(func(req *model.Request) []model.Event {
			lastReq = req
			return echo.Reply(req)
		})
		st := memstore.New()
		a, err := spool.New(spool.Config{Model: m, Store: st, Instructions: "You are a support agent.",
			Compaction: spool.Compaction{Summarizer: boundedSummarizer}})
		if err != nil {
			b.Fatal(err)
		}
		s := session(b, a, ctx, "long")
		var compactTime time.Duration
		covered := 0
		turnTimes := map[int]time.Duration{}
		reqBytes := map[int]int{}
		var window time.Duration
		for i := 1; i <= turns; i++ {
			start := time.Now()
			if _, err := s.Send(ctx, "question about order "+itoa(1000+i)+", which should ship this week"); err != nil {
				b.Fatal(err)
			}
			if i%every == 0 {
				cs := time.Now()
				res, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: keep})
				if err != nil {
					b.Fatal(err)
				}
				compactTime += time.Since(cs)
				covered += res.NewTurns
			}
			window += time.Since(start)
			for _, at := range []int{1000, turns - probe} {
				if i == at {
					window = 0
				}
				if i == at+probe {
					turnTimes[at] = window
					reqBytes[at] = requestBytes(lastReq)
				}
			}
		}
		if turnTimes[1000] == 0 || turnTimes[turns-probe] == 0 {
			b.Fatal("a probe did not run")
		}
		entries, err := s.Transcript(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var plain []transcript.Entry
		for _, e := range entries {
			if e.Type != transcript.TypeCompaction {
				plain = append(plain, e)
			}
		}
		opt := history.Options{Instructions: "You are a support agent."}
		b.ReportMetric(float64(turnTimes[1000].Nanoseconds())/probe, "ns/turn-1k")
		b.ReportMetric(float64(turnTimes[turns-probe].Nanoseconds())/probe, "ns/turn-10k")
		b.ReportMetric(float64(turnTimes[turns-probe])/float64(turnTimes[1000]), "cpu-ratio-10k/1k")
		b.ReportMetric(float64(reqBytes[1000]), "req-bytes-1k")
		b.ReportMetric(float64(reqBytes[turns-probe]), "req-bytes-10k")
		b.ReportMetric(float64(compactTime.Nanoseconds())/float64(covered), "ns/covered-turn")
		b.ReportMetric(float64(tokens(history.Build(entries, opt))), "tokens-10k-compacted")
		b.ReportMetric(float64(tokens(history.Build(plain, opt))), "tokens-10k-window")
	}
}

func requestBytes(req *model.Request) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content)
	}
	return n
}

func tokens(msgs []model.Message) int {
	n := 0
	for _, m := range msgs {
		n += history.ApproxTokens(m)
	}
	return n
}
