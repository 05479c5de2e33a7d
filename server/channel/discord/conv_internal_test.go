package discord

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/chatfake"
	"github.com/spool-go/spool/server/channel"
)

// The first edit's retries on 404 Unknown Message are bounded: by the
// time since the interaction was taken, the turn's deadline and the
// call's context; other refusals, and an Unknown Message once the
// deferred message had time to be made (a person deleted it), fail at
// once.
func TestFirstEditRetryBounded(t *testing.T) {
	lag, backoff := originalLag, originalBackoff
	originalLag, originalBackoff = 400*time.Millisecond, 20*time.Millisecond
	t.Cleanup(func() { originalLag, originalBackoff = lag, backoff })
	const app = "1100000000000000001"
	fake := chatfake.NewDiscord(t, app, "bot")
	fake.Lag(time.Hour) // never made
	d, err := New(Config{PublicKey: strings.Repeat("ab", 32), ApplicationID: app, BotToken: "bot", APIURL: fake.URL,
		HTTPClient: chatfake.Client(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, c := range []struct {
		name            string
		known           bool // the fake knows the token
		taken, deadline time.Time
		timeout         time.Duration
		code            string
		least, most     int           // PATCH calls
		longest         time.Duration // of the Post
	}{
		{name: "within the lag", known: true, taken: now, code: "discord_10008", least: 3, most: 8, longest: time.Second},
		{name: "after the lag", known: true, taken: now.Add(-time.Minute), code: "discord_10008", least: 1, most: 1, longest: 200 * time.Millisecond},
		{name: "unknown webhook", taken: now, code: "discord_10015", least: 1, most: 1, longest: 200 * time.Millisecond},
		{name: "turn deadline", known: true, taken: now, deadline: now.Add(60 * time.Millisecond), code: "discord_10008", least: 1, most: 3, longest: 200 * time.Millisecond},
		{name: "context", known: true, taken: now, timeout: 60 * time.Millisecond, least: 1, most: 3, longest: 200 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			tok := "tok-" + strings.ReplaceAll(c.name, " ", "-")
			if c.known {
				fake.Deferred(tok)
			}
			ctx := context.Background()
			if c.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.timeout)
				defer cancel()
			}
			cv := &conv{d: d, token: tok, taken: time.Now().Add(c.taken.Sub(now)), deadline: c.deadline}
			if !c.deadline.IsZero() {
				cv.deadline = time.Now().Add(c.deadline.Sub(now))
			}
			start := time.Now()
			_, err := cv.Post(ctx, "answer")
			took := time.Since(start)
			var pe *channel.PlatformError
			switch {
			case c.code != "" && (!errors.As(err, &pe) || pe.Code != c.code):
				t.Fatalf("error %v, want %s", err, c.code)
			case c.code == "" && err == nil:
				t.Fatal("no error")
			case took > c.longest:
				t.Fatalf("took %v", took)
			}
			n := 0
			for _, call := range fake.Calls() {
				if strings.Contains(call, "/"+tok+"/messages/@original") {
					n++
				}
			}
			if n < c.least || n > c.most {
				t.Fatalf("%d edits, want %d to %d", n, c.least, c.most)
			}
		})
	}
}
