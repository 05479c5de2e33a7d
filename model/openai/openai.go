// Package openai is a model.Model for OpenAI-compatible chat completions
// endpoints, built on the official openai-go SDK: OpenAI itself, and servers
// that speak the same API such as Ollama (http://localhost:11434/v1), vLLM
// and the llama.cpp server.
//
// Responses stream (with stream_options.include_usage), tools are offered as
// function tools with their JSON schema (one that gives no type, such as
// {} for a tool without arguments, as an object, which the API requires),
// and the session history maps onto
// chat messages one to one: system, user, assistant (with tool_calls) and
// tool (with tool_call_id) messages.
//
// Tool calls stream as argument fragments keyed by the call's index; each
// call is emitted as one model.EventToolCall, in index order, when the
// choice's finish_reason arrives. A stream that ends before it (a cut
// connection, or a server that answered with one JSON completion instead
// of a stream) fails with transcript.CodeProviderError after its text. Arguments that are
// not valid JSON are passed on as a JSON string (see model.ToolArguments);
// a call the server sent without an id gets a random one.
// A choice that finishes with "length" (the output token limit) or
// "content_filter" while calls are being written delivers none of them:
// the stream fails with transcript.CodeModelError after its text and
// usage, since a cut call's arguments are only a fragment.
//
// Configuration comes from options, then from the environment variables
// OPENAI_API_KEY and OPENAI_BASE_URL, then from defaults. No other OPENAI_*
// variable is read; pass SDK options with WithRequestOptions for headers
// such as the organization. Without a key, streams from api.openai.com fail
// at once with transcript.CodeAuth; other endpoints are called without one.
// Importing the package registers the providers "openai" and "ollama" with
// model.Open; "ollama" uses OLLAMA_HOST (see OllamaBaseURL) and never sends
// OPENAI_API_KEY.
//
// Errors the endpoint reports are *model.Error values whose Message holds
// the HTTP status and the provider's error type and code, never the
// provider's free text (which may quote the request); the SDK's error, with
// all details, is their Err. A 429 of type insufficient_quota (no credit
// left, or a spend limit reached) is transcript.CodeProviderError, not a
// rate limit: waiting does not end it. A request over the model's context
// window is transcript.CodeContextTooLong, as OpenAI says it
// (context_length_exceeded), as the llama.cpp server does
// (exceed_context_size_error) and as vLLM does (a 400 whose message
// reads "maximum context length"): the session can then be compacted
// (automatic compaction does it at once).
package openai

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

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/internal/provider"
	"github.com/spool-go/spool/transcript"
)

// Default endpoints.
const (
	DefaultBaseURL       = "https://api.openai.com/v1"
	DefaultOllamaBaseURL = "http://localhost:11434/v1"
)

// DefaultMaxRetries is how many times a request that failed with a
// connection error, a 408, 409, 429 or 5xx is retried when WithMaxRetries
// is not given. The SDK waits as the server's Retry-After asks (up to two
// minutes) or backs off exponentially; ctx cancels the wait.
const DefaultMaxRetries = 2

func init() {
	model.Register("openai", func(name string, cfg model.Config) (model.Model, error) {
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
	model.Register("ollama", func(name string, cfg model.Config) (model.Model, error) {
		base := cmp.Or(cfg.BaseURL, OllamaBaseURL(os.Getenv("OLLAMA_HOST")))
		// The key is set even when empty, so that an OPENAI_API_KEY in the
		// environment is never sent to a local server.
		opts := []Option{WithBaseURL(base), WithAPIKey(cfg.APIKey)}
		if cfg.MaxOutputTokens > 0 {
			opts = append(opts, WithMaxTokens(cfg.MaxOutputTokens))
		}
		return New(name, opts...)
	})
}

// OllamaBaseURL returns the OpenAI-compatible endpoint of the Ollama server
// that an OLLAMA_HOST value names ("127.0.0.1:11434", "http://host:port",
// "https://host/prefix"): a missing scheme means http, a missing port 11434,
// and a missing path /v1. An empty host gives DefaultOllamaBaseURL.
func OllamaBaseURL(host string) string {
	host = strings.TrimSpace(host)
	if host == "" {
		return DefaultOllamaBaseURL
	}
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return host // New reports the unusable URL
	}
	if u.Port() == "" && u.Scheme == "http" {
		u.Host += ":11434"
	}
	if strings.Trim(u.Path, "/") == "" {
		u.Path = "/v1"
	}
	return u.String()
}

// Model calls one model of an OpenAI-compatible endpoint. It is safe for
// concurrent use.
type Model struct {
	name         string
	baseURL      string
	service      oa.ChatCompletionService
	maxTokensOld bool  // send max_tokens rather than max_completion_tokens
	maxTokens    int64 // the cap of a request that sets none (0: the server's)
	noKey        bool  // no key configured for OpenAI's own API
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

// WithMaxTokens caps the answers of requests whose MaxOutputTokens is not
// set (max_completion_tokens; max_tokens for a server other than
// OpenAI's). By default they carry no cap, and the server's own applies.
func WithMaxTokens(n int64) Option {
	return func(c *config) { c.maxTokens = n }
}

// WithBaseURL sets the endpoint, for example http://localhost:11434/v1 for
// Ollama. It wins over OPENAI_BASE_URL.
func WithBaseURL(baseURL string) Option {
	return func(c *config) { c.baseURL = baseURL }
}

// WithAPIKey sets the key sent as a bearer token; an empty key sends none.
// It wins over OPENAI_API_KEY.
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

// WithRequestOptions passes options to the SDK for every request, for
// example option.WithOrganization or option.WithHeader. They are applied
// after the package's own.
func WithRequestOptions(opts ...option.RequestOption) Option {
	return func(c *config) { c.extra = append(c.extra, opts...) }
}

// New returns the model named modelName ("gpt-4o-mini", "llama3.2", ...)
// of the configured endpoint. It fails when the name is empty or the base
// URL is not an http or https URL.
func New(modelName string, opts ...Option) (*Model, error) {
	if strings.TrimSpace(modelName) == "" {
		return nil, errors.New("openai: a model name is required, for example openai:gpt-4o-mini")
	}
	c := config{maxRetries: DefaultMaxRetries, httpClient: http.DefaultClient}
	for _, opt := range opts {
		opt(&c)
	}
	base := cmp.Or(c.baseURL, os.Getenv("OPENAI_BASE_URL"), DefaultBaseURL)
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base URL %q is not an http(s) URL", base)
	}
	key := os.Getenv("OPENAI_API_KEY")
	if c.apiKey != nil {
		key = *c.apiKey
	}
	if c.httpClient == nil {
		c.httpClient = http.DefaultClient
	}
	if c.maxTokens < 0 {
		return nil, fmt.Errorf("openai: max tokens must be positive, not %d", c.maxTokens)
	}
	ro := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithAPIKey(key),
		option.WithHTTPClient(c.httpClient),
		option.WithMaxRetries(c.maxRetries),
		option.WithMiddleware(quotaIsFinal),
	}
	return &Model{
		name:    modelName,
		baseURL: base,
		// A service rather than oa.NewClient: the client would also read
		// every other OPENAI_* variable, and send, say, an organization
		// header to a local server.
		service: oa.NewChatCompletionService(append(ro, c.extra...)...),
		// OpenAI's own API wants max_completion_tokens (its reasoning
		// models refuse max_tokens); compatible servers have long accepted
		// max_tokens and not all know the newer field.
		maxTokensOld: u.Hostname() != "api.openai.com",
		maxTokens:    c.maxTokens,
		noKey:        key == "" && u.Hostname() == "api.openai.com",
	}, nil
}

// Name returns the model name requests ask for.
func (m *Model) Name() string { return m.name }

// Check implements model.Checker: it fails, wrapping model.ErrNoAPIKey,
// when the model would call the hosted API with no key.
func (m *Model) Check() error {
	if m.noKey {
		return fmt.Errorf("openai: %w: set OPENAI_API_KEY or pass WithAPIKey", model.ErrNoAPIKey)
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
				Message: "no API key: set OPENAI_API_KEY or pass WithAPIKey"})
			return
		}
		params, err := m.params(req)
		if err != nil {
			yield(model.Event{}, err)
			return
		}
		var acc accumulator
		if !provider.Drive(ctx, m.service.NewStreaming(ctx, params), yield, acc.chunk, apiError) {
			return
		}
		if err := acc.err(); err != nil {
			yield(model.Event{}, err)
		}
	}
}
