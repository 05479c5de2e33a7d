package server

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// wantsSSE reports whether the client asked for Server-Sent Events.
func wantsSSE(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
			return true
		}
	}
	return false
}

// sseWriter writes a Server-Sent Events stream, flushing each event as it
// is written and a comment line every keep-alive interval while the
// stream is idle. It is safe for concurrent use (the keep-alive runs on
// its own goroutine).
type sseWriter struct {
	mu   sync.Mutex
	w    io.Writer
	rc   *http.ResponseController
	err  error
	last time.Time
	stop chan struct{}
	done chan struct{}
}

// startSSE sends the response header of an event stream (extra headers
// added) and starts the keep-alive.
func startSSE(w http.ResponseWriter, keepAlive time.Duration, extra map[string]string) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	for k, v := range extra {
		h.Set(k, v)
	}
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w), last: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	// How long a client waits before it reconnects (with Last-Event-ID)
	// after losing the stream.
	s.write("retry: " + strconv.Itoa(int(RetryHint/time.Millisecond)) + "\n\n")
	go s.keepAlive(keepAlive)
	return s
}

// RetryHint is the reconnection delay every event stream advises its
// clients (the SSE retry: field).
const RetryHint = 2 * time.Second

func (s *sseWriter) keepAlive(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.mu.Lock()
			if time.Since(s.last) >= every/2 {
				s.write(": ping\n\n")
			}
			s.mu.Unlock()
		}
	}
}

// event writes one event: an event: line when name is not empty, and v
// as JSON on a data: line. It returns the first write error of the
// stream, so a caller learns that the client went away.
func (s *sseWriter) event(name string, v any) error { return s.eventID(name, "", v) }

// eventID is event with an id: line when id is not empty, so that a
// client that reconnects names the last event it had (Last-Event-ID).
func (s *sseWriter) eventID(name, id string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var sb strings.Builder
	if id != "" {
		sb.WriteString("id: ")
		sb.WriteString(id)
		sb.WriteByte('\n')
	}
	if name != "" {
		sb.WriteString("event: ")
		sb.WriteString(name)
		sb.WriteByte('\n')
	}
	sb.WriteString("data: ")
	sb.Write(b) // compact JSON holds no newline
	sb.WriteString("\n\n")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.write(sb.String())
	return s.err
}

// raw writes a data line that is not JSON ("data: [DONE]").
func (s *sseWriter) raw(data string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.write("data: " + data + "\n\n")
	return s.err
}

// write writes and flushes; s.mu is held.
func (s *sseWriter) write(text string) {
	if s.err != nil {
		return
	}
	if _, err := io.WriteString(s.w, text); err != nil {
		s.err = err
		return
	}
	s.last = time.Now()
	s.flush()
}

func (s *sseWriter) flush() {
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.err = err
	}
}

// close stops the keep-alive; nothing is written after it returns.
func (s *sseWriter) close() {
	close(s.stop)
	<-s.done
}
