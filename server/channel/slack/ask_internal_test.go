package slack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server/channel"
)

// An approval whose arguments hold many &, < or > (a shell command with
// "&&" and redirections, HTML) grows as it is escaped: it shows fewer of
// them so that its section stays within Slack's 3000 characters, which
// Slack would refuse (invalid_blocks), the buttons with it.
func TestAskSectionWithinLimit(t *testing.T) {
	var blocks string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		blocks = r.Form.Get("blocks")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true,"channel":"C1","ts":"1.2"}`))
	}))
	defer srv.Close()
	d, err := New(Config{SigningSecret: "s", BotToken: "xoxb-t", APIURL: srv.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"path":"index.html","content":"<ul>` + strings.Repeat("<li><b>item</b></li>", 100) + `</ul>"}`)
	c := &conv{d: d, channel: "C1", thread: "1.1"}
	q := channel.Question{Approval: spool.Approval{ID: "apr_x", Tool: "shell", Arguments: args}, Allow: "a", Always: "s", Deny: "d"}
	if err := c.Ask(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	var bs []struct {
		Type string `json:"type"`
		Text *struct {
			Text string `json:"text"`
		} `json:"text"`
	}
	if err := json.Unmarshal([]byte(blocks), &bs); err != nil {
		t.Fatal(err, blocks)
	}
	for _, b := range bs {
		if b.Type == "section" && b.Text != nil {
			if n := utf8.RuneCountInString(b.Text.Text); n > Limit {
				t.Fatalf("section text of %d characters, over Slack's %d", n, Limit)
			}
		}
	}
}
