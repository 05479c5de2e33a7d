package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/openai"
)

// fuzzSecret is in the fuzzed request's prompt; it has spaces, so that no
// label an error keeps (an identifier) can hold it.
const fuzzSecret = "tell me the SECRET 9c1e please"

// answer is a transport that answers every request with one status and
// body, without a network.
type answer struct {
	status int
	body   []byte
}

func (a answer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	ct := "text/event-stream"
	if a.status != http.StatusOK {
		ct = "application/json"
	}
	return &http.Response{StatusCode: a.status, Status: http.StatusText(a.status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(a.body)), ContentLength: int64(len(a.body)), Request: r}, nil
}

// fuzzStatuses are the statuses a fuzzed answer has: mostly 200 (a
// stream), and the error statuses the API sends.
var fuzzStatuses = []int{200, 200, 200, 400, 401, 403, 404, 429, 500, 503}

// FuzzStream answers a request with arbitrary bytes, as the event stream
// of a 200 or as the body of an error status: Stream never panics and
// ends; it yields at most one error, last, an *model.Error whose message
// holds nothing of the prompt; every tool call's arguments are JSON; and
// the text it yields is no longer than the answer could spell (3 bytes, a
// U+FFFD, for each byte of it).
func FuzzStream(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sse")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(0), b)
	}
	for i, body := range []string{
		`{"error":{"message":"refused: ` + fuzzSecret + `","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
		`{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		`{"error":{"message":"x","type":"` + fuzzSecret + `","param":null,"code":null}}`,
		`not json ` + fuzzSecret, ``,
	} {
		f.Add(uint8(3+i), []byte(body))
	}
	f.Add(uint8(0), []byte("data: {\"error\":{\"message\":\""+fuzzSecret+"\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n"))
	f.Add(uint8(0), []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\""+fuzzSecret+"\n\n"))
	f.Add(uint8(0), []byte("data: {\"choices\":[{\"index\":-1,\"delta\":{\"tool_calls\":[{\"index\":-5,\"function\":{\"arguments\":\"[1\",\"name\":\"n\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"))
	f.Fuzz(func(t *testing.T, status uint8, body []byte) {
		m, err := openai.New("gpt-test-mini", openai.WithBaseURL("http://api.test/v1"), openai.WithAPIKey("test-key"), openai.WithMaxRetries(0),
			openai.WithHTTPClient(&http.Client{Transport: answer{fuzzStatuses[int(status)%len(fuzzStatuses)], body}}))
		if err != nil {
			t.Fatal(err)
		}
		req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: fuzzSecret}}}
		var errs []error
		text, n := 0, 0
		for ev, err := range m.Stream(context.Background(), req) {
			n++
			if n > 3*len(body)+10 {
				t.Fatalf("more than %d events from %d bytes", n, len(body))
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if len(errs) > 0 {
				t.Fatalf("an event after the error %v: %+v", errs[0], ev)
			}
			text += len(ev.Text)
			if ev.Kind == model.EventToolCall && !json.Valid(ev.ToolCall.Arguments) {
				t.Fatalf("tool call arguments %q are not JSON", ev.ToolCall.Arguments)
			}
		}
		if len(errs) > 1 {
			t.Fatalf("%d errors: %v", len(errs), errs)
		}
		if len(errs) == 1 {
			var me *model.Error
			if !errors.As(errs[0], &me) {
				t.Fatalf("error %v (%T), want *model.Error", errs[0], errs[0])
			}
			if strings.Contains(errs[0].Error(), fuzzSecret) || !utf8.ValidString(errs[0].Error()) {
				t.Fatalf("error %q quotes the prompt or is not UTF-8", errs[0])
			}
		}
		if text > 3*len(body) {
			t.Fatalf("%d bytes of text from %d bytes", text, len(body))
		}
	})
}
