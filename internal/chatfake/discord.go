package chatfake

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Discord is a fake of Discord's HTTP API for interactions: the original
// response and follow-ups of an interaction's webhook
// (/api/v10/webhooks/{application}/{token}…) and command registration
// (PUT /api/v10/applications/{application}/commands, with "Bot <token>").
// Errors are Discord's {"code","message"}: 404 10015 for an unknown
// interaction token, 404 10008 for an unknown message, 400 50035 for content over 2000
// characters, 401 for a wrong bot token; a 429 has Retry-After and
// {"retry_after":1,"global":false}. With Lag, an original response is
// made some time after the deferral, and an edit of it before then is
// 404 10008 (Unknown Message), as Discord answers an edit that arrives
// before it has read the deferral.
type Discord struct {
	faults
	// URL is the API's base URL, for the driver's APIURL.
	URL       string
	app, bot  string
	mu        sync.Mutex
	seq       int
	originals map[string]string // interaction token → its original message's id
	// made: when Discord has made an original that Deferred recorded;
	// before then an edit of it is 404 10008 (see Lag).
	made     map[string]time.Time
	lag      time.Duration
	msgs     []*DiscordMessage
	commands json.RawMessage
	calls    []string
}

// DiscordMessage is a message of an interaction's webhook.
type DiscordMessage struct {
	ID         string
	Token      string // the interaction it belongs to
	Content    string
	Components string // JSON
	Ephemeral  bool
	Edits      int
}

// NewDiscord starts a fake for application app and bot token bot; the
// test's end stops it.
func NewDiscord(t testing.TB, app, bot string) *Discord {
	f := &Discord{app: app, bot: bot, seq: 1000, originals: map[string]string{}, made: map[string]time.Time{}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL + "/api/v10"
	return f
}

// Deferred records that the interaction with token was answered with a
// deferred response: its original message exists, empty ("thinking…").
func (f *Discord) Deferred(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	m := &DiscordMessage{ID: strconv.Itoa(f.seq), Token: token}
	f.msgs = append(f.msgs, m)
	f.originals[token] = m.ID
	f.made[token] = time.Now().Add(f.lag)
}

// Lag makes the originals that Deferred records from now on exist only d
// later: until then, PATCH …/messages/@original is 404 {"code":10008,
// "message":"Unknown Message"}. Discord makes the deferred message once
// it has read the interaction's response, so an edit sent at once can
// arrive first.
func (f *Discord) Lag(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lag = d
}

// Pressed records a component interaction with token on message id: its
// original response is that message.
func (f *Discord) Pressed(token, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.originals[token] = id
}

func dError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg})
}

func (f *Discord) serve(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/api/v10")
	f.mu.Lock()
	f.calls = append(f.calls, r.Method+" "+path)
	f.mu.Unlock()
	if s := f.take(); s != 0 {
		if s == http.StatusTooManyRequests {
			setRetryAfter(w)
			w.Header().Set("X-RateLimit-Scope", "user")
			writeJSON(w, s, map[string]any{"message": "You are being rate limited.", "retry_after": float64(retryAfter), "global": false})
			return
		}
		w.WriteHeader(s)
		io.WriteString(w, "upstream connect error")
		return
	}
	body, _ := io.ReadAll(r.Body)
	parts := strings.Split(strings.Trim(path, "/"), "/")
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(parts) == 3 && parts[0] == "applications" && parts[2] == "commands" && r.Method == "PUT" {
		if parts[1] != f.app || r.Header.Get("Authorization") != "Bot "+f.bot {
			dError(w, 401, 0, "401: Unauthorized")
			return
		}
		f.commands = body
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
		return
	}
	if len(parts) < 3 || parts[0] != "webhooks" || parts[1] != f.app {
		dError(w, 404, 0, "404: Not Found")
		return
	}
	token := parts[2]
	orig, ok := f.originals[token]
	if !ok {
		dError(w, 404, 10015, "Unknown Webhook")
		return
	}
	var p struct {
		Content    *string          `json:"content"`
		Components *json.RawMessage `json:"components"`
		Flags      int              `json:"flags"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		dError(w, 400, 50109, "The request body contains invalid JSON.")
		return
	}
	if p.Content != nil && utf8.RuneCountInString(*p.Content) > 2000 {
		dError(w, 400, 50035, "Invalid Form Body")
		return
	}
	switch {
	case len(parts) == 3 && r.Method == "POST":
		f.seq++
		m := &DiscordMessage{ID: strconv.Itoa(f.seq), Token: token, Ephemeral: p.Flags&64 != 0}
		if p.Content != nil {
			m.Content = *p.Content
		}
		if p.Components != nil {
			m.Components = string(*p.Components)
		}
		f.msgs = append(f.msgs, m)
		writeJSON(w, 200, map[string]any{"id": m.ID, "content": m.Content, "timestamp": time.Now().Format(time.RFC3339)})
	case len(parts) == 5 && parts[3] == "messages" && r.Method == "PATCH":
		id := parts[4]
		if id == "@original" {
			if time.Now().Before(f.made[token]) {
				dError(w, 404, 10008, "Unknown Message")
				return
			}
			id = orig
		}
		for _, m := range f.msgs {
			if m.ID == id {
				if p.Content != nil {
					m.Content = *p.Content
				}
				if p.Components != nil {
					m.Components = string(*p.Components)
				}
				m.Edits++
				writeJSON(w, 200, map[string]any{"id": m.ID, "content": m.Content})
				return
			}
		}
		dError(w, 404, 10008, "Unknown Message")
	default:
		dError(w, 405, 0, "405: Method Not Allowed")
	}
}

// Delete deletes message id, as a person can any message in their
// channel: editing it after is 404 10008 (Unknown Message), also as
// @original.
func (f *Discord) Delete(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = slices.DeleteFunc(f.msgs, func(m *DiscordMessage) bool { return m.ID == id })
}

// Messages returns copies of the interaction messages so far, in order.
func (f *Discord) Messages() []DiscordMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]DiscordMessage, len(f.msgs))
	for i, m := range f.msgs {
		out[i] = *m
	}
	return out
}

// Commands returns the commands registered last, as JSON.
func (f *Discord) Commands() json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commands
}

// Calls returns "METHOD path" of every call so far.
func (f *Discord) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// SignDiscord sets the headers Discord signs an interaction with:
// X-Signature-Ed25519 is the hex Ed25519 signature of timestamp + body.
func SignDiscord(h http.Header, key ed25519.PrivateKey, at time.Time, body []byte) {
	ts := strconv.FormatInt(at.Unix(), 10)
	h.Set("X-Signature-Timestamp", ts)
	h.Set("X-Signature-Ed25519", hex.EncodeToString(ed25519.Sign(key, append([]byte(ts), body...))))
}
