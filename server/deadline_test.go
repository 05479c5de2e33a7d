package server_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/server/channel/slack"
)

// A client that sends its headers and then a body a byte now and then is
// cut once the read timeout is up, and its connection closed.
// The same holds for a chat platform's webhook, the most exposed route.
func TestSlowBodyIsCut(t *testing.T) {
	for _, path := range []string{"/invoke", "/channels/slack/events"} {
		t.Run(path, func(t *testing.T) { slowBody(t, path) })
	}
}

func slowBody(t *testing.T, path string) {
	const timeout = 300 * time.Millisecond
	drv, err := slack.New(slack.Config{SigningSecret: "s", BotToken: "xoxb-t", APIURL: "http://127.0.0.1:1/"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, spool.Config{}, server.Options{ReadTimeout: timeout, Channels: []channel.Driver{drv}})
	conn, err := net.Dial("tcp", e.http.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				if _, err := io.WriteString(conn, " "); err != nil {
					return
				}
			}
		}
	}()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a slow body: %v", err)
	}
	took := time.Since(start)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), server.CodeRequestTimeout) {
		t.Errorf("slow body: %d %s; want 408 %s", res.StatusCode, b, server.CodeRequestTimeout)
	}
	if took < timeout || took > timeout+2*time.Second {
		t.Errorf("cut after %s; the read timeout is %s", took, timeout)
	}
	// The server is done with the connection: it closes it.
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Error("the connection is still open after the cut")
	}
}

// An event stream that lasts longer than the read timeout is not cut by
// it: the deadline bounds the body only.
func TestLongStreamOutlivesReadTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	e := newEnv(t, spool.Config{Model: echo.New(echo.WithDelay(80 * time.Millisecond))}, server.Options{ReadTimeout: timeout})
	start := time.Now()
	res, events, _ := e.stream("/chat", map[string]string{"sessionId": "long", "text": "one two three four five six seven eight nine ten"})
	if res.status != http.StatusOK {
		t.Fatalf("status %d %s", res.status, res.body)
	}
	if took := time.Since(start); took < 3*timeout {
		t.Fatalf("the stream took %s, not longer than the read timeout %s: the test proves nothing", took, timeout)
	}
	got := names(events)
	if !slices.Contains(got, "turn_end") || slices.Contains(got, "error") {
		t.Fatalf("the stream was cut: %v", got)
	}
	entries := e.waitEnded("", "long")
	if st := turnEnds(entries); len(st) != 1 || st[0] != "ok" {
		t.Fatalf("the turn ended %v, want ok", st)
	}
}

// A body that is JSON with a field the route does not know is
// invalid_request, naming the field and the ones the route takes.
func TestUnknownFieldNamed(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	r := e.post("/invoke", map[string]string{"text": "hi"})
	if r.status != http.StatusBadRequest || r.errCode(t) != server.CodeInvalidRequest {
		t.Fatalf("/invoke {text}: %d %s", r.status, r.body)
	}
	for _, want := range []string{`unknown field \"text\"`, `\"prompt\"`, `\"sessionId\"`} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("the message does not name %s: %s", want, r.body)
		}
	}
	if strings.Contains(string(r.body), "malformed") {
		t.Errorf("well-formed JSON called malformed: %s", r.body)
	}
}
