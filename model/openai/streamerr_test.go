package openai_test

import (
	"context"
	"errors"
	"testing"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// Gateways and servers that speak the API (LiteLLM's proxy, vLLM) put an
// HTTP status, as a number or a string, in the code of an error object
// they send inside a stream that began with 200 OK. A rate limit or a
// refused key reported that way is still one.
func TestErrorInsideStreamWithStatusCode(t *testing.T) {
	cases := []struct {
		name, typ, code string
		want            transcript.ErrorCode
	}{
		{"string 429", `"None"`, `"429"`, transcript.CodeRateLimited},
		{"number 429", `"RateLimitError"`, `429`, transcript.CodeRateLimited},
		{"number 401", `"AuthenticationError"`, `401`, transcript.CodeAuth},
		{"string 403", `null`, `"403"`, transcript.CodeAuth},
		{"number 500", `"InternalServerError"`, `500`, transcript.CodeProviderError},
		{"OpenAI's own", `"server_error"`, `null`, transcript.CodeProviderError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, replaySwapped(t, "stream_error.sse",
				`"type":"server_error","param":null,"code":null`, `"type":`+c.typ+`,"param":null,"code":`+c.code))
			_, err := collect(newModel(t, s), context.Background(), simpleRequest())
			var me *model.Error
			if !errors.As(err, &me) || me.Code != c.want {
				t.Fatalf("err = %v, want %s", err, c.want)
			}
		})
	}
}
