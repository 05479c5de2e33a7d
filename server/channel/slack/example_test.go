package slack_test

import (
	"log"
	"net/http"
	"os"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/server/channel/slack"
)

// A Slack bot in a program's own mux: Slack's Event Subscriptions point at
// https://HOST/channels/slack/events, Interactivity at
// https://HOST/channels/slack/interactions.
func Example() {
	agent, err := spool.New(spool.Config{Model: echo.New()})
	if err != nil {
		log.Fatal(err)
	}
	drv, err := slack.New(slack.Config{
		SigningSecret: os.Getenv("SLACK_SIGNING_SECRET"),
		BotToken:      os.Getenv("SLACK_BOT_TOKEN"),
	})
	if err != nil {
		log.Fatal(err) // names the missing variable
	}
	h := server.New(agent, server.Options{Channels: []channel.Driver{drv}})
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/", h)
	_ = http.ListenAndServe // serve mux behind HTTPS
}
