package openai_test

import (
	"net/http"
	"testing"

	"github.com/spool-go/spool/model/internal/streamfuzz"
	"github.com/spool-go/spool/model/openai"
)

// FuzzStream answers a request with arbitrary bytes, as the event stream
// of a 200 or as the body of an error status the API sends, and holds
// Stream to streamfuzz.Check: it ends, with at most one error, last, a
// *model.Error that quotes nothing of the prompt, JSON tool arguments
// and bounded text.
func FuzzStream(f *testing.F) {
	secret := streamfuzz.Secret
	streamfuzz.Seed(f,
		`{"error":{"message":"refused: `+secret+`","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
		`{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		`{"error":{"message":"x","type":"`+secret+`","param":null,"code":null}}`,
		`not json `+secret, ``)
	f.Add(uint8(0), []byte("data: {\"error\":{\"message\":\""+secret+"\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n"))
	f.Add(uint8(0), []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\""+secret+"\n\n"))
	f.Add(uint8(0), []byte("data: {\"choices\":[{\"index\":-1,\"delta\":{\"tool_calls\":[{\"index\":-5,\"function\":{\"arguments\":\"[1\",\"name\":\"n\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"))
	f.Fuzz(func(t *testing.T, pick uint8, body []byte) {
		answer := streamfuzz.Answer{Status: streamfuzz.Status(pick, 400, 401, 403, 404, 429, 500, 503), Body: body}
		m, err := openai.New("gpt-test-mini", openai.WithBaseURL("http://api.test/v1"), openai.WithAPIKey("test-key"), openai.WithMaxRetries(0),
			openai.WithHTTPClient(&http.Client{Transport: answer}))
		if err != nil {
			t.Fatal(err)
		}
		streamfuzz.Check(t, m, body)
	})
}
