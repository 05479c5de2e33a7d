package replicatest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// answer is what a client learned of its turn: the fields of the
// runtime's Result that the checks compare with the transcript.
type answer struct {
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId"`
	Status    string `json:"status"`
	Text      string `json:"text"`
}

// apiError is the server's error body.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// busyError is an answer that says another process is running a turn on
// the session (409 session_busy, or that error as an event of a stream):
// the request may be sent again after retryAfter.
type busyError struct{ retryAfter time.Duration }

func (e *busyError) Error() string { return "session busy" }

// client sends turns as an HTTP client of the server would, retrying
// answers that say the session is busy, and counts those retries.
type client struct {
	hc   *http.Client
	busy atomic.Int64
}

func newClient() *client {
	return &client{hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
}

func (c *client) close() { c.hc.CloseIdleConnections() }

// invoke sends prompt to session with POST /invoke.
func (c *client) invoke(ctx context.Context, base, session, prompt string) (answer, error) {
	return c.retry(ctx, func() (answer, error) { return c.invokeOnce(ctx, base, session, prompt) })
}

// chat sends prompt to session with POST /chat as Server-Sent Events.
func (c *client) chat(ctx context.Context, base, session, prompt string) (answer, error) {
	return c.retry(ctx, func() (answer, error) { return c.chatOnce(ctx, base, session, prompt) })
}

func (c *client) retry(ctx context.Context, once func() (answer, error)) (answer, error) {
	for {
		a, err := once()
		var busy *busyError
		if !errors.As(err, &busy) {
			return a, err
		}
		c.busy.Add(1)
		select {
		case <-ctx.Done():
			return a, fmt.Errorf("session still busy when the test's time ran out: %w", ctx.Err())
		case <-time.After(busy.retryAfter):
		}
	}
}

func (c *client) post(ctx context.Context, url string, body any, sse bool) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if sse {
		req.Header.Set("Accept", "text/event-stream")
	}
	return c.hc.Do(req)
}

// failure turns a response that is not 200 into an error: a busyError for
// 409 session_busy.
func failure(res *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
	var ae apiError
	json.Unmarshal(b, &ae)
	if res.StatusCode == http.StatusConflict && ae.Error.Code == "session_busy" {
		secs, err := strconv.Atoi(res.Header.Get("Retry-After"))
		if err != nil || secs <= 0 {
			secs = 1
		}
		return &busyError{retryAfter: time.Duration(secs) * time.Second}
	}
	return fmt.Errorf("status %d: %s", res.StatusCode, bytes.TrimSpace(b))
}

func (c *client) invokeOnce(ctx context.Context, base, session, prompt string) (answer, error) {
	res, err := c.post(ctx, base+"/invoke", map[string]string{"prompt": prompt, "sessionId": session}, false)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return answer{}, failure(res)
	}
	var a answer
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil {
		return a, fmt.Errorf("decoding the answer: %v", err)
	}
	return a, nil
}

// chatOnce reads the event stream to its end. It must start with the
// "session" event and end with "turn_end", whose result is the answer; an
// "error" event with the code session_busy is a busyError (the stream's
// status, 200, was sent before the turn could run).
func (c *client) chatOnce(ctx context.Context, base, session, prompt string) (answer, error) {
	res, err := c.post(ctx, base+"/chat", map[string]string{"text": prompt, "sessionId": session}, true)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return answer{}, failure(res)
	}
	var (
		names []string
		a     *answer
		text  strings.Builder
	)
	err = readSSE(res.Body, func(name, data string) error {
		names = append(names, name)
		switch name {
		case "session":
			var s struct{ SessionID string }
			if json.Unmarshal([]byte(data), &s); s.SessionID != session || len(names) != 1 {
				return fmt.Errorf("session event %q at position %d", data, len(names))
			}
		case "text":
			var ev struct{ Text string }
			json.Unmarshal([]byte(data), &ev)
			text.WriteString(ev.Text)
		case "turn_end":
			var ev struct{ Result *answer }
			if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.Result == nil {
				return fmt.Errorf("turn_end without a result: %s", data)
			}
			a = ev.Result
		case "error":
			var ae apiError
			json.Unmarshal([]byte(data), &ae)
			if ae.Error.Code == "session_busy" {
				return &busyError{retryAfter: time.Second}
			}
			return fmt.Errorf("error event: %s", data)
		}
		return nil
	})
	if err != nil {
		return answer{}, err
	}
	if a == nil {
		return answer{}, fmt.Errorf("the stream ended without turn_end (events %v)", names)
	}
	// The streamed text is the answer's, step by step: the answer joins
	// steps with a blank line, and these turns answer in one text step.
	if text.String() != a.Text {
		return *a, fmt.Errorf("streamed text %q, answer text %q", text.String(), a.Text)
	}
	return *a, nil
}

// readSSE calls fn with each named event of an event stream until the
// stream ends or fn fails.
func readSSE(r io.Reader, fn func(name, data string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var name, data string
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "":
			if name != "" {
				if err := fn(name, data); err != nil {
					return err
				}
			}
			name, data = "", ""
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		}
	}
	return sc.Err()
}
