package telegram_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/chatfake"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/server/channel/telegram"
	"github.com/spool-go/spool/store/memstore"
)

// Whatever Markdown a model writes, the HTML sent to Telegram parses.
func FuzzFormat(f *testing.F) {
	for _, s := range []string{"**bold** _it_ `code` ~~s~~", "```go\nx := a < b && c\n```", "[a](http://x?a=1&b=\"2\")",
		"> quote\n> more", "1. one\n2. two\n   - nested", "<b>raw</b> & <script>", "# Title\n\ntext", "**unclosed", "![img](u)", "a\\*b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		start := time.Now()
		defer func() {
			if d := time.Since(start); d > time.Second {
				t.Fatalf("%v for %d bytes", d, len(md))
			}
		}()
		out := telegram.Format(md)
		if err := chatfake.CheckTelegramHTML(out); err != nil {
			t.Fatalf("%q renders %q: %v", md, out, err)
		}
		for _, part := range channel.Split(md, 200, channel.UTF16Len, telegram.Format) {
			if err := chatfake.CheckTelegramHTML(part); err != nil {
				t.Fatalf("a part of %q: %q: %v", md, part, err)
			}
		}
	})
}

// The webhook's parser takes any body with the right secret without
// panicking, and answers it 200 or 400.
func FuzzWebhook(f *testing.F) {
	f.Add([]byte(`{"update_id":1,"message":{"message_id":1,"date":1,"text":"hi","chat":{"id":1,"type":"private"},"from":{"id":2,"is_bot":false,"first_name":"a"}}}`))
	f.Add([]byte(`{"update_id":2,"callback_query":{"id":"c","data":"a:x:y:z","from":{"id":2},"message":{"message_id":1,"date":1,"chat":{"id":1}}}}`))
	f.Add([]byte(`{"update_id":3,"callback_query":{"id":"c","message":{"message_id":1,"date":0,"chat":{"id":1}}}}`))
	f.Add([]byte(`{"update_id":4,"edited_message":null,"message":{"chat":{}}}`))
	f.Add([]byte(`not json`))
	agent, _ := spool.New(spool.Config{Model: echo.New(), Store: memstore.New()})
	drv, err := telegram.New(telegram.Config{Token: token, WebhookSecret: secret, APIURL: "http://127.0.0.1:1",
		HTTPClient: &http.Client{Transport: &channel.Transport{Attempts: 1}}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	d, _ := channel.Connect(context.Background(), agent, drv)
	defer func() { drv.Close(); d.Wait() }()
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "/channels/telegram/webhook", bytes.NewReader(body))
		req.Header.Set(telegram.SecretHeader, secret)
		rec := httptest.NewRecorder()
		drv.ServeHTTP(rec, req)
		if rec.Code != 200 && rec.Code != 400 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, strings.TrimSpace(rec.Body.String()))
		}
	})
}
