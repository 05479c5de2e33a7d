// Package streamfuzz holds what the providers' fuzz tests hold a model's
// Stream to, whatever its API answers: the answer as a transport, and the
// check of what Stream makes of it. Tests import it; the code never does.
package streamfuzz

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
)

// Secret is in the fuzzed request's prompt; it has spaces, so that no
// label an error keeps (an identifier) can hold it.
const Secret = "tell me the SECRET 9c1e please"

// Answer is a transport that answers every request with one status and
// body, without a network: an event stream on 200, JSON otherwise.
type Answer struct {
	Status int
	Body   []byte
}

// RoundTrip implements http.RoundTripper.
func (a Answer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	ct := "text/event-stream"
	if a.Status != http.StatusOK {
		ct = "application/json"
	}
	return &http.Response{StatusCode: a.Status, Status: http.StatusText(a.Status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(a.Body)), ContentLength: int64(len(a.Body)), Request: r}, nil
}

// Status picks the status of a fuzzed answer: mostly 200 (a stream), and
// the error statuses of the API (errors).
func Status(pick uint8, errors ...int) int {
	statuses := append([]int{200, 200, 200}, errors...)
	return statuses[int(pick)%len(statuses)]
}

// Seed adds to f the recorded streams of testdata/*.sse, as 200 answers
// (pick 0), and bodies as the answers of the error statuses after the
// three 200s (picks 3, 4, …).
func Seed(f *testing.F, bodies ...string) {
	files, _ := filepath.Glob("testdata/*.sse")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(0), b)
	}
	for i, body := range bodies {
		f.Add(uint8(3+i), []byte(body))
	}
}

// Check streams a request whose prompt is Secret from m, which answers
// with body, and fails t unless Stream ends; it yields at most one error,
// last, an *model.Error whose message holds nothing of the prompt and is
// UTF-8; every tool call's arguments are JSON; and the text it yields is
// no longer than the answer could spell (3 bytes, a U+FFFD, for each byte
// of it).
func Check(t *testing.T, m model.Model, body []byte) {
	t.Helper()
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: Secret}}}
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
		if strings.Contains(errs[0].Error(), Secret) || !utf8.ValidString(errs[0].Error()) {
			t.Fatalf("error %q quotes the prompt or is not UTF-8", errs[0])
		}
	}
	if text > 3*len(body) {
		t.Fatalf("%d bytes of text from %d bytes", text, len(body))
	}
}
