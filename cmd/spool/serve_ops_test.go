package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/transcript"
)

// getWith is a GET with headers, on a connection of its own.
func getWith(t *testing.T, url string, header ...string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	res, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res, b, err
}

// The shutdown of spool serve, in order: on SIGTERM /readyz answers 503
// at once while everything is still served (--drain-delay); then new
// requests are refused with 503 while the running turn goes on; the turn
// finishes within --grace and its client gets all of it; only then does
// the listener close, and the process exits 0.
func TestServeShutdownOrdering(t *testing.T) {
	prov := slowProvider(t, 30, 50*time.Millisecond) // a turn of 1.5 s
	db := "sqlite:" + filepath.Join(t.TempDir(), "spool.db")
	p := startServe(t, "--store", db, "--drain-delay", "500ms", "--grace", "20s",
		"--model", "openai:slow", "--base-url", prov.URL+"/v1", "--model-key", "test")
	br := chatUntilText(t, p.URL, "slow")
	ended := make(chan time.Time, 1)
	var rest []byte
	go func() {
		rest, _ = io.ReadAll(br)
		ended <- time.Now()
	}()

	p.Cmd.Process.Signal(syscall.SIGTERM)
	start := time.Now()
	poll := func(what string, ok func() bool) time.Time {
		t.Helper()
		for !ok() {
			if time.Since(start) > 15*time.Second {
				t.Fatalf("%s: not after 15s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return time.Now()
	}
	status := func(path string) int {
		res, _, err := getWith(t, p.URL+path)
		if err != nil {
			return -1
		}
		return res.StatusCode
	}
	notReady := poll("readyz 503", func() bool { return status("/readyz") == 503 })
	if s := status("/v1/sessions"); s != 200 && time.Since(start) < 400*time.Millisecond {
		t.Fatalf("during the drain delay the API answered %d", s)
	}
	refused := poll("new requests refused", func() bool { return status("/v1/sessions") == 503 })
	if s := status("/healthz"); s != 200 {
		t.Fatalf("healthz while shutting down: %d", s)
	}
	if s := status("/readyz"); s != 503 {
		t.Fatalf("readyz while shutting down: %d", s)
	}
	var turnEnd time.Time
	select {
	case turnEnd = <-ended:
	case <-time.After(15 * time.Second):
		t.Fatal("the running turn did not finish")
	}
	closed := poll("listener closed", func() bool {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(p.URL, "http://"), time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	if code := p.Wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !(notReady.Before(refused) && refused.Before(turnEnd) && !closed.Before(turnEnd)) {
		t.Fatalf("order: readyz 503 at %v, refused at %v, turn ended at %v, listener closed at %v (since SIGTERM)",
			notReady.Sub(start), refused.Sub(start), turnEnd.Sub(start), closed.Sub(start))
	}
	if refused.Sub(start) < 400*time.Millisecond {
		t.Fatalf("requests refused %v after SIGTERM, before the drain delay", refused.Sub(start))
	}
	if !strings.Contains(string(rest), "event: turn_end") {
		t.Fatalf("the client did not get the end of the turn:\n%s", rest)
	}
	if got := endStatuses(readTranscript(t, db, "slow")); len(got) != 1 || got[0] != transcript.StatusOK {
		t.Fatalf("turn ends %v", got)
	}
}

// --log-format json: one JSON object a line; the access line names the
// route and carries the client's request id; --log-level debug adds the
// probes' lines.
func TestServeJSONLogs(t *testing.T) {
	p := spooltest.Serve(t, spooltest.Options{}, "--store", "memory:", "--log-format", "json", "--log-level", "debug")
	if res, _, err := getWith(t, p.URL+"/v1/sessions/some-session/messages", "X-Request-Id", "ops-req-7"); err != nil || res.StatusCode != 404 {
		t.Fatalf("messages: %v %v", res, err)
	}
	getWith(t, p.URL+"/healthz", "X-Request-Id", "ops-probe-1")
	p.Stop(t)
	var access, probe map[string]any
	for _, line := range strings.Split(p.Stderr.String(), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue // the "serving" line is for people and scripts
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		switch m["requestId"] {
		case "ops-req-7":
			access = m
		case "ops-probe-1":
			probe = m
		}
	}
	if access == nil || access["msg"] != "request" || access["route"] != "/v1/sessions/{id}/messages" || access["status"] != 404.0 || access["level"] != "INFO" {
		t.Fatalf("access line %v\n%s", access, p.Stderr.String())
	}
	if strings.Contains(p.Stderr.String(), "some-session") {
		t.Fatalf("the raw path is in the log:\n%s", p.Stderr.String())
	}
	if probe == nil || probe["level"] != "DEBUG" || probe["route"] != "/healthz" {
		t.Fatalf("probe line %v", probe)
	}
}

// scrape reads /metrics and parses it with Prometheus's own text parser.
func scrape(t *testing.T, url string, header ...string) map[string]bool {
	t.Helper()
	res, body, err := getWith(t, url, header...)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET %s: %v %v %s", url, res, err, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	seen := map[string]bool{}
	for name, f := range families {
		seen[name] = true
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				seen[name+"{"+l.GetName()+"="+l.GetValue()+"}"] = true
			}
		}
	}
	return seen
}

// --metrics serves Prometheus text on /metrics behind the keys;
// --metrics-addr on a listener of its own, without them. The names follow
// the OpenTelemetry-to-Prometheus conventions, and every family the
// operator needs is there after a turn.
func TestServeMetrics(t *testing.T) {
	p := startServe(t, "--store", "sqlite:"+filepath.Join(t.TempDir(), "spool.db"), "--api-key", e2eKey, "--metrics")
	res, _, err := getWith(t, p.URL+"/metrics")
	if err != nil || res.StatusCode != 401 {
		t.Fatalf("/metrics without a key: %v %v", res, err)
	}
	httpDo(t, "POST", p.URL+"/invoke", e2eKey, map[string]string{"prompt": `/call get_time {}`, "sessionId": "m1"}, "")
	stream := httpOpen(t, context.Background(), "POST", p.URL+"/chat", e2eKey, map[string]string{"sessionId": "m2", "text": "hi"}, "text/event-stream")
	io.ReadAll(stream.Body)
	stream.Body.Close()
	seen := scrape(t, p.URL+"/metrics", "Authorization", "Bearer "+e2eKey)
	for _, want := range []string{
		"http_server_request_duration_seconds{http_route=/invoke}",
		"http_server_request_duration_seconds{http_response_status_code=200}",
		"spool_turn_duration_seconds{spool_turn_status=ok}",
		"gen_ai_client_token_usage{gen_ai_token_type=output}",
		"spool_tool_duration_seconds{spool_tool_outcome=ok}",
		"spool_store_operation_duration_seconds{spool_store=sqlite}",
		"spool_store_operation_duration_seconds{spool_store_operation=append}",
		"spool_server_active_streams{http_route=/chat}",
		"spool_channel_queue_depth{spool_channel=http}",
		"go_goroutines",
		"target_info",
	} {
		if !seen[want] {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("families: %v", seen)
	}

	q := startServe(t, "--store", "memory:", "--api-key", e2eKey, "--metrics-addr", "127.0.0.1:0")
	m := regexp.MustCompile(`metrics on (http://\S+/metrics)`).FindStringSubmatch(q.Stderr.String())
	if m == nil {
		t.Fatalf("no metrics address in:\n%s", q.Stderr.String())
	}
	if seen := scrape(t, m[1]); !seen["go_goroutines"] {
		t.Fatal("the metrics listener serves no metrics")
	}
	if res, _, _ := getWith(t, q.URL+"/metrics", "Authorization", "Bearer "+e2eKey); res.StatusCode == 200 {
		t.Fatal("with --metrics-addr, /metrics is served on the API listener too")
	}
}
