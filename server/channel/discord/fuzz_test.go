package discord_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/chatfake"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/server/channel/discord"
	"github.com/spool-go/spool/store/memstore"
)

// Any signed body is answered 200 or 400, never a panic.
func FuzzInteraction(f *testing.F) {
	f.Add([]byte(`{"id":"1","type":1}`))
	f.Add([]byte(`{"id":"1200000000000000001","type":2,"token":"t","channel_id":"2","member":{"user":{"id":"3"}},"data":{"name":"ask","options":[{"name":"prompt","type":3,"value":"hi"}]}}`))
	f.Add([]byte(`{"id":"1200000000000000001","type":2,"token":"t","channel_id":"2","user":{"id":"3"},"data":{"name":"ask","options":[{"name":"prompt","type":4,"value":3}]}}`))
	f.Add([]byte(`{"id":"1200000000000000001","type":3,"token":"t","channel_id":"2","user":{"id":"3"},"data":{"custom_id":"a:b:c:d"}}`))
	f.Add([]byte(`{"id":"1","type":3,"token":"t","channel_id":"2","user":{"id":"3"},"message":{"id":"4","content":"x"}}`))
	f.Add([]byte(`{"type":2}`))
	agent, _ := spool.New(spool.Config{Model: echo.New(), Store: memstore.New()})
	drv, err := discord.New(discord.Config{PublicKey: hex.EncodeToString(pub), ApplicationID: app, BotToken: botToken,
		APIURL: "http://127.0.0.1:1", HTTPClient: &http.Client{Transport: &channel.Transport{Attempts: 1}}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	d, _ := channel.Connect(context.Background(), agent, drv)
	defer func() { drv.Close(); d.Wait() }()
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "/channels/discord/interactions", bytes.NewReader(body))
		chatfake.SignDiscord(req.Header, priv, time.Now(), body)
		rec := httptest.NewRecorder()
		drv.ServeHTTP(rec, req)
		if rec.Code != 200 && rec.Code != 400 {
			t.Fatalf("status %d for %q", rec.Code, body)
		}
	})
}
