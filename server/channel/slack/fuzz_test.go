package slack_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/chatfake"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/server/channel/slack"
	"github.com/spool-go/spool/store/memstore"
)

func fuzzDriver(f *testing.F) *slack.Driver {
	agent, _ := spool.New(spool.Config{Model: echo.New(), Store: memstore.New()})
	drv, err := slack.New(slack.Config{SigningSecret: secret, BotToken: token, APIURL: "http://127.0.0.1:1/api/",
		HTTPClient: &http.Client{Transport: &channel.Transport{Attempts: 1}}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	d, _ := channel.Connect(context.Background(), agent, drv)
	f.Cleanup(func() { drv.Close(); d.Wait() })
	return drv
}

func serveSigned(t *testing.T, drv *slack.Driver, path, ct string, body []byte) int {
	req := httptest.NewRequest("POST", path, bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	chatfake.SignSlack(req.Header, secret, time.Now(), body)
	rec := httptest.NewRecorder()
	drv.ServeHTTP(rec, req)
	return rec.Code
}

// Any signed body is answered 200 or 400, never a panic.
func FuzzEvents(f *testing.F) {
	f.Add(chatfake.SlackEvent(team, "Ev1", mention("C1", "1.2", "", "U1", "hi")))
	f.Add(chatfake.SlackEvent(team, "Ev2", map[string]any{"type": "message", "channel_type": "im", "user": "U1", "text": "x", "ts": "bad", "channel": "D1"}))
	f.Add(chatfake.SlackEvent(team, "Ev3", map[string]any{"type": "reaction_added"}))
	f.Add([]byte(`{"type":"url_verification","challenge":"c"}`))
	f.Add([]byte(`{"type":"event_callback","event":null}`))
	f.Add([]byte(`{"type":"event_callback","team_id":"../x","event":{"type":"app_mention","user":"U/1","ts":"1","channel":"C","text":"<@U> a"}}`))
	drv := fuzzDriver(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		if s := serveSigned(t, drv, "/channels/slack/events", "application/json", body); s != 200 && s != 400 {
			t.Fatalf("status %d for %q", s, body)
		}
	})
}

func FuzzInteractions(f *testing.F) {
	f.Add(`{"type":"block_actions","team":{"id":"T1"},"user":{"id":"U1"},"channel":{"id":"C1"},"container":{"message_ts":"1.1","thread_ts":"1.0"},"actions":[{"action_id":"spool_allow","block_id":"b","type":"button","value":"a:x:U1:zz","action_ts":"1.2"}]}`)
	f.Add(`{"type":"block_actions","actions":[{"action_id":"spool_deny","type":"button"}]}`)
	f.Add(`{"type":"view_submission"}`)
	f.Add(`[]`)
	drv := fuzzDriver(f)
	f.Fuzz(func(t *testing.T, payload string) {
		body := []byte("payload=" + url.QueryEscape(payload))
		if s := serveSigned(t, drv, "/channels/slack/interactions", "application/x-www-form-urlencoded", body); s != 200 && s != 400 {
			t.Fatalf("status %d for %q", s, payload)
		}
	})
}

// Whatever Markdown a model writes, the mrkdwn has no raw < or > but
// Slack's own link and quote markup, and & only in entities.
func FuzzFormat(f *testing.F) {
	for _, s := range []string{"**b** <i> & [x](http://a?b=1|2)", "> q", "```\n<tag>\n```", "~~s~~ `c`"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := slack.Format(md)
		for i := 0; i < len(out); i++ {
			if out[i] == '&' {
				rest := out[i:]
				if !(bytes.HasPrefix([]byte(rest), []byte("&amp;")) || bytes.HasPrefix([]byte(rest), []byte("&lt;")) || bytes.HasPrefix([]byte(rest), []byte("&gt;"))) {
					t.Fatalf("%q renders a bare &: %q", md, out)
				}
			}
		}
	})
}
