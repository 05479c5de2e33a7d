package anthropic_test

import (
	"net/http"
	"testing"

	"github.com/spool-go/spool/model/anthropic"
	"github.com/spool-go/spool/model/internal/streamfuzz"
)

// FuzzStream answers a request with arbitrary bytes, as the event stream
// of a 200 or as the body of an error status the API sends, and holds
// Stream to streamfuzz.Check: it ends, with at most one error, last, a
// *model.Error that quotes nothing of the prompt, JSON tool arguments
// and bounded text.
func FuzzStream(f *testing.F) {
	secret := streamfuzz.Secret
	streamfuzz.Seed(f,
		`{"type":"error","error":{"type":"rate_limit_error","message":"`+secret+`"}}`,
		`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208432 tokens > 200000 maximum"}}`,
		`{"type":"error","error":{"type":"`+secret+`","message":"x"}}`,
		`not json `+secret, ``)
	f.Add(uint8(0), []byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\""+secret+"\"}}\n\n"))
	f.Add(uint8(0), []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""+secret+"\n\n"))
	f.Add(uint8(0), []byte("data: {\"type\":\"content_block_start\",\"index\":-1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":[1]}}\n\ndata: {\"type\":\"content_block_stop\",\"index\":-1}\n\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Fuzz(func(t *testing.T, pick uint8, body []byte) {
		answer := streamfuzz.Answer{Status: streamfuzz.Status(pick, 400, 401, 403, 404, 429, 500, 529), Body: body}
		m, err := anthropic.New("claude-test-1", anthropic.WithBaseURL("http://api.test"), anthropic.WithAPIKey("test-key"), anthropic.WithMaxRetries(0),
			anthropic.WithHTTPClient(&http.Client{Transport: answer}))
		if err != nil {
			t.Fatal(err)
		}
		streamfuzz.Check(t, m, body)
	})
}
