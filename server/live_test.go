package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/transcript"
)

// liveStream is an event stream read as it comes, over a real
// connection the test can drop.
type liveStream struct {
	t      *testing.T
	res    *http.Response
	sc     *bufio.Scanner
	cancel context.CancelFunc
}

// open starts a request whose answer is an event stream.
func (e *env) open(method, path string, body any, header ...string) *liveStream {
	e.t.Helper()
	h := map[string]string{"Accept": "text/event-stream"}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	ctx, cancel := context.WithCancel(context.Background())
	res, err := e.http.Client().Do(e.newRequest(ctx, req{method: method, path: path, body: body, header: h}))
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	ls := &liveStream{t: e.t, res: res, sc: sc, cancel: cancel}
	e.t.Cleanup(ls.drop)
	return ls
}

// next returns the stream's next event; ok is false at its end.
func (ls *liveStream) next() (ev sseEvent, ok bool) {
	var data []string
	for ls.sc.Scan() {
		line := ls.sc.Text()
		switch {
		case line == "":
			if ev.name != "" || data != nil {
				ev.data = strings.Join(data, "\n")
				return ev, true
			}
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
	return ev, false
}

// until reads events up to the first named name, returning them all.
func (ls *liveStream) until(name string) []sseEvent {
	ls.t.Helper()
	var out []sseEvent
	for {
		ev, ok := ls.next()
		if !ok {
			ls.t.Fatalf("the stream ended before a %q event (had %v)", name, out)
		}
		out = append(out, ev)
		if ev.name == name {
			return out
		}
	}
}

// drop closes the connection, as a client that goes away does.
func (ls *liveStream) drop() {
	ls.cancel()
	ls.res.Body.Close()
}

// slowModel streams word by word, 20ms apart: a turn long enough to drop
// a connection in and to stop.
func slowModel() *echo.Model { return echo.New(echo.WithDelay(20 * time.Millisecond)) }

// A client that goes away does not stop its turn (the default,
// --on-disconnect continue): the turn runs to its end and the whole
// answer is stored.
func TestDisconnectIsNotStop(t *testing.T) {
	e := newEnv(t, spool.Config{Model: slowModel()}, server.Options{})
	prompt := strings.Repeat("word ", 30)
	for _, c := range []struct {
		name, path string
		body       any
	}{
		{"chat", "/chat", map[string]any{"sessionId": "chat", "text": prompt}},
		{"aichat", "/api/chat", aiBody("aichat", prompt)},
	} {
		t.Run(c.name, func(t *testing.T) {
			ls := e.open("POST", c.path, c.body)
			ls.next()
			ls.next()
			ls.drop()
			entries := e.waitEnded("", c.name)
			if got := turnEnds(entries); len(got) != 1 || got[0] != transcript.StatusOK {
				t.Fatalf("turn ends %v, want [ok]", got)
			}
			if got := lastAnswer(t, entries); got != "echo: "+prompt {
				t.Fatalf("stored answer %q", got)
			}
		})
	}
}

// aiBody is an AI SDK request asking text in chat id.
func aiBody(id, text string) map[string]any {
	return map[string]any{"id": id, "messages": []map[string]any{{"id": "u1", "role": "user", "parts": []map[string]any{{"type": "text", "text": text}}}}}
}

// lastAnswer is the text of the transcript's last assistant message.
func lastAnswer(t *testing.T, entries []transcript.Entry) string {
	t.Helper()
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Type == transcript.TypeAssistantMessage {
			var m transcript.AssistantMessage
			if err := json.Unmarshal(entries[i].Data, &m); err != nil {
				t.Fatal(err)
			}
			return m.Text
		}
	}
	return ""
}

// POST /v1/sessions/{id}/stop ends the running turn, whoever started it
// and however (a /chat stream, a regenerate), recorded cancelled; with
// nothing running it is 404 not_running; another user's session is 404
// like any session of theirs.
func TestStopRoute(t *testing.T) {
	e := newEnv(t, spool.Config{Model: slowModel(), Scope: spool.ScopeUser}, server.Options{Keys: testKeys(t)})
	alice := []string{"Authorization", "Bearer " + aliceKey}
	bob := []string{"Authorization", "Bearer " + bobKey}
	long := strings.Repeat("word ", 200)
	if r := e.post("/v1/sessions/s/stop", nil, alice...); r.status != 404 || r.errCode(t) != server.CodeSessionNotFound {
		t.Fatalf("stop of no session: %d %s", r.status, r.body)
	}
	for i, start := range []func() *liveStream{
		func() *liveStream {
			return e.open("POST", "/chat", map[string]any{"sessionId": "s", "text": long}, alice...)
		},
		func() *liveStream { return e.open("POST", "/v1/sessions/s/regenerate", nil, alice...) },
	} {
		ls := start()
		ls.until("text")
		if r := e.post("/v1/sessions/s/stop", nil, bob...); r.status != 404 || r.errCode(t) != server.CodeSessionNotFound {
			t.Fatalf("bob stopping alice's turn: %d %s", r.status, r.body)
		}
		r := e.post("/v1/sessions/s/stop", nil, alice...)
		var got struct{ SessionID, TurnID string }
		r.json(t, &got)
		if r.status != 200 || got.SessionID != "s" || got.TurnID == "" {
			t.Fatalf("stop %d: %d %s", i, r.status, r.body)
		}
		// The stream that started it ends with the turn, cancelled.
		end := ls.until("turn_end")
		var ev spool.Event
		if err := json.Unmarshal([]byte(end[len(end)-1].data), &ev); err != nil || ev.Result.Status != transcript.StatusCancelled || ev.TurnID != got.TurnID {
			t.Fatalf("stop %d: the stream ended %s", i, end[len(end)-1].data)
		}
		entries := e.waitEnded("alice", "s")
		if ends := turnEnds(entries); ends[len(ends)-1] != transcript.StatusCancelled {
			t.Fatalf("stop %d: turn ends %v", i, ends)
		}
		if r := e.post("/v1/sessions/s/stop", nil, alice...); r.status != 404 || r.errCode(t) != server.CodeNotRunning {
			t.Fatalf("stop with nothing running: %d %s", r.status, r.body)
		}
	}
}

// Every event of a turn stream has an SSE id, the event's own id, in
// order; the stream opens with a retry hint.
func TestEventIDs(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	var last spool.EventID
	for range 2 {
		_, events, _ := e.stream("/chat", map[string]any{"sessionId": "ids", "text": "one two"})
		for _, ev := range events[1:] { // the session event has none
			id, err := spool.ParseEventID(ev.id)
			if err != nil || !last.Before(id) {
				t.Fatalf("event %s has id %q after %s (%v)", ev.name, ev.id, last, err)
			}
			var data spool.Event
			if err := json.Unmarshal([]byte(ev.data), &data); err != nil || data.ID != ev.id {
				t.Fatalf("event %q carries id %q", ev.id, data.ID)
			}
			last = id
		}
	}
}

// A /chat session takes at most MaxQueue waiting requests; more are 429
// queue_full with Retry-After.
func TestChatQueueBound(t *testing.T) {
	e := newEnv(t, spool.Config{Model: slowModel()}, server.Options{MaxQueue: 1})
	ls := e.open("POST", "/chat", map[string]any{"sessionId": "q", "text": strings.Repeat("word ", 50)})
	ls.until("text")
	r := e.post("/chat", map[string]any{"sessionId": "q", "text": "more"})
	if r.status != 429 || r.errCode(t) != server.CodeQueueFull || r.header.Get("Retry-After") == "" {
		t.Fatalf("over the queue bound: %d %v %s", r.status, r.header, r.body)
	}
	if r := e.post("/chat", map[string]any{"sessionId": "other", "text": "fine"}); r.status != 200 {
		t.Fatalf("another session: %d %s", r.status, r.body)
	}
}
