package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"

	"github.com/spool-go/spool/server/channel"
)

// Action ids of the approval buttons.
const (
	actionPrefix = "spool_"
	actionAllow  = actionPrefix + "allow"
	actionAlways = actionPrefix + "always"
	actionDeny   = actionPrefix + "deny"
)

// conv is a Slack thread a reply goes to: channel.Conversation.
type conv struct {
	d               *Driver
	channel, thread string
	// For a button press: who pressed, the approval message's ts and its
	// question.
	user, approval, question string
}

func section(text string) slackapi.Block {
	return slackapi.NewSectionBlock(slackapi.NewTextBlockObject(slackapi.MarkdownType, text, false, false), nil, nil)
}

// message is a message's text as a section, and the same text as the
// notification fallback.
func message(text string) []slackapi.MsgOption {
	return []slackapi.MsgOption{slackapi.MsgOptionText(text, false), slackapi.MsgOptionBlocks(section(text))}
}

func (c *conv) Post(ctx context.Context, text string) (string, error) {
	opts := append(message(text), slackapi.MsgOptionTS(c.thread))
	_, ts, err := c.d.api.PostMessageContext(ctx, c.channel, opts...)
	return ts, platformError(err)
}

func (c *conv) Edit(ctx context.Context, id, text string) error {
	_, _, _, err := c.d.api.UpdateMessageContext(ctx, c.channel, id, message(text)...)
	err = platformError(err)
	var pe *channel.PlatformError
	if errors.As(err, &pe) && pe.Code == "message_not_found" {
		return fmt.Errorf("%w: %w", channel.ErrMessageGone, err)
	}
	return err
}

// argsShown is how much of a tool call's arguments an approval shows.
const argsShown = 1500

func (c *conv) Ask(ctx context.Context, q channel.Question) error {
	// The section holds the arguments escaped, which may grow them
	// several times over (&, < and > in a shell command or HTML): fewer
	// of them are shown until it fits Slack's limit, or it refuses the
	// message and the buttons with it.
	var question string
	for n := argsShown; ; n = n * 3 / 4 {
		question = "*Approval needed:* the tool `" + escape(q.Approval.Tool) + "` wants to run with\n```\n" + escape(q.Arguments(n)) + "\n```"
		if utf8.RuneCountInString(question) <= Limit || n == 0 {
			break
		}
	}
	btn := func(id, label, value string, style slackapi.Style) slackapi.BlockElement {
		b := slackapi.NewButtonBlockElement(id, value, slackapi.NewTextBlockObject(slackapi.PlainTextType, label, false, false))
		b.Style = style
		return b
	}
	actions := slackapi.NewActionBlock("spool_approval",
		btn(actionAllow, "Allow", q.Allow, slackapi.StylePrimary),
		btn(actionAlways, "Always allow", q.Always, slackapi.StyleDefault),
		btn(actionDeny, "Deny", q.Deny, slackapi.StyleDanger),
	)
	_, _, err := c.d.api.PostMessageContext(ctx, c.channel,
		slackapi.MsgOptionText("Approval needed: "+q.Approval.Tool, false),
		slackapi.MsgOptionBlocks(section(question), actions),
		slackapi.MsgOptionTS(c.thread))
	return platformError(err)
}

func (c *conv) Decided(ctx context.Context, d channel.Decided) error {
	if c.approval == "" {
		return nil
	}
	verdict := d.Verdict() + " by <@" + d.By + ">."
	blocks := []slackapi.Block{}
	if c.question != "" {
		blocks = append(blocks, section(c.question))
	}
	blocks = append(blocks, section(verdict))
	_, _, _, err := c.d.api.UpdateMessageContext(ctx, c.channel, c.approval,
		slackapi.MsgOptionText(verdict, false), slackapi.MsgOptionBlocks(blocks...))
	return platformError(err)
}

func (c *conv) Tell(ctx context.Context, text string) error {
	if c.user == "" {
		return nil
	}
	_, err := c.d.api.PostEphemeralContext(ctx, c.channel, c.user, slackapi.MsgOptionText(text, false), slackapi.MsgOptionTS(c.thread))
	return platformError(err)
}

// platformError turns slack-go's errors into content-free ones.
func platformError(err error) error {
	if err == nil {
		return nil
	}
	var se slackapi.SlackErrorResponse
	var sc slackapi.StatusCodeError
	var rl *slackapi.RateLimitedError
	switch {
	case errors.As(err, &rl):
		return &channel.PlatformError{Status: http.StatusTooManyRequests, Code: "ratelimited"}
	case errors.As(err, &sc):
		return &channel.PlatformError{Status: sc.Code}
	case errors.As(err, &se):
		return &channel.PlatformError{Status: http.StatusOK, Code: se.Err}
	}
	return err
}
