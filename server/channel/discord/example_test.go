package discord_test

import (
	"context"
	"log"
	"os"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/server/channel/discord"
)

// A Discord app whose Interactions Endpoint URL is
// https://HOST/channels/discord/interactions; RegisterCommands creates its
// /ask command once.
func Example() {
	agent, err := spool.New(spool.Config{Model: echo.New()})
	if err != nil {
		log.Fatal(err)
	}
	drv, err := discord.New(discord.Config{
		PublicKey:     os.Getenv("DISCORD_PUBLIC_KEY"),
		ApplicationID: os.Getenv("DISCORD_APPLICATION_ID"),
		BotToken:      os.Getenv("DISCORD_BOT_TOKEN"),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := drv.RegisterCommands(context.Background()); err != nil {
		log.Print(err)
	}
	h := server.New(agent, server.Options{Channels: []channel.Driver{drv}})
	defer h.Close()
	_ = h // mount h in your mux
}
