package chatfake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Slack is a fake of Slack's Web API: chat.postMessage, chat.update and
// chat.postEphemeral, form-encoded as Slack takes them, with the bot
// token in the form or an Authorization header, answering
// {"ok":true,…} or {"ok":false,"error":"…"} (invalid_auth,
// channel_not_found, message_not_found), a 429 with Retry-After, or a
// 5xx when told to.
type Slack struct {
	faults
	// URL is the API's base URL, for the driver's APIURL.
	URL   string
	token string

	mu    sync.Mutex
	seq   int
	msgs  []*SlackMessage
	calls []string
}

// SlackMessage is a message the bot posted.
type SlackMessage struct {
	Channel, TS, ThreadTS string
	Text                  string
	Blocks                string // the blocks JSON, as posted or last updated
	Edits                 int    // chat.update calls on it
	Ephemeral             string // the user an ephemeral message was for
}

// NewSlack starts a fake that accepts token; the test's end stops it.
func NewSlack(t testing.TB, token string) *Slack {
	f := &Slack{token: token}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL + "/api/"
	return f
}

func (f *Slack) serve(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	f.mu.Lock()
	f.calls = append(f.calls, method)
	f.mu.Unlock()
	if s := f.take(); s != 0 {
		if s == http.StatusTooManyRequests {
			setRetryAfter(w)
			writeJSON(w, s, map[string]any{"ok": false, "error": "ratelimited"})
			return
		}
		w.WriteHeader(s)
		fmt.Fprintf(w, "upstream failure %d", s)
		return
	}
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 200, map[string]any{"ok": false, "error": "invalid_form_data"})
		return
	}
	tok := r.Form.Get("token")
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		tok = strings.TrimPrefix(h, "Bearer ")
	}
	if tok != f.token {
		writeJSON(w, 200, map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	ch := r.Form.Get("channel")
	if ch == "" {
		writeJSON(w, 200, map[string]any{"ok": false, "error": "channel_not_found"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch method {
	case "chat.postMessage", "chat.postEphemeral":
		f.seq++
		m := &SlackMessage{Channel: ch, TS: fmt.Sprintf("1800000000.%06d", f.seq), ThreadTS: r.Form.Get("thread_ts"),
			Text: r.Form.Get("text"), Blocks: r.Form.Get("blocks")}
		if method == "chat.postEphemeral" {
			m.Ephemeral = r.Form.Get("user")
			f.msgs = append(f.msgs, m)
			writeJSON(w, 200, map[string]any{"ok": true, "message_ts": m.TS})
			return
		}
		f.msgs = append(f.msgs, m)
		writeJSON(w, 200, map[string]any{"ok": true, "channel": ch, "ts": m.TS, "message": map[string]any{"text": m.Text, "ts": m.TS}})
	case "chat.update":
		for _, m := range f.msgs {
			if m.Channel == ch && m.TS == r.Form.Get("ts") {
				m.Text, m.Blocks = r.Form.Get("text"), r.Form.Get("blocks")
				m.Edits++
				writeJSON(w, 200, map[string]any{"ok": true, "channel": ch, "ts": m.TS, "text": m.Text})
				return
			}
		}
		writeJSON(w, 200, map[string]any{"ok": false, "error": "message_not_found"})
	default:
		writeJSON(w, 200, map[string]any{"ok": false, "error": "unknown_method"})
	}
}

// Delete deletes the message with ts, as a person can: chat.update of it
// after is message_not_found.
func (f *Slack) Delete(ts string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = slices.DeleteFunc(f.msgs, func(m *SlackMessage) bool { return m.TS == ts })
}

// Messages returns copies of the messages posted so far, in order.
func (f *Slack) Messages() []SlackMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]SlackMessage, len(f.msgs))
	for i, m := range f.msgs {
		out[i] = *m
	}
	return out
}

// Calls returns the API methods called so far, failed calls included.
func (f *Slack) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// SignSlack sets the headers Slack signs a request with: X-Slack-Signature
// is "v0=" + hex HMAC-SHA256 of "v0:<timestamp>:<body>" under the signing
// secret.
func SignSlack(h http.Header, secret string, at time.Time, body []byte) {
	ts := strconv.FormatInt(at.Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "v0:%s:%s", ts, body)
	h.Set("X-Slack-Request-Timestamp", ts)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(m.Sum(nil)))
}

// SlackEvent is the Events API envelope of an event_callback, as Slack
// posts it to the events URL.
func SlackEvent(team, eventID string, event map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{
		"token": "verification-token", "team_id": team, "api_app_id": "A1", "type": "event_callback",
		"event_id": eventID, "event_time": time.Now().Unix(), "event": event,
		"authorizations": []map[string]any{{"team_id": team, "user_id": "UBOT", "is_bot": true}},
	})
	return b
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
