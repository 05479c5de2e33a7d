package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/transcript"
)

// TestUnavailableSaysStopping: of the causes of unavailable, only the
// server or its chat channel going away is marked stopping, so that a
// client (the web UI) words it without reading the message; a store that
// failed or a request out of time is not.
func TestUnavailableSaysStopping(t *testing.T) {
	for _, c := range []struct {
		name     string
		ae       *apiError
		stopping bool
	}{
		{"agent closed", apiErrorFor(fmt.Errorf("turn: %w", spool.ErrClosed)), true},
		{"channel closed", apiErrorFor(channel.ErrClosed), true},
		{"chat channel closed", closedError(), true},
		{"shutdown", shuttingDownError(), true},
		{"out of time", apiErrorFor(context.DeadlineExceeded), false},
		{"store failed", turnError(transcript.StatusError, &transcript.ErrorInfo{Code: transcript.CodeStoreError, Message: "disk full"}), false},
	} {
		if c.ae.Code != CodeUnavailable || c.ae.Stopping != c.stopping {
			t.Errorf("%s: code %q stopping %v, want unavailable stopping %v", c.name, c.ae.Code, c.ae.Stopping, c.stopping)
		}
	}
}
