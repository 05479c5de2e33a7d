//lint:file-ignore ST1005 the fake answers with Telegram's own error descriptions, capitals and all

package chatfake

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"
)

// Telegram is a fake of the Bot API: POST /bot<token>/<method> for
// sendMessage, editMessageText and answerCallbackQuery, taking JSON,
// form or multipart parameters (objects as JSON strings), answering
// {"ok":true,"result":…} or {"ok":false,"error_code":…,"description":…}.
// It is strict where Telegram is: a text over 4096 UTF-16 units, HTML
// the parse mode cannot parse, and an edit that changes nothing are 400.
// A 429 says {"parameters":{"retry_after":1}}.
type Telegram struct {
	faults
	// URL is the server, for the driver's APIURL.
	URL   string
	token string

	mu      sync.Mutex
	seq     int
	msgs    []*TelegramMessage
	answers []TelegramAnswer
	calls   []string
	refuse  string
}

// Refuse makes every sendMessage and editMessageText whose text contains
// s answer 400, however often the driver tries: a refusal of one text,
// whatever the timing of the calls that carry it.
func (f *Telegram) Refuse(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse = s
}

// TelegramMessage is a message the bot sent.
type TelegramMessage struct {
	ChatID    int64
	ID        int
	ThreadID  int
	ReplyTo   int
	Text      string // as sent, HTML
	Keyboard  [][]struct{ Text, Data string }
	Edits     int
	ParseMode string
}

// TelegramAnswer is an answerCallbackQuery call.
type TelegramAnswer struct{ ID, Text string }

// NewTelegram starts a fake for the bot token; the test's end stops it.
func NewTelegram(t testing.TB, token string) *Telegram {
	f := &Telegram{token: token, seq: 100}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

func tgError(w http.ResponseWriter, code int, desc string) {
	body := map[string]any{"ok": false, "error_code": code, "description": desc}
	if code == http.StatusTooManyRequests {
		body["parameters"] = map[string]any{"retry_after": retryAfter}
	}
	writeJSON(w, code, body)
}

// params reads a call's parameters as strings, whatever the encoding.
func params(r *http.Request) (map[string]string, error) {
	out := map[string]string{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		var m map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			return nil, err
		}
		for k, v := range m {
			var s string
			if json.Unmarshal(v, &s) == nil {
				out[k] = s
			} else {
				out[k] = string(v)
			}
		}
		return out, nil
	case "multipart/form-data":
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			return nil, err
		}
	default:
		if err := r.ParseForm(); err != nil {
			return nil, err
		}
	}
	for k, v := range r.Form {
		out[k] = v[0]
	}
	return out, nil
}

var tgTag = regexp.MustCompile(`<(/?)([a-z-]+)[^>]*>`)

// CheckTelegramHTML checks text as Telegram's HTML parse mode does:
// known tags, balanced, and no stray < or unknown entity.
func CheckTelegramHTML(text string) error {
	allowed := map[string]bool{"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true, "strike": true,
		"del": true, "a": true, "code": true, "pre": true, "blockquote": true, "tg-spoiler": true, "span": true}
	var stack []string
	rest := text
	for {
		loc := tgTag.FindStringSubmatchIndex(rest)
		plain := rest
		if loc != nil {
			plain = rest[:loc[0]]
		}
		if strings.ContainsAny(plain, "<>") {
			return fmt.Errorf("Unsupported start tag")
		}
		for _, ent := range regexp.MustCompile(`&[^;\s]*;?`).FindAllString(plain, -1) {
			if ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" {
				return fmt.Errorf("unknown entity %q", ent)
			}
		}
		if loc == nil {
			break
		}
		closing, name := rest[loc[2]:loc[3]] == "/", rest[loc[4]:loc[5]]
		if !allowed[name] {
			return fmt.Errorf("Unsupported start tag %q", name)
		}
		if closing {
			if len(stack) == 0 || stack[len(stack)-1] != name {
				return fmt.Errorf("Can't find end tag corresponding to start tag")
			}
			stack = stack[:len(stack)-1]
		} else {
			stack = append(stack, name)
		}
		rest = rest[loc[1]:]
	}
	if len(stack) > 0 {
		return fmt.Errorf("Can't find end tag corresponding to start tag %q", stack[len(stack)-1])
	}
	return nil
}

func (f *Telegram) serve(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/bot")
	tok, method, _ := strings.Cut(path, "/")
	f.mu.Lock()
	f.calls = append(f.calls, method)
	f.mu.Unlock()
	if tok != f.token {
		tgError(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	if s := f.take(); s != 0 {
		tgError(w, s, http.StatusText(s))
		return
	}
	p, err := params(r)
	if err != nil {
		tgError(w, 400, "Bad Request: invalid parameters")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch method {
	case "sendMessage", "editMessageText":
		text := p["text"]
		if text == "" {
			tgError(w, 400, "Bad Request: message text is empty")
			return
		}
		if f.refuse != "" && strings.Contains(text, f.refuse) {
			tgError(w, 400, "Bad Request: refused")
			return
		}
		if n := len(utf16.Encode([]rune(text))); n > 4096 {
			tgError(w, 400, "Bad Request: message is too long")
			return
		}
		if p["parse_mode"] == "HTML" {
			if err := CheckTelegramHTML(text); err != nil {
				tgError(w, 400, "Bad Request: can't parse entities: "+err.Error())
				return
			}
		}
		chat, _ := strconv.ParseInt(p["chat_id"], 10, 64)
		var kb struct {
			InlineKeyboard [][]struct {
				Text         string `json:"text"`
				CallbackData string `json:"callback_data"`
			} `json:"inline_keyboard"`
		}
		json.Unmarshal([]byte(p["reply_markup"]), &kb)
		var keyboard [][]struct{ Text, Data string }
		for _, row := range kb.InlineKeyboard {
			var out []struct{ Text, Data string }
			for _, b := range row {
				if len(b.CallbackData) > 64 {
					tgError(w, 400, "Bad Request: BUTTON_DATA_INVALID")
					return
				}
				out = append(out, struct{ Text, Data string }{b.Text, b.CallbackData})
			}
			keyboard = append(keyboard, out)
		}
		if method == "sendMessage" {
			var rp struct {
				MessageID int `json:"message_id"`
			}
			json.Unmarshal([]byte(p["reply_parameters"]), &rp)
			thread, _ := strconv.Atoi(p["message_thread_id"])
			f.seq++
			m := &TelegramMessage{ChatID: chat, ID: f.seq, ThreadID: thread, ReplyTo: rp.MessageID, Text: text, Keyboard: keyboard, ParseMode: p["parse_mode"]}
			f.msgs = append(f.msgs, m)
			writeJSON(w, 200, map[string]any{"ok": true, "result": tgMessage(m)})
			return
		}
		id, _ := strconv.Atoi(p["message_id"])
		for _, m := range f.msgs {
			if m.ChatID == chat && m.ID == id {
				if m.Text == text && len(keyboard) == len(m.Keyboard) {
					tgError(w, 400, "Bad Request: message is not modified")
					return
				}
				m.Text, m.Keyboard = text, keyboard
				m.Edits++
				writeJSON(w, 200, map[string]any{"ok": true, "result": tgMessage(m)})
				return
			}
		}
		tgError(w, 400, "Bad Request: message to edit not found")
	case "answerCallbackQuery":
		f.answers = append(f.answers, TelegramAnswer{ID: p["callback_query_id"], Text: p["text"]})
		writeJSON(w, 200, map[string]any{"ok": true, "result": true})
	default:
		tgError(w, 404, "Not Found")
	}
}

func tgMessage(m *TelegramMessage) map[string]any {
	return map[string]any{"message_id": m.ID, "date": 1800000000, "chat": map[string]any{"id": m.ChatID, "type": "private"},
		"from": map[string]any{"id": 1, "is_bot": true, "first_name": "bot"}, "text": m.Text}
}

// Delete deletes message id, as a person can in a private chat or as an
// admin: editMessageText of it after is 400 "Bad Request: message to
// edit not found".
func (f *Telegram) Delete(id int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = slices.DeleteFunc(f.msgs, func(m *TelegramMessage) bool { return m.ID == id })
}

// Messages returns copies of the messages sent so far, in order.
func (f *Telegram) Messages() []TelegramMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]TelegramMessage, len(f.msgs))
	for i, m := range f.msgs {
		out[i] = *m
	}
	return out
}

// Answers returns the callback queries answered so far.
func (f *Telegram) Answers() []TelegramAnswer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]TelegramAnswer(nil), f.answers...)
}

// Calls returns the methods called so far, failed calls included.
func (f *Telegram) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}
