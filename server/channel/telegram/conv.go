package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	tg "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/spool-go/spool/server/channel"
)

// conv is a Telegram chat a reply goes to: channel.Conversation.
type conv struct {
	d       *Driver
	chat    int64
	thread  int // the forum topic, 0 outside one
	replyTo int // the question's message id
	// For a button press: its callback query, the approval message and
	// its text, and who pressed.
	callback string
	approval int
	question string
	presser  models.User
}

func (c *conv) Post(ctx context.Context, text string) (string, error) {
	p := &tg.SendMessageParams{ChatID: c.chat, MessageThreadID: c.thread, Text: text, ParseMode: models.ParseModeHTML}
	if c.replyTo != 0 {
		p.ReplyParameters = &models.ReplyParameters{MessageID: c.replyTo, AllowSendingWithoutReply: true}
	}
	ctx, status := recording(ctx)
	m, err := c.d.bot.SendMessage(ctx, p)
	if err != nil {
		return "", platformError(err, *status)
	}
	return strconv.Itoa(m.ID), nil
}

func (c *conv) Edit(ctx context.Context, id, text string) error {
	mid, err := strconv.Atoi(id)
	if err != nil {
		return err
	}
	ctx, status := recording(ctx)
	_, err = c.d.bot.EditMessageText(ctx, &tg.EditMessageTextParams{ChatID: c.chat, MessageID: mid, Text: text, ParseMode: models.ParseModeHTML})
	switch {
	case err == nil:
	case !errors.Is(err, tg.ErrorBadRequest):
	case strings.Contains(err.Error(), "message to edit not found"):
		return fmt.Errorf("%w: %w", channel.ErrMessageGone, platformError(err, *status))
	case strings.Contains(err.Error(), "message is not modified"):
		// The message reads so already (two texts Telegram takes
		// for one): a refusal for good would stop its editing.
		return nil
	}
	return platformError(err, *status)
}

// argsShown is how much of a tool call's arguments an approval shows.
const argsShown = 1500

func (c *conv) Ask(ctx context.Context, q channel.Question) error {
	args := q.Arguments(argsShown)
	text := "<b>Approval needed:</b> the tool <code>" + escape(q.Approval.Tool) + "</code> wants to run with\n<pre>" + escape(args) + "</pre>"
	p := &tg.SendMessageParams{
		ChatID: c.chat, MessageThreadID: c.thread, Text: text, ParseMode: models.ParseModeHTML,
		ReplyMarkup: models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{
			{Text: "Allow", CallbackData: q.Allow},
			{Text: "Always allow", CallbackData: q.Always},
			{Text: "Deny", CallbackData: q.Deny},
		}}},
	}
	if c.replyTo != 0 {
		p.ReplyParameters = &models.ReplyParameters{MessageID: c.replyTo, AllowSendingWithoutReply: true}
	}
	ctx, status := recording(ctx)
	_, err := c.d.bot.SendMessage(ctx, p)
	return platformError(err, *status)
}

func (c *conv) Decided(ctx context.Context, d channel.Decided) error {
	verdict := d.Verdict()
	if err := c.answer(ctx, verdict+"."); err != nil {
		return err
	}
	if c.approval == 0 {
		return nil
	}
	who := c.presser.FirstName
	if c.presser.Username != "" {
		who = "@" + c.presser.Username
	}
	text := escape(c.question) + "\n\n<b>" + verdict + "</b> by " + escape(who) + "."
	ctx, status := recording(ctx)
	// Without reply_markup: the keyboard goes.
	_, err := c.d.bot.EditMessageText(ctx, &tg.EditMessageTextParams{ChatID: c.chat, MessageID: c.approval, Text: text, ParseMode: models.ParseModeHTML})
	return platformError(err, *status)
}

func (c *conv) Tell(ctx context.Context, text string) error { return c.answer(ctx, text) }

// answer answers the press's callback query, once: Telegram shows the
// text to the presser only.
func (c *conv) answer(ctx context.Context, text string) error {
	if c.callback == "" {
		return nil
	}
	id := c.callback
	c.callback = ""
	ctx, status := recording(ctx)
	_, err := c.d.bot.AnswerCallbackQuery(ctx, &tg.AnswerCallbackQueryParams{CallbackQueryID: id, Text: text})
	return platformError(err, *status)
}

type statusKey struct{}

// recording returns a context under which recorder notes the HTTP status
// of the call: go-telegram/bot's errors carry Telegram's description,
// not the status.
func recording(ctx context.Context) (context.Context, *int) {
	s := new(int)
	return context.WithValue(ctx, statusKey{}, s), s
}

// recorder is the HTTP client given to go-telegram/bot.
type recorder struct{ c *http.Client }

func (r recorder) Do(req *http.Request) (*http.Response, error) {
	res, err := r.c.Do(req)
	if s, ok := req.Context().Value(statusKey{}).(*int); ok && res != nil {
		*s = res.StatusCode
	}
	return res, err
}

// platformError turns the client's errors, whose text can quote a
// response, into content-free ones.
func platformError(err error, status int) error {
	if err == nil {
		return nil
	}
	var tooMany *tg.TooManyRequestsError
	code := ""
	switch {
	case errors.As(err, &tooMany):
		status, code = http.StatusTooManyRequests, "too_many_requests"
	case errors.Is(err, tg.ErrorBadRequest):
		code = "bad_request"
	case errors.Is(err, tg.ErrorForbidden):
		code = "forbidden"
	case errors.Is(err, tg.ErrorUnauthorized):
		code = "unauthorized"
	case errors.Is(err, tg.ErrorNotFound):
		code = "not_found"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err
	case status == 0:
		return err // no answer at all: the network's error
	}
	return &channel.PlatformError{Status: status, Code: code}
}
