package channel

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
)

// MaxWebhookBody caps the body a driver reads from a webhook: platform
// payloads are a few kilobytes.
const MaxWebhookBody = 1 << 20

// ReadBody reads a webhook's body, at most MaxWebhookBody bytes; a larger
// one is answered 413 and reported false.
func ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxWebhookBody))
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			WriteError(w, http.StatusRequestEntityTooLarge, "body_too_large", "the request body is too large")
		case errors.Is(err, os.ErrDeadlineExceeded):
			WriteError(w, http.StatusRequestTimeout, "request_timeout", "the request body did not arrive in time")
		default:
			WriteError(w, http.StatusBadRequest, "bad_request", "the request body could not be read")
		}
		return nil, false
	}
	return b, true
}

// WriteError answers a webhook request with the server's error shape,
// {"error":{"code","message"}}.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	b, _ := json.Marshal(map[string]map[string]string{"error": {"code": code, "message": message}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// Unauthorized answers a webhook request that failed the platform's
// authentication: 401, and nothing was touched.
func Unauthorized(w http.ResponseWriter, what string) {
	WriteError(w, http.StatusUnauthorized, "unauthorized", what)
}

// Accepted answers a webhook after Receive or Press: 200 for a message
// taken or a duplicate dropped (a platform must not retry either), 503
// when the channel is closed, 500 when the delivery could not be
// recorded (the platform retries it).
func Accepted(w http.ResponseWriter, err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrDuplicate):
		return true
	case errors.Is(err, ErrClosed):
		WriteError(w, http.StatusServiceUnavailable, "unavailable", "the channel is shutting down; retry later")
	default:
		WriteError(w, http.StatusInternalServerError, "internal", "the message could not be taken; retry later")
	}
	return false
}
