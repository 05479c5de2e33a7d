package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/transcript"
)

// POST /invoke runs its turn on the request's goroutine, yet as the
// streaming routes do: with --on-disconnect continue the turn outlives a
// client that goes away and is stored whole, with cancel it ends
// cancelled, and Close waits for a turn whose client is gone, recording
// its end before it returns.
func TestInvokeDisconnect(t *testing.T) {
	prompt := strings.Repeat("word ", 30)
	for _, c := range []struct {
		name  string
		mode  server.Disconnect
		close bool // Close the server once the client is gone
		want  transcript.Status
	}{
		{"continue", server.DisconnectContinue, false, transcript.StatusOK},
		{"cancel", server.DisconnectCancel, false, transcript.StatusCancelled},
		{"close", server.DisconnectContinue, true, transcript.StatusCancelled},
	} {
		t.Run(c.name, func(t *testing.T) {
			started := make(chan struct{}, 1)
			m := echo.New(echo.WithScript(func(req *model.Request) []model.Event {
				select {
				case started <- struct{}{}:
				default:
				}
				return echo.Reply(req)
			}), echo.WithDelay(20*time.Millisecond))
			e := newEnv(t, spool.Config{Model: m}, server.Options{OnDisconnect: c.mode})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				res, err := e.http.Client().Do(e.newRequest(ctx, req{method: "POST", path: "/invoke", body: map[string]any{"sessionId": "inv", "prompt": prompt}}))
				if err == nil {
					res.Body.Close()
				}
			}()
			<-started
			cancel()
			<-done
			var entries []transcript.Entry
			if c.close {
				e.srv.Close()
				entries = e.transcriptOf("", "inv")
				if n := len(entries); n == 0 || entries[n-1].Type != transcript.TypeTurnEnd {
					t.Fatalf("after Close, the transcript ends without the turn's end (%d entries)", n)
				}
			} else {
				entries = e.waitEnded("", "inv")
			}
			if got := turnEnds(entries); len(got) != 1 || got[0] != c.want {
				t.Fatalf("turn ends %v, want [%s]", got, c.want)
			}
			if c.want == transcript.StatusOK {
				if got := lastAnswer(t, entries); got != "echo: "+prompt {
					t.Fatalf("stored answer %q", got)
				}
			}
			checkWellFormed(t, entries)
		})
	}
}
