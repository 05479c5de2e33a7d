package channel_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-go/spool/server/channel"
)

// script answers the calls in turn with the given handlers, the last one
// for every call after.
func script(t *testing.T, steps ...http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if b, _ := io.ReadAll(r.Body); string(b) != "payload" {
			t.Errorf("call %d: body %q: not resent whole", i, b)
		}
		steps[min(i, len(steps)-1)](w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func status(code int, hdr, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if hdr != "" {
			w.Header().Set("Retry-After", hdr)
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

func call(t *testing.T, tr *channel.Transport, url string, ctx context.Context) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader("payload"))
	return (&http.Client{Transport: tr}).Do(req)
}

func TestTransport(t *testing.T) {
	ok := status(200, "", `{"ok":true}`)
	cases := []struct {
		name    string
		steps   []http.HandlerFunc
		want    int
		calls   int32
		atLeast time.Duration
	}{
		{"429 Retry-After header", []http.HandlerFunc{status(429, "1", ""), ok}, 200, 2, time.Second},
		{"429 retry_after body (Discord)", []http.HandlerFunc{status(429, "", `{"retry_after":0.3,"global":false}`), ok}, 200, 2, 300 * time.Millisecond},
		{"429 parameters.retry_after (Telegram)", []http.HandlerFunc{status(429, "", `{"ok":false,"error_code":429,"parameters":{"retry_after":1}}`), ok}, 200, 2, time.Second},
		{"429 longer than MaxWait", []http.HandlerFunc{status(429, "3600", ""), ok}, 429, 1, 0},
		{"5xx backs off", []http.HandlerFunc{status(500, "", ""), status(503, "", ""), ok}, 200, 3, 30 * time.Millisecond},
		{"5xx until the last attempt", []http.HandlerFunc{status(502, "", "")}, 502, 3, 0},
		{"4xx is not retried", []http.HandlerFunc{status(400, "", "")}, 400, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, n := script(t, c.steps...)
			start := time.Now()
			res, err := call(t, &channel.Transport{Attempts: 3, Backoff: 10 * time.Millisecond, MaxWait: 5 * time.Second}, srv.URL, context.Background())
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != c.want || n.Load() != c.calls || time.Since(start) < c.atLeast {
				t.Fatalf("status %d after %d calls in %v", res.StatusCode, n.Load(), time.Since(start))
			}
		})
	}
	// A wait ends with the request's context.
	srv, _ := script(t, status(429, "20", ""))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := call(t, &channel.Transport{MaxWait: time.Minute}, srv.URL, ctx); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
	// No answer at all is retried, then reported.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	if _, err := call(t, &channel.Transport{Attempts: 2, Backoff: time.Millisecond}, dead.URL, context.Background()); err == nil {
		t.Fatal("a dead server answered")
	}
}
