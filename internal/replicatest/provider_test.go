package replicatest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// provider is a fake OpenAI-compatible chat completions endpoint.
type provider struct {
	url     string
	started chan struct{} // a value per request received
}

// hangingProvider streams the first word of an answer and then nothing
// until its client goes away (or 30 seconds pass): a replica asking it is
// in the middle of a turn for as long as the test wants.
func hangingProvider(t *testing.T) *provider {
	p := &provider{started: make(chan struct{}, 16)}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"hang","choices":[{"index":0,"delta":{"content":"thinking "},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		p.started <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}))
	t.Cleanup(s.Close)
	p.url = s.URL
	return p
}
