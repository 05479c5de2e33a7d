package telegram

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/spool-go/spool/internal/chatfake"
	"github.com/spool-go/spool/server/channel"
)

// An edit Telegram answers "message is not modified" (the message reads
// so already) is no failure: taken for a refusal for good, it would stop
// the editing of that message, and the rest of the answer with it. An
// edit of a deleted message is ErrMessageGone, so the relay posts anew.
func TestEditAnswers(t *testing.T) {
	const token = "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"
	fake := chatfake.NewTelegram(t, token)
	d, err := New(Config{Token: token, WebhookSecret: "s", APIURL: fake.URL, HTTPClient: chatfake.Client(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	c := &conv{d: d, chat: 555}
	ctx := context.Background()
	id, err := c.Post(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Edit(ctx, id, "hello"); err != nil {
		t.Fatalf("an edit to the same text: %v", err)
	}
	fake.Delete(fake.Messages()[0].ID)
	err = c.Edit(ctx, id, "hello again")
	var pe *channel.PlatformError
	if !errors.Is(err, channel.ErrMessageGone) || !errors.As(err, &pe) || pe.Status != 400 {
		t.Fatalf("an edit of a deleted message: %v", err)
	}
	if err := c.Edit(ctx, id, "<b>"); errors.Is(err, channel.ErrMessageGone) || err == nil {
		t.Fatalf("an edit refused for its text: %v", err)
	}
}
