package channel

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Transport is the http.RoundTripper of a chat-platform driver's calls to
// its platform. It follows the platforms' delivery rules in one place for
// every driver and every client library they use:
//
//   - A 429 is retried after the time the platform asks for: the
//     Retry-After header (Slack, Discord), or retry_after in the JSON body
//     (Discord's {"retry_after":1.5}, Telegram's
//     {"parameters":{"retry_after":5}}). A wait longer than MaxWait is not
//     waited: the 429 is returned, and the post fails.
//   - A 5xx, or no answer at all (connection refused, reset), is retried
//     with exponential backoff from Backoff.
//   - At most Attempts tries; after the last, the last answer (or error)
//     is returned as is, for the client to turn into its error.
//   - Waiting honours the request's context.
//
// A request is retried whole, so a post the platform took before failing
// with a 5xx can appear twice; the platforms document retrying anyway.
// Request bodies are read into memory first (platform calls are small).
type Transport struct {
	Base     http.RoundTripper // default http.DefaultTransport
	Attempts int               // default 4
	MaxWait  time.Duration     // longest Retry-After waited for; default 30s
	Backoff  time.Duration     // the first 5xx wait, doubled each time; default 500ms
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	attempts, maxWait, backoff := t.Attempts, t.MaxWait, t.Backoff
	if attempts <= 0 {
		attempts = 4
	}
	if maxWait <= 0 {
		maxWait = 30 * time.Second
	}
	if backoff <= 0 {
		backoff = 500 * time.Millisecond
	}
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	for try := 1; ; try++ {
		r := req.Clone(req.Context())
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		res, err := base.RoundTrip(r)
		var wait time.Duration
		switch {
		case err != nil:
			wait = backoff
		case res.StatusCode == http.StatusTooManyRequests:
			wait = retryAfter(res)
			if wait > maxWait {
				return res, nil
			}
		case res.StatusCode >= 500:
			wait = backoff
		default:
			return res, nil
		}
		if try >= attempts {
			return res, err
		}
		if res != nil {
			io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
			res.Body.Close()
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-req.Context().Done():
			timer.Stop()
			return nil, req.Context().Err()
		}
		backoff *= 2
	}
}

// retryAfter reads how long a 429 asks to wait, from the header or the
// body, and puts the body back for the caller. A 429 that says nothing
// waits a second.
func retryAfter(res *http.Response) time.Duration {
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(b))
	if s := strings.TrimSpace(res.Header.Get("Retry-After")); s != "" {
		if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 {
			return seconds(f)
		}
		if at, err := http.ParseTime(s); err == nil {
			return max(0, time.Until(at))
		}
	}
	var v struct {
		RetryAfter *float64 `json:"retry_after"`
		Parameters struct {
			RetryAfter *float64 `json:"retry_after"`
		} `json:"parameters"`
	}
	if json.Unmarshal(b, &v) == nil {
		switch {
		case v.RetryAfter != nil && *v.RetryAfter >= 0:
			return seconds(*v.RetryAfter)
		case v.Parameters.RetryAfter != nil && *v.Parameters.RetryAfter >= 0:
			return seconds(*v.Parameters.RetryAfter)
		}
	}
	return time.Second
}

func seconds(f float64) time.Duration {
	if f > 86400 {
		f = 86400
	}
	return time.Duration(f * float64(time.Second))
}
