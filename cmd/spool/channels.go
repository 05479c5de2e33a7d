package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/server/channel/discord"
	"github.com/spool-go/spool/server/channel/slack"
	"github.com/spool-go/spool/server/channel/telegram"
)

// channelFlags are spool serve's chat-platform flags. Secrets come from
// the environment only, never flags (which other users can see in ps).
type channelFlags struct {
	list                              string
	slackURL, telegramURL, discordURL string
	approvers                         string
	turnTimeout                       time.Duration
}

func (c *channelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.list, "channels", "", "chat platforms to answer, comma-separated: slack, telegram, discord (secrets from SLACK_*, TELEGRAM_*, DISCORD_* variables)")
	fs.StringVar(&c.slackURL, "slack-api-url", slack.DefaultAPIURL, "Slack's Web API base URL")
	fs.StringVar(&c.telegramURL, "telegram-api-url", telegram.DefaultAPIURL, "Telegram's Bot API server")
	fs.StringVar(&c.discordURL, "discord-api-url", discord.DefaultAPIURL, "Discord's HTTP API base URL")
	fs.StringVar(&c.approvers, "channel-approvers", "", "platform user ids (comma-separated) that may answer any approval in a chat, besides the person who asked")
	fs.DurationVar(&c.turnTimeout, "channel-turn-timeout", 10*time.Minute, "longest turn started from a chat platform (on Discord, at most until 30 seconds before the interaction's 15-minute token expires)")
}

// channelSecrets names the environment variables each platform needs.
var channelSecrets = map[string][]string{
	"slack":    {"SLACK_SIGNING_SECRET", "SLACK_BOT_TOKEN"},
	"telegram": {"TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET"},
	"discord":  {"DISCORD_PUBLIC_KEY", "DISCORD_APPLICATION_ID", "DISCORD_BOT_TOKEN"},
}

// drivers returns the drivers --channels asks for. A name it does not
// know, or a secret missing from the environment, is a usage error
// (exit 2) naming the flag or the variable.
func (c *channelFlags) drivers(env *environ, log *slog.Logger) ([]channel.Driver, error) {
	names := splitList(c.list)
	if c.turnTimeout <= 0 {
		return nil, usagef("--channel-turn-timeout must be positive")
	}
	for flagName, u := range map[string]string{"slack-api-url": c.slackURL, "telegram-api-url": c.telegramURL, "discord-api-url": c.discordURL} {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return nil, usagef("--%s: %q is not an http(s) URL", flagName, u)
		}
	}
	approvers := splitList(c.approvers)
	var out []channel.Driver
	for i, name := range names {
		name = strings.ToLower(name)
		vars, ok := channelSecrets[name]
		if !ok {
			return nil, usagef("--channels: unknown channel %q (slack, telegram or discord)", name)
		}
		if slices.Contains(names[:i], name) {
			return nil, usagef("--channels: %s is listed twice", name)
		}
		for _, v := range vars {
			if strings.TrimSpace(env.getenv(v)) == "" {
				return nil, usagef("--channels %s needs %s in the environment", name, v)
			}
		}
		var d channel.Driver
		var err error
		switch name {
		case "slack":
			d, err = slack.New(slack.Config{
				SigningSecret: env.getenv("SLACK_SIGNING_SECRET"), BotToken: env.getenv("SLACK_BOT_TOKEN"),
				APIURL: c.slackURL, Approvers: approvers, TurnTimeout: c.turnTimeout, Logger: log,
			})
		case "telegram":
			d, err = telegram.New(telegram.Config{
				Token: env.getenv("TELEGRAM_BOT_TOKEN"), WebhookSecret: env.getenv("TELEGRAM_WEBHOOK_SECRET"),
				APIURL: c.telegramURL, Approvers: approvers, TurnTimeout: c.turnTimeout, Logger: log,
			})
		case "discord":
			d, err = discord.New(discord.Config{
				PublicKey: env.getenv("DISCORD_PUBLIC_KEY"), ApplicationID: env.getenv("DISCORD_APPLICATION_ID"),
				BotToken: env.getenv("DISCORD_BOT_TOKEN"), APIURL: c.discordURL, Approvers: approvers,
				TurnTimeout: c.turnTimeout, Logger: log,
			})
		}
		if err != nil {
			// The drivers' errors name the variable or flag to fix.
			return nil, usagef("--channels %s: %v", name, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// startChannels does what the drivers need once the server runs: the
// Discord /ask command is registered (a PUT that replaces it, so every
// start is the same), in the background; a failure is a warning.
func startChannels(ctx context.Context, env *environ, log *slog.Logger, drivers []channel.Driver) {
	for _, d := range drivers {
		fmt.Fprintf(env.stderr, "spool: answering %s at /channels/%s/\n", d.Name(), d.Name())
		if dd, ok := d.(*discord.Driver); ok {
			go func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
				defer cancel()
				if err := dd.RegisterCommands(ctx); err != nil {
					log.Warn("discord: the /ask command could not be registered", "code", fmt.Sprint(err))
				}
			}()
		}
	}
}
