// Package anthropic is a model.Model for the Anthropic Messages API, built
// on the official anthropic-sdk-go SDK.
//
// Responses stream; tools are offered with their JSON schema as
// input_schema. The session history maps onto messages like this:
//
//   - System messages go, in order, into the system parameter.
//   - User messages become user messages with one text block.
//   - An assistant message becomes an assistant message with a text block
//     (when it has text) and a tool_use block per tool call. Arguments
//     that are not a JSON object (a model's malformed arguments, recorded
//     as a JSON string) are sent as {"value": <arguments>}, since the API
//     accepts only objects as tool input.
//   - Consecutive tool messages become one user message with a tool_result
//     block each. is_error is never set: model.Message does not say
//     whether a call failed, so a failure reaches the model through the
//     result's text, which the runtime writes to say so.
//   - Messages of the same role that follow each other are merged into one,
//     tool results first, as the API requires; empty text blocks, which
//     the API refuses, are left out.
//
// Text streams as it comes. Tool input arrives as input_json_delta
// fragments per content block index; each call is emitted as one
// model.EventToolCall once message_delta says why the answer stopped.
// An answer that stopped with max_tokens, model_context_window_exceeded
// or refusal while it held tool calls delivers none of them: the API
// closes a cut tool_use block like a finished one, so the stream fails
// with transcript.CodeModelError after its text and usage. Usage is
// reported from message_start and again from message_delta (input tokens
// include cache reads and writes).
//
// Configuration comes from options, then from the environment variables
// ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) and ANTHROPIC_BASE_URL, then
// from defaults. The SDK's other sources (profiles, federation) are not
// consulted; pass SDK options with WithRequestOptions to use them. The
// SDK's OpenTelemetry spans are kept to metadata: content never goes into
// them. Without a key, streams from api.anthropic.com fail at once with
// transcript.CodeAuth; other endpoints are called without one. Importing the
// package registers the provider "anthropic" with model.Open.
//
// Errors the API reports are *model.Error values whose Message holds the
// HTTP status and the API's error type, never its free text; the SDK's
// error is their Err, whose own text may quote the request: log the
// *model.Error, not Err. An error event inside a stream that began with
// 200 OK has StatusCode 0 and its code from the error type
// (rate_limit_error is CodeRateLimited, overloaded_error CodeProvider). A
// stream that ends before message_stop is a CodeProvider failure, not a
// short answer.
package anthropic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"os"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/internal/provider"
	"github.com/spool-go/spool/transcript"
)

// DefaultBaseURL is the Anthropic API.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens caps an answer when neither WithMaxTokens nor the
// request's MaxOutputTokens says otherwise; the API requires a cap.
const DefaultMaxTokens = 4096

// DefaultMaxRetries is how many times a request that failed with a
// connection error, a 408, 409, 429 or 5xx (such as 529 overloaded) is
// retried when WithMaxRetries is not given. The SDK waits as the server's
// Retry-After asks or backs off exponentially; ctx cancels the wait.
const DefaultMaxRetries = 2

func init() {
	model.Register("anthropic", func(name string, cfg model.Config) (model.Model, error) {
		var opts []Option
		if cfg.BaseURL != "" {
			opts = append(opts, WithBaseURL(cfg.BaseURL))
		}
		if cfg.APIKey != "" {
			opts = append(opts, WithAPIKey(cfg.APIKey))
		}
		if cfg.MaxOutputTokens > 0 {
			opts = append(opts, WithMaxTokens(cfg.MaxOutputTokens))
		}
		return New(name, opts...)
	})
}

// Model calls one model of the Messages API. It is safe for concurrent
// use.
type Model struct {
	name      string
	baseURL   string
	maxTokens int64
	noKey     bool // no credential configured for the Anthropic API itself
	service   sdk.MessageService
}

type config struct {
	baseURL    string
	apiKey     *string
	httpClient *http.Client
	maxRetries int
	maxTokens  int64
	extra      []option.RequestOption
}

// Option configures a Model.
type Option func(*config)

// WithBaseURL sets the endpoint. It wins over ANTHROPIC_BASE_URL.
func WithBaseURL(baseURL string) Option {
	return func(c *config) { c.baseURL = baseURL }
}

// WithAPIKey sets the API key. It wins over ANTHROPIC_API_KEY and
// ANTHROPIC_AUTH_TOKEN; an empty key sends none.
func WithAPIKey(key string) Option {
	return func(c *config) { c.apiKey = &key }
}

// WithHTTPClient sets the HTTP client (default http.DefaultClient). Give it
// no overall Timeout: a streamed answer can take minutes; use the context
// passed to Stream to bound a call.
func WithHTTPClient(client *http.Client) Option {
	return func(c *config) { c.httpClient = client }
}

// WithMaxRetries sets how many times a failed request is retried (default
// DefaultMaxRetries); 0 makes a rate limit surface at once.
func WithMaxRetries(n int) Option {
	return func(c *config) { c.maxRetries = max(n, 0) }
}

// WithMaxTokens sets max_tokens for requests whose MaxOutputTokens is not
// set (default DefaultMaxTokens).
func WithMaxTokens(n int64) Option {
	return func(c *config) { c.maxTokens = n }
}

// WithRequestOptions passes options to the SDK for every request, for
// example option.WithHeader for a beta feature. They are applied after the
// package's own.
func WithRequestOptions(opts ...option.RequestOption) Option {
	return func(c *config) { c.extra = append(c.extra, opts...) }
}

// New returns the model named modelName ("claude-sonnet-4-5", ...). It
// fails when the name is empty or the base URL is not an http or https URL.
func New(modelName string, opts ...Option) (*Model, error) {
	if strings.TrimSpace(modelName) == "" {
		return nil, errors.New("anthropic: a model name is required, for example anthropic:claude-sonnet-4-5")
	}
	c := config{maxRetries: DefaultMaxRetries, maxTokens: DefaultMaxTokens}
	for _, opt := range opts {
		opt(&c)
	}
	base := cmp.Or(c.baseURL, os.Getenv("ANTHROPIC_BASE_URL"), DefaultBaseURL)
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: base URL %q is not an http(s) URL", base)
	}
	if c.maxTokens <= 0 {
		return nil, fmt.Errorf("anthropic: max tokens must be positive, not %d", c.maxTokens)
	}
	ro := []option.RequestOption{
		// The package resolves its configuration itself, so that a library
		// does not read profiles from the user's home directory.
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
		option.WithHTTPClient(cmp.Or(c.httpClient, http.DefaultClient)),
		option.WithMaxRetries(c.maxRetries),
		option.WithOpenTelemetryTracesContentMode(option.OpenTelemetryContentModeMetadataOnly),
	}
	key := os.Getenv("ANTHROPIC_API_KEY")
	if c.apiKey != nil {
		key = *c.apiKey
	}
	token := ""
	if c.apiKey == nil && key == "" {
		token = os.Getenv("ANTHROPIC_AUTH_TOKEN")
	}
	switch {
	case key != "":
		ro = append(ro, option.WithAPIKey(key))
	case token != "":
		ro = append(ro, option.WithAuthToken(token))
	}
	return &Model{
		name:      modelName,
		baseURL:   base,
		maxTokens: c.maxTokens,
		noKey:     key == "" && token == "" && u.Hostname() == "api.anthropic.com",
		service:   sdk.NewClient(append(ro, c.extra...)...).Messages,
	}, nil
}

// Name returns the model name requests ask for.
func (m *Model) Name() string { return m.name }

// Check implements model.Checker: it fails, wrapping model.ErrNoAPIKey,
// when the model would call the hosted API with no key.
func (m *Model) Check() error {
	if m.noKey {
		return fmt.Errorf("anthropic: %w: set ANTHROPIC_API_KEY or pass WithAPIKey", model.ErrNoAPIKey)
	}
	return nil
}

// BaseURL returns the endpoint the model calls.
func (m *Model) BaseURL() string { return m.baseURL }

// Stream sends req and streams the answer. The request is sent when the
// caller starts pulling; the response body is read only as events are
// pulled and is closed when the caller stops, the stream ends or ctx is
// done.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		if m.noKey {
			// Fail before sending: the API would only answer 401.
			yield(model.Event{}, &model.Error{Code: transcript.CodeAuth,
				Message: "no API key: set ANTHROPIC_API_KEY or pass WithAPIKey"})
			return
		}
		params, err := m.params(req)
		if err != nil {
			yield(model.Event{}, err)
			return
		}
		var acc accumulator
		if !provider.Drive(ctx, m.service.NewStreaming(ctx, params), yield, acc.event, apiError) {
			return
		}
		if !acc.stopped {
			yield(model.Event{}, &model.Error{Code: transcript.CodeProviderError,
				Message: "the stream ended before message_stop"})
			return
		}
		if err := acc.err(); err != nil {
			yield(model.Event{}, err)
		}
	}
}
