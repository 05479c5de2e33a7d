package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/store"
	_ "github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/store/memstore"
	_ "github.com/spool-go/spool/store/pgstore"
	"github.com/spool-go/spool/store/redisstore"
	_ "github.com/spool-go/spool/store/sqlitestore"
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

// take reads the first k events after the session event (fewer when
// the stream ends first) and drops the connection.
func (ls *liveStream) take(k int) []sseEvent {
	ls.next() // the session event
	var first []sseEvent
	for range k {
		ev, ok := ls.next()
		if !ok {
			break
		}
		first = append(first, ev)
	}
	ls.drop()
	return first
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
	if r.status != 429 || r.errCode(t) != server.CodeQueueFull || r.retryAfter(t) != 1 {
		t.Fatalf("over the queue bound: %d %v %s", r.status, r.header, r.body)
	}
	if r := e.post("/chat", map[string]any{"sessionId": "other", "text": "fine"}); r.status != 200 {
		t.Fatalf("another session: %d %s", r.status, r.body)
	}
}

// texts of a stream's text events, and their ids.
func streamText(t *testing.T, evs []sseEvent) (string, []string) {
	t.Helper()
	var b strings.Builder
	var ids []string
	for _, ev := range evs {
		if ev.id != "" {
			ids = append(ids, ev.id)
		}
		if ev.name != "text" {
			continue
		}
		var e spool.Event
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
			t.Fatal(err)
		}
		b.WriteString(e.Text)
	}
	return b.String(), ids
}

// A client that loses its /chat stream after k events reconnects with
// Last-Event-ID (or ?after=) to GET /v1/sessions/{id}/events and gets
// exactly the rest: the text of both parts is the stored answer, no gap
// and no repeated event, for several k, before and after the turn ended.
func TestResumeWithLastEventID(t *testing.T) {
	e := newEnv(t, spool.Config{Model: slowModel()}, server.Options{})
	prompt := strings.Repeat("word ", 20)
	for _, k := range []int{1, 2, 5, 12, 30} {
		for _, how := range []string{"header", "query", "after-end"} {
			id := fmt.Sprintf("r-%d-%s", k, how)
			ls := e.open("POST", "/chat", map[string]any{"sessionId": id, "text": prompt})
			first := ls.take(k)
			last := first[len(first)-1].id
			path, hdr := "/v1/sessions/"+id+"/events", []string{"Last-Event-ID", last}
			switch how {
			case "query":
				path, hdr = path+"?after="+last, nil
			case "after-end":
				e.waitEnded("", id)
			}
			var rest []sseEvent
			if first[len(first)-1].name != "turn_end" {
				rest = e.open("GET", path, nil, hdr...).until("turn_end")
			}
			text, ids := streamText(t, append(first, rest...))
			entries := e.waitEnded("", id)
			if want := lastAnswer(t, entries); text != want || turnEnds(entries)[0] != transcript.StatusOK {
				t.Fatalf("k=%d %s: got %q, stored %q", k, how, text, want)
			}
			for i := 1; i < len(ids); i++ {
				a, _ := spool.ParseEventID(ids[i-1])
				b, err := spool.ParseEventID(ids[i])
				if err != nil || !a.Before(b) || b.N != a.N+1 {
					t.Fatalf("k=%d %s: id %s after %s", k, how, ids[i], ids[i-1])
				}
			}
		}
	}
}

// GET /v1/sessions/{id}/events?follow=1 is a live session: it stays open
// and streams every turn as it runs, whoever starts it.
func TestEventsFollow(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	e.post("/invoke", map[string]any{"prompt": "first", "sessionId": "live"})
	ls := e.open("GET", "/v1/sessions/live/events?follow=1", nil)
	if ls.res.StatusCode != 200 {
		t.Fatalf("follow: %d", ls.res.StatusCode)
	}
	for _, p := range []string{"second", "third"} {
		var res spool.Result
		e.post("/invoke", map[string]any{"prompt": p, "sessionId": "live"}).json(t, &res)
		text, _ := streamText(t, ls.until("turn_end"))
		if text != res.Text {
			t.Fatalf("the follower saw %q; the turn answered %q", text, res.Text)
		}
	}
	// Without follow, and nothing running, the stream is empty.
	if evs := e.open("GET", "/v1/sessions/live/events", nil); evs != nil {
		if ev, ok := evs.next(); ok {
			t.Fatalf("an idle session streamed %v", ev)
		}
	}
}

// Bad input is a clear 4xx that leaks nothing: a malformed
// Last-Event-ID, one past the session, another user's session, a deleted
// session, a bad follow.
func TestEventsBadInput(t *testing.T) {
	e := newEnv(t, spool.Config{Scope: spool.ScopeUser}, server.Options{Keys: testKeys(t)})
	alice := []string{"Authorization", "Bearer " + aliceKey}
	bob := []string{"Authorization", "Bearer " + bobKey}
	e.post("/invoke", map[string]any{"prompt": "mine", "sessionId": "a"}, alice...)
	e.post("/invoke", map[string]any{"prompt": "gone", "sessionId": "d"}, alice...)
	e.do(req{method: "DELETE", path: "/v1/sessions/d", header: map[string]string{alice[0]: alice[1]}})
	for _, c := range []struct {
		path, lastID string
		who          []string
		status       int
		code         string
	}{
		{"/v1/sessions/a/events", "nonsense", alice, 400, server.CodeBadEventID},
		{"/v1/sessions/a/events", "1.-2", alice, 400, server.CodeBadEventID},
		{"/v1/sessions/a/events", "99999.1", alice, 400, server.CodeBadEventID},
		{"/v1/sessions/a/events?after=x.y", "", alice, 400, server.CodeBadEventID},
		{"/v1/sessions/a/events?follow=maybe", "", alice, 400, server.CodeBadRequest},
		{"/v1/sessions/a/events", "0.1", bob, 404, server.CodeSessionNotFound},
		{"/v1/sessions/d/events", "0.1", alice, 404, server.CodeSessionNotFound},
	} {
		h := map[string]string{c.who[0]: c.who[1]}
		if c.lastID != "" {
			h["Last-Event-ID"] = c.lastID
		}
		r := e.do(req{method: "GET", path: c.path, header: h})
		if r.status != c.status || r.errCode(t) != c.code || strings.Contains(string(r.body), "mine") {
			t.Fatalf("%s with %q: %d %s", c.path, c.lastID, r.status, r.body)
		}
	}
	// The AI SDK's resume route: nothing running is 204, for any id.
	for _, id := range []string{"a", "never-was", "d"} {
		if r := e.do(req{method: "GET", path: "/api/chat/" + id + "/stream", header: map[string]string{bob[0]: bob[1]}}); r.status != 204 {
			t.Fatalf("resume of %s: %d %s", id, r.status, r.body)
		}
	}
}

// The real AI SDK client resumes: AbstractChat and DefaultChatTransport
// start a slow turn, drop the connection (chat.stop()), and a new chat,
// as a page reload makes it, calls resumeStream (what useChat({resume:
// true}) does): its assistant message is the stored answer exactly.
func TestAIChatResumeRealClient(t *testing.T) {
	e := newEnv(t, spool.Config{Model: echo.New(echo.WithDelay(15 * time.Millisecond))}, server.Options{})
	out := runAIClient(t, "resume.mjs", e.http.URL+"/api/chat")
	var got struct {
		Idle     string
		Dropped  string
		Errors   []string
		Messages []struct {
			ID    string
			Role  string
			Parts []struct{ Type, Text string }
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	entries := e.waitEnded("", "resume-chat")
	want := lastAnswer(t, entries)
	if len(got.Messages) != 2 || got.Messages[1].Role != "assistant" {
		t.Fatalf("messages after resume: %s", out)
	}
	var text string
	for _, p := range got.Messages[1].Parts {
		if p.Type == "text" {
			text += p.Text
		}
	}
	if text != want || len(got.Errors) > 0 || got.Idle != "ready" {
		t.Fatalf("resumed %q (errors %v, idle resume %s); stored %q", text, got.Errors, got.Idle, want)
	}
	if got.Dropped == "" || got.Dropped == want {
		t.Fatalf("the dropped stream had %q: not part-way", got.Dropped)
	}
	if ends := turnEnds(entries); len(ends) != 1 || ends[0] != transcript.StatusOK {
		t.Fatalf("turn ends %v", ends)
	}
}

// The real AI SDK client resumes a run that a person's answer to an
// approval began (allowed, and denied): the replay carries the call the
// turn's earlier run streamed, then the rest; before, the client failed
// on a result for a call it had never been sent. The resumed message is
// the stored one, as GET /api/chat/{id} loads it, except the person's
// answer, for which the protocol has no chunk.
func TestAIChatResumeApprovalRealClient(t *testing.T) {
	e := newEnv(t, spool.Config{Model: echo.New(echo.WithDelay(15 * time.Millisecond))}, server.Options{})
	out := runAIClient(t, "resumeapproval.mjs", e.http.URL+"/api/chat")
	type chat struct {
		Dropped  string
		Status   string
		Messages []uiMsg
	}
	var got struct {
		Errors          []string
		Allowed, Denied chat
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Errors) > 0 {
		t.Fatalf("client errors %v", got.Errors)
	}
	for _, c := range []struct {
		id, state string
		chat      chat
	}{{"resume-allowed", "output-available", got.Allowed}, {"resume-denied", "output-denied", got.Denied}} {
		e.waitEnded("", c.id)
		var loaded struct{ Messages []uiMsg }
		e.do(req{method: "GET", path: "/api/chat/" + c.id}).json(t, &loaded)
		for _, m := range loaded.Messages {
			for _, p := range m.Parts {
				if a, ok := p["approval"].(map[string]any); ok {
					delete(a, "approved")
					delete(a, "reason")
				}
			}
		}
		shown := c.chat.Messages
		if c.chat.Status != "ready" || len(shown) != 2 {
			t.Fatalf("%s: status %s, messages %s", c.id, c.chat.Status, dump(shown))
		}
		if c.chat.Dropped == "" || c.chat.Dropped == shown[1].text() {
			t.Fatalf("%s: the dropped stream had %q: not part-way", c.id, c.chat.Dropped)
		}
		var state any
		for _, p := range shown[1].Parts {
			if p["type"] == "tool-save_note" {
				state = p["state"]
			}
		}
		if state != c.state {
			t.Fatalf("%s: the call is %v after the resume, want %s: %s", c.id, state, c.state, dump(shown[1]))
		}
		sameMessages(t, c.id, shown, loaded.Messages)
	}
}

// TestREADMEResumeCurl runs the README's Last-Event-ID curl line, as a
// person pastes it with the id of the last event they had, against a
// turn that runs on after its client went away: curl gets the rest.
func TestREADMEResumeCurl(t *testing.T) {
	curl, line := readmeFrom(t, "curl -N localhost:8080/v1/sessions/demo/events -H \"$AUTH\" -H 'Last-Event-ID: ", "\n")
	e := newEnv(t, spool.Config{Model: slowModel()}, server.Options{Keys: testKeys(t)})
	e.key = projectKey
	ls := e.open("POST", "/chat", map[string]any{"sessionId": "demo", "text": strings.Repeat("word ", 15)})
	first := []sseEvent{}
	for range 4 {
		ev, _ := ls.next()
		first = append(first, ev)
	}
	ls.drop()
	line = strings.ReplaceAll(line, "localhost:8080", strings.TrimPrefix(e.http.URL, "http://"))
	line = strings.Replace(line, "12.3", first[len(first)-1].id, 1)
	cmd := exec.Command("bash", "-c", strings.Replace(line, "curl", curl, 1))
	cmd.Env = append(os.Environ(), "AUTH=Authorization: Bearer "+projectKey)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	rest, _ := readSSE(t, strings.NewReader(string(out)))
	text, _ := streamText(t, append(first, rest...))
	if want := lastAnswer(t, e.waitEnded("", "demo")); text != want {
		t.Fatalf("the README's curl completed %q; stored %q", text, want)
	}
}

// replicaStores gives, for each store with notifications, two handles
// on one store, as two replicas (two processes) have them: the memory
// store's one value (its hub), two Postgres stores on one schema
// (LISTEN/NOTIFY), two Redis stores on one prefix (pub/sub).
func replicaStores() map[string]func(t *testing.T) (store.Store, store.Store) {
	return map[string]func(t *testing.T) (store.Store, store.Store){
		"memory": func(t *testing.T) (store.Store, store.Store) {
			st := memstore.New()
			return st, st
		},
		"postgres": func(t *testing.T) (store.Store, store.Store) {
			return twice(t, teststores.PostgresURL(t))
		},
		"redis": func(t *testing.T) (store.Store, store.Store) {
			return twice(t, teststores.RedisURL(t))
		},
		"redis-cluster": redisClusterTwice,
		// Two processes' stores on one folder or one SQLite file: on Unix
		// they carry notifications through sockets in the store's folder
		// (store/internal/sockbus); elsewhere they have none.
		"file": func(t *testing.T) (store.Store, store.Store) {
			localNotifier(t)
			return twice(t, "file:"+filepath.Join(t.TempDir(), "sessions"))
		},
		"sqlite": func(t *testing.T) (store.Store, store.Store) {
			localNotifier(t)
			return twice(t, "sqlite:"+filepath.Join(t.TempDir(), "spool.db"))
		},
	}
}

// localNotifier skips a test of the file or SQLite store's notifications
// where it has none.
func localNotifier(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" {
		t.Skip("the file and SQLite stores carry notifications between processes on Unix only")
	}
}

// redisClusterTwice is two stores on the Redis Cluster whose nodes
// SPOOL_TEST_REDIS_CLUSTER lists (host:port,…), with one key prefix of
// their own, removed from every primary at the end; skipped without the
// variable.
func redisClusterTwice(t *testing.T) (store.Store, store.Store) {
	addrs := os.Getenv("SPOOL_TEST_REDIS_CLUSTER")
	if addrs == "" {
		t.Skip("SPOOL_TEST_REDIS_CLUSTER is not set")
	}
	prefix := teststores.Name("spooltest")
	var out [2]store.Store
	for i := range out {
		client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
		st, err := redisstore.New(context.Background(), client, redisstore.WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			store.Close(st)
			if i == 0 {
				_ = client.ForEachMaster(context.Background(), func(ctx context.Context, node *redis.Client) error {
					iter := node.Scan(ctx, 0, "{"+prefix+":*", 1000).Iterator()
					for iter.Next(ctx) {
						node.Unlink(ctx, iter.Val())
					}
					return iter.Err()
				})
			}
			client.Close()
		})
		out[i] = st
	}
	return out[0], out[1]
}

// twice opens the store at u two times.
func twice(t *testing.T, u string) (store.Store, store.Store) {
	t.Helper()
	var out [2]store.Store
	for i := range out {
		st, err := store.Open(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close(st) })
		out[i] = st
	}
	return out[0], out[1]
}

// Two replicas sharing a store with notifications, on each such store: a
// client that drops its /chat stream on one after k events, for several
// k, reconnects with Last-Event-ID to the same replica or to the other
// and gets exactly the rest (the text of both parts is the stored
// answer, the ids contiguous); the other replica stops the turn, follows
// the session live, and answers the AI SDK's resume.
func TestResumeOnOtherReplica(t *testing.T) {
	for name, stores := range replicaStores() {
		t.Run(name, func(t *testing.T) { testResumeOnOtherReplica(t, stores) })
	}
}

func testResumeOnOtherReplica(t *testing.T, stores func(t *testing.T) (store.Store, store.Store)) {
	st1, st2 := stores(t)
	one := newEnv(t, spool.Config{Model: slowModel(), Store: st1}, server.Options{})
	two := newEnv(t, spool.Config{Model: slowModel(), Store: st2}, server.Options{})
	prompt := strings.Repeat("word ", 20)
	for _, k := range []int{1, 3, 10, 21, 40} {
		for _, to := range []struct {
			name string
			e    *env
		}{{"same", one}, {"other", two}} {
			id := fmt.Sprintf("x-%d-%s", k, to.name)
			ls := one.open("POST", "/chat", map[string]any{"sessionId": id, "text": prompt})
			first := ls.take(k)
			var rest []sseEvent
			if first[len(first)-1].name != "turn_end" {
				rest = to.e.open("GET", "/v1/sessions/"+id+"/events", nil, "Last-Event-ID", first[len(first)-1].id).until("turn_end")
			}
			text, ids := streamText(t, append(first, rest...))
			if want := lastAnswer(t, one.waitEnded("", id)); text != want {
				t.Fatalf("k=%d %s: got %q, stored %q", k, to.name, text, want)
			}
			for i := 1; i < len(ids); i++ {
				a, _ := spool.ParseEventID(ids[i-1])
				b, _ := spool.ParseEventID(ids[i])
				if b.Pos != a.Pos || b.N != a.N+1 {
					t.Fatalf("k=%d %s: id %s after %s", k, to.name, ids[i], ids[i-1])
				}
			}
		}
	}
	// The AI SDK's resume, on the replica that does not run the turn.
	ls := one.open("POST", "/chat", map[string]any{"sessionId": "ai", "text": prompt})
	ls.until("text")
	hr := two.newRequest(context.Background(), req{method: "GET", path: "/api/chat/ai/stream"})
	res, err := two.http.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	chunks, _ := readSSE(t, res.Body)
	res.Body.Close()
	var text strings.Builder
	for _, c := range chunks {
		var ch struct{ Type, Delta string }
		json.Unmarshal([]byte(c.data), &ch)
		if ch.Type == "text-delta" {
			text.WriteString(ch.Delta)
		}
	}
	if want := lastAnswer(t, one.waitEnded("", "ai")); res.StatusCode != 200 || text.String() != want {
		t.Fatalf("resume on the other replica: %d %q, stored %q", res.StatusCode, text.String(), want)
	}
	// Follow on one replica, turns on the other.
	f := two.open("GET", "/v1/sessions/ai/events?follow=1", nil)
	var r spool.Result
	one.post("/invoke", map[string]any{"prompt": "followed", "sessionId": "ai"}).json(t, &r)
	if got, _ := streamText(t, f.until("turn_end")); got != r.Text {
		t.Fatalf("following the other replica: %q, answered %q", got, r.Text)
	}
	// Stop on the other replica; with nothing running anywhere it is 404
	// not_running there too.
	ls = one.open("POST", "/chat", map[string]any{"sessionId": "stop", "text": strings.Repeat("word ", 300)})
	ls.until("text")
	if r := two.post("/v1/sessions/stop/stop", nil); r.status != 200 {
		t.Fatalf("stop on the other replica: %d %s", r.status, r.body)
	}
	if ends := turnEnds(one.waitEnded("", "stop")); ends[0] != transcript.StatusCancelled {
		t.Fatalf("turn ends %v", ends)
	}
	if r := two.post("/v1/sessions/stop/stop", nil); r.status != 404 || r.errCode(t) != server.CodeNotRunning {
		t.Fatalf("stop with nothing running anywhere: %d %s", r.status, r.body)
	}
}

// Resuming a turn that calls a tool streams the call and ends the stream
// as the protocol says (the resume route's writer had no map for the
// calls it streamed, and the first tool call stopped it; found in review).
func TestAIChatResumeToolCall(t *testing.T) {
	e := newEnv(t, spool.Config{Model: slowModel()}, server.Options{})
	live := e.open("POST", "/api/chat", map[string]any{"id": "rt", "messages": []any{userMsg("u1", "/call get_time {}")}})
	for ev, ok := live.next(); ok; ev, ok = live.next() {
		if strings.Contains(ev.data, `"tool-input-available"`) {
			break
		}
	}
	resumed := e.open("GET", "/api/chat/rt/stream", nil)
	var replay []string
	for ev, ok := resumed.next(); ok; ev, ok = resumed.next() {
		replay = append(replay, ev.data)
	}
	if len(replay) == 0 || replay[len(replay)-1] != "[DONE]" {
		t.Fatalf("the resumed stream broke off (%d chunks): %v\nlog:\n%s", len(replay), replay, e.logs.String())
	}
	checkChunks(t, replay)
}

// A session followed by as many clients as it allows refuses the next
// with 429 too_many_watchers, which says how long to wait in its body as
// in Retry-After.
func TestEventsTooManyWatchers(t *testing.T) {
	e := newEnv(t, spool.Config{MaxSessionWatchers: 1}, server.Options{})
	e.post("/invoke", map[string]any{"prompt": "first", "sessionId": "busy"})
	if ls := e.open("GET", "/v1/sessions/busy/events?follow=1", nil); ls.res.StatusCode != 200 {
		t.Fatalf("the first follower: %d", ls.res.StatusCode)
	}
	r := e.get("/v1/sessions/busy/events?follow=1", "Accept", "text/event-stream")
	if r.status != 429 || r.errCode(t) != server.CodeTooManyWatchers || r.retryAfter(t) != 5 {
		t.Fatalf("the second follower: %d %v %s", r.status, r.header, r.body)
	}
}
