package telegram_test

import (
	"context"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/server/channel/telegram"
)

// A Telegram bot in a program's own mux, its webhook set (setWebhook) to
// https://HOST/channels/telegram/webhook with the same secret token; a
// graceful stop lets the answers being written finish.
func Example() {
	agent, err := spool.New(spool.Config{Model: echo.New()})
	if err != nil {
		log.Fatal(err)
	}
	drv, err := telegram.New(telegram.Config{
		Token:         os.Getenv("TELEGRAM_BOT_TOKEN"),
		WebhookSecret: os.Getenv("TELEGRAM_WEBHOOK_SECRET"),
	})
	if err != nil {
		log.Fatal(err)
	}
	h := server.New(agent, server.Options{Channels: []channel.Driver{drv}})
	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: h}
	go srv.ListenAndServe()
	// … on SIGTERM:
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	h.Shutdown(ctx)
}
