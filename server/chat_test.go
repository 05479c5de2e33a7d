package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/transcript"
)

func TestChatJSON(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	r := e.post("/chat", map[string]any{"sessionId": "c1", "text": "hi"})
	var res spool.Result
	r.json(t, &res)
	if r.status != 200 || res.Text != "echo: hi" || res.SessionID != "c1" || res.Status != "ok" {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if r.header.Get(server.SessionHeader) != "c1" {
		t.Fatalf("session header %q", r.header.Get(server.SessionHeader))
	}
}

func TestChatMissingSessionIDIsAUUID(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	r := e.post("/chat", map[string]any{"text": "hi"})
	var res spool.Result
	r.json(t, &res)
	if _, err := uuid.Parse(res.SessionID); err != nil || r.header.Get(server.SessionHeader) != res.SessionID {
		t.Fatalf("session id %q (header %q): %v", res.SessionID, r.header.Get(server.SessionHeader), err)
	}
	r2, events, _ := e.stream("/chat", map[string]any{"text": "hi"})
	if r2.status != 200 || len(events) == 0 || events[0].name != "session" {
		t.Fatalf("status %d, events %v", r2.status, names(events))
	}
	var se struct{ SessionID string }
	json.Unmarshal([]byte(events[0].data), &se)
	if _, err := uuid.Parse(se.SessionID); err != nil || se.SessionID == res.SessionID || r2.header.Get(server.SessionHeader) != se.SessionID {
		t.Fatalf("stream session %q", se.SessionID)
	}
}

func TestChatBadRequests(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	for _, body := range []string{`{"text":" "}`, `{"sessionId":"x"}`} {
		if r := e.post("/chat", body); r.status != 400 || r.errCode(t) != server.CodeEmptyPrompt {
			t.Fatalf("%s: %d %s", body, r.status, r.body)
		}
	}
	if r := e.post("/chat", `{"text":`); r.status != 400 || r.errCode(t) != server.CodeBadRequest {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := e.post("/chat", `{"text":"a","sessionId":"a b"}`); r.status != 400 || r.errCode(t) != server.CodeInvalidSessionID {
		t.Fatalf("%d %s", r.status, r.body)
	}
	r := e.do(req{method: "POST", path: "/chat", body: `{"text":"a"}`, header: map[string]string{"Content-Type": "text/plain"}})
	if r.status != 400 || r.errCode(t) != server.CodeUnsupportedType {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestChatSSE(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	r, events, _ := e.stream("/chat", map[string]any{"sessionId": "sse", "text": "hello big world"})
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	want := []string{"session", "turn_start", "step_start", "text", "text", "text", "text", "step_end", "turn_end"}
	if got := names(events); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events %v, want %v", got, want)
	}
	var text strings.Builder
	for _, ev := range events[3:7] {
		var se spool.Event
		if err := json.Unmarshal([]byte(ev.data), &se); err != nil || se.Kind != spool.EventText {
			t.Fatalf("text event %q: %v", ev.data, err)
		}
		text.WriteString(se.Text)
	}
	if text.String() != "echo: hello big world" {
		t.Fatalf("text %q", text.String())
	}
	var end spool.Event
	json.Unmarshal([]byte(events[len(events)-1].data), &end)
	if end.Result == nil || end.Result.Status != "ok" || end.Result.Text != "echo: hello big world" {
		t.Fatalf("turn_end %s", events[len(events)-1].data)
	}
}

// Tool calls, results and approval requests stream as typed events, and
// the approval route resumes the turn as a stream too.
func TestChatSSEToolsAndApproval(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	_, events, _ := e.stream("/chat", map[string]any{"sessionId": "tools", "text": "/call get_time {}"})
	got := strings.Join(names(events), ",")
	if want := "session,turn_start,step_start,tool_call,step_end,tool_result,step_start,text,text,text,text,step_end,turn_end"; got != want {
		t.Fatalf("events %s\nwant   %s", got, want)
	}
	_, events, _ = e.stream("/chat", map[string]any{"sessionId": "tools", "text": `/call save_note {"text":"milk"}`})
	got = strings.Join(names(events), ",")
	if want := "session,turn_start,step_start,tool_call,step_end,approval_request,turn_end"; got != want {
		t.Fatalf("events %s\nwant   %s", got, want)
	}
	var ap spool.Event
	json.Unmarshal([]byte(events[5].data), &ap)
	if ap.Approval == nil || ap.Approval.Tool != "save_note" || string(ap.Approval.Arguments) != `{"text":"milk"}` {
		t.Fatalf("approval event %s", events[5].data)
	}
	_, events, _ = e.stream("/v1/sessions/tools/approvals/"+ap.Approval.ID, map[string]any{"decision": "allow"})
	got = strings.Join(names(events), ",")
	if want := "turn_start,tool_result,step_start,text,text,text,text,text,step_end,turn_end"; got != want {
		t.Fatalf("events %s\nwant   %s", got, want)
	}
	var end spool.Event
	json.Unmarshal([]byte(events[len(events)-1].data), &end)
	if end.Result.Text != "tool save_note returned: saved: milk" {
		t.Fatalf("turn_end %s", events[len(events)-1].data)
	}
}

func TestChatSSEKeepAlive(t *testing.T) {
	e := newEnv(t, spool.Config{Model: echo.New(echo.WithDelay(60 * time.Millisecond))}, server.Options{KeepAlive: 10 * time.Millisecond})
	_, events, comments := e.stream("/chat", map[string]any{"sessionId": "slow", "text": "a b"})
	if names(events)[len(events)-1] != "turn_end" {
		t.Fatalf("events %v", names(events))
	}
	if comments == 0 {
		t.Fatal("no keep-alive comment in a stream idle for 60ms at a time with a 10ms interval")
	}
}

func TestChatSSETurnError(t *testing.T) {
	e := newEnv(t, spool.Config{Model: echo.New(echo.WithError(&model.Error{Code: transcript.CodeProviderError, Message: "down"}))}, server.Options{})
	_, events, _ := e.stream("/chat", map[string]any{"sessionId": "err", "text": "hi"})
	var end spool.Event
	json.Unmarshal([]byte(events[len(events)-1].data), &end)
	if end.Kind != spool.EventTurnEnd || end.Result.Status != transcript.StatusError {
		t.Fatalf("events %v, last %s", names(events), events[len(events)-1].data)
	}
	// A turn that cannot run at all ends the stream with an error event.
	e.post("/invoke", map[string]any{"prompt": "x", "sessionId": "err2"})
	e2 := newEnv(t, spool.Config{}, server.Options{})
	e2.post("/invoke", map[string]any{"prompt": `/call save_note {"text":"x"}`, "sessionId": "p"})
	_, events, _ = e2.stream("/chat", map[string]any{"sessionId": "p", "text": "hi"})
	if got := names(events); len(got) != 2 || got[1] != "error" || !strings.Contains(events[1].data, server.CodeApprovalPending) {
		t.Fatalf("events %v %v", got, events)
	}
}

// Twenty concurrent posts on one session: each is answered with its own
// prompt's reply, and the turns are in the transcript in exactly the order
// the server accepted the requests (OnAccept reports that order, inside
// the step that queues the request).
func TestChatArrivalOrder(t *testing.T) {
	var mu sync.Mutex
	var accepted []string
	opts := server.Options{MaxQueue: 32, OnAccept: func(rid, sid string) {
		mu.Lock()
		accepted = append(accepted, rid)
		mu.Unlock()
	}}
	e := newEnv(t, spool.Config{Model: echo.New(echo.WithDelay(2 * time.Millisecond))}, opts)
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prompt := fmt.Sprintf("prompt %d", i)
			r := e.post("/chat", map[string]any{"sessionId": "fifo", "text": prompt}, "X-Request-Id", fmt.Sprintf("req-%d", i))
			var res spool.Result
			if err := json.Unmarshal(r.body, &res); err != nil || res.Text != "echo: "+prompt {
				errs <- fmt.Errorf("request %d: %d %s", i, r.status, r.body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	entries := e.transcriptOf("", "fifo")
	checkWellFormed(t, entries)
	texts := userTexts(t, entries)
	if len(texts) != n || len(accepted) != n {
		t.Fatalf("%d turns, %d accepted", len(texts), len(accepted))
	}
	for i, rid := range accepted {
		if want := "prompt " + strings.TrimPrefix(rid, "req-"); texts[i] != want {
			t.Fatalf("turn %d is %q, but the request accepted %dth was %s", i, texts[i], i, rid)
		}
	}
}

// With --on-disconnect cancel, a client that disconnects mid-stream
// leaves its turn recorded cancelled: a real client over a real
// connection, closed after the first piece of text.
func TestChatDisconnectCancelsTurn(t *testing.T) {
	e := newEnv(t, spool.Config{Model: echo.New(echo.WithDelay(30 * time.Millisecond))}, server.Options{OnDisconnect: server.DisconnectCancel})
	long := strings.Repeat("word ", 200)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hr := e.newRequest(ctx, req{method: "POST", path: "/chat", body: map[string]any{"sessionId": "gone", "text": long}, header: map[string]string{"Accept": "text/event-stream"}})
	res, err := e.http.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if sc.Text() == "event: text" {
			break
		}
	}
	res.Body.Close() // closes the connection mid-stream
	entries := e.waitEnded("", "gone")
	if got := turnEnds(entries); len(got) != 1 || got[0] != transcript.StatusCancelled {
		t.Fatalf("turn ends %v, want [cancelled]", got)
	}
	checkWellFormed(t, entries)
}

// Closing the channel answers the requests still waiting with an error,
// and refuses new ones.
func TestChatCloseRejectsPending(t *testing.T) {
	started := make(chan struct{}, 10)
	m := echo.New(echo.WithScript(func(req *model.Request) []model.Event {
		started <- struct{}{}
		return echo.Reply(req)
	}), echo.WithDelay(20*time.Millisecond))
	e := newEnv(t, spool.Config{Model: m}, server.Options{})
	first := strings.Repeat("word ", 100)
	results := make(chan resp, 2)
	go func() { results <- e.post("/chat", map[string]any{"sessionId": "cl", "text": first}) }()
	<-started
	go func() { results <- e.post("/chat", map[string]any{"sessionId": "cl", "text": "second"}) }()
	// Wait until the second is queued behind the first.
	deadline := time.Now().Add(5 * time.Second)
	for e.srv.Channel().Waiting(channel.Target{SessionID: "cl"}) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("second request never queued")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.srv.Close()
	for range 2 {
		r := <-results
		if r.status != http.StatusServiceUnavailable || r.errCode(t) != server.CodeUnavailable || !r.apiErr(t).Stopping {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if !strings.Contains(string(r.body), "channel is closed") {
			t.Fatalf("message does not say why: %s", r.body)
		}
	}
	if r := e.post("/chat", map[string]any{"sessionId": "cl", "text": "third"}); r.status != http.StatusServiceUnavailable {
		t.Fatalf("after close: %d %s", r.status, r.body)
	}
	// Close returned once the running turn was recorded: cancelled (the
	// queued one, if it started at all, the same way).
	ends := turnEnds(e.transcriptOf("", "cl"))
	if len(ends) == 0 {
		t.Fatal("no turn recorded")
	}
	for _, st := range ends {
		if st != transcript.StatusCancelled {
			t.Fatalf("turn ends %v", ends)
		}
	}
}
