package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/spool-go/spool/server/channel"
)

// conv is the reply to one interaction: channel.Conversation. Its token
// is the interaction's, valid for 15 minutes.
type conv struct {
	d     *Driver
	token string
	// taken is when the interaction was taken (its deferral answered
	// just after); deadline is its turn's token deadline (zero: none).
	taken, deadline time.Time
	// used: the original response (the deferred "thinking…") has been
	// replaced; what comes next is a follow-up.
	used bool
	// For a button press: the original response is the buttons' message,
	// with this text.
	pressed  bool
	question string
}

// noMentions keeps an answer from pinging anyone.
var noMentions = &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}

func (c *conv) hook(rest string) string {
	return "/webhooks/" + c.d.cfg.ApplicationID + "/" + c.token + rest
}

// post replaces the original response the first time, and posts a
// follow-up after.
func (c *conv) post(ctx context.Context, p discordgo.WebhookParams) (string, error) {
	p.AllowedMentions = noMentions
	if !c.used && !c.pressed {
		edit := discordgo.WebhookEdit{Content: &p.Content, AllowedMentions: noMentions}
		if p.Components != nil {
			edit.Components = &p.Components
		}
		if err := c.editOriginal(ctx, edit); err != nil {
			return "", err
		}
		c.used = true
		return "@original", nil
	}
	m, err := c.d.call(ctx, "POST", c.hook("?wait=true"), "", p)
	if err != nil {
		return "", err
	}
	return m.ID, nil
}

// Discord makes the deferred response's message once it has read the
// deferral, so an edit sent at once can get there first and be refused
// 404 Unknown Message (10008). Until originalLag after the interaction
// was taken, the first edit is tried again on that error, after
// originalBackoff, doubled each time up to a second. Past it (or past the
// turn's deadline, or once the call's context ends) 10008 is the
// message's own: a person deleted the "thinking…" message, and no edit
// or follow-up of the interaction will be taken.
var (
	originalLag     = 5 * time.Second
	originalBackoff = 100 * time.Millisecond
)

// editOriginal replaces the deferred response with edit.
func (c *conv) editOriginal(ctx context.Context, edit discordgo.WebhookEdit) error {
	until := c.taken.Add(originalLag)
	if !c.deadline.IsZero() && c.deadline.Before(until) {
		until = c.deadline
	}
	wait := originalBackoff
	for {
		_, err := c.d.call(ctx, "PATCH", c.hook("/messages/@original"), "", edit)
		if !unknownMessage(err) || time.Now().Add(wait).After(until) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		wait = min(2*wait, time.Second)
	}
}

func (c *conv) Post(ctx context.Context, text string) (string, error) {
	return c.post(ctx, discordgo.WebhookParams{Content: text})
}

func (c *conv) Edit(ctx context.Context, id, text string) error {
	_, err := c.d.call(ctx, "PATCH", c.hook("/messages/"+id), "", discordgo.WebhookEdit{Content: &text, AllowedMentions: noMentions})
	// Only Post races the deferral (editOriginal): a message it returned
	// exists, so 10008 here means a person deleted it.
	if unknownMessage(err) {
		return fmt.Errorf("%w: %w", channel.ErrMessageGone, err)
	}
	return err
}

// unknownMessage reports whether err is Discord's 404 Unknown Message.
func unknownMessage(err error) bool {
	var pe *channel.PlatformError
	return errors.As(err, &pe) && pe.Status == http.StatusNotFound && pe.Code == "discord_10008"
}

// argsShown is how much of a tool call's arguments an approval shows.
const argsShown = 1500

func (c *conv) Ask(ctx context.Context, q channel.Question) error {
	args := q.Arguments(argsShown)
	args = strings.ReplaceAll(args, "```", "'''")
	text := "**Approval needed:** the tool `" + strings.ReplaceAll(q.Approval.Tool, "`", "'") + "` wants to run with\n```json\n" + args + "\n```"
	_, err := c.post(ctx, discordgo.WebhookParams{Content: text, Components: []discordgo.MessageComponent{
		discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.Button{Label: "Allow", Style: discordgo.SuccessButton, CustomID: q.Allow},
			discordgo.Button{Label: "Always allow", Style: discordgo.SecondaryButton, CustomID: q.Always},
			discordgo.Button{Label: "Deny", Style: discordgo.DangerButton, CustomID: q.Deny},
		}},
	}})
	return err
}

func (c *conv) Decided(ctx context.Context, d channel.Decided) error {
	if !c.pressed {
		return nil
	}
	q := c.question
	if len(q) > 1800 {
		cut := 1800
		for cut > 0 && !utf8.RuneStart(q[cut]) {
			cut--
		}
		q = q[:cut] + "…"
	}
	text := q + "\n\n**" + d.Verdict() + "** by <@" + d.By + ">."
	none := []discordgo.MessageComponent{}
	_, err := c.d.call(ctx, "PATCH", c.hook("/messages/@original"), "", discordgo.WebhookEdit{Content: &text, Components: &none, AllowedMentions: noMentions})
	return err
}

func (c *conv) Tell(ctx context.Context, text string) error {
	_, err := c.d.call(ctx, "POST", c.hook(""), "", discordgo.WebhookParams{Content: text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions})
	return err
}
