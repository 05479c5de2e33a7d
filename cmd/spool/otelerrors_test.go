package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/spooltest"
)

// An exporter's failure (here a collector that is not there) is a line of
// the server's log like any other: with --log-format json, a JSON object
// at level WARN. OpenTelemetry's own handler printed it with the standard
// library's log, a plain line in the middle of the JSON.
func TestServeExportErrorsInTheLog(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String()
	ln.Close()
	p := spooltest.Serve(t, spooltest.Options{Env: []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + gone,
		"OTEL_EXPORTER_OTLP_TIMEOUT=300",
		"OTEL_BSP_SCHEDULE_DELAY=50",
		"OTEL_METRIC_EXPORT_INTERVAL=100",
	}}, "--store", "memory:", "--log-format", "json")
	res, err := http.Post(p.URL+"/invoke", "application/json", bytes.NewReader([]byte(`{"prompt":"hi","sessionId":"s"}`)))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.Stderr.String(), "export") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	p.Stop(t)
	logged := false
	for _, line := range strings.Split(p.Stderr.String(), "\n") {
		if !strings.Contains(line, "export") || strings.Contains(line, "exporting telemetry") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("an export failure is not a JSON log line: %q", line)
		}
		if m["level"] == "WARN" {
			logged = true
		}
	}
	if !logged {
		t.Fatalf("no export failure logged:\n%s", p.Stderr.String())
	}
}
