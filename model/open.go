package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Config carries settings that a caller (a command-line flag, a config
// file) wants to win over a provider's environment variables and defaults.
// Empty fields leave the provider's own default in place.
type Config struct {
	// BaseURL replaces the provider's endpoint (OPENAI_BASE_URL,
	// ANTHROPIC_BASE_URL, OLLAMA_HOST or the built-in default).
	BaseURL string
	// APIKey replaces the provider's key (OPENAI_API_KEY, ANTHROPIC_API_KEY).
	APIKey string
	// MaxOutputTokens caps each answer, in tokens, when more than zero,
	// where a request does not set its own cap (Request.MaxOutputTokens):
	// anthropic's default is DefaultMaxTokens, and an OpenAI-compatible
	// endpoint's is the server's own.
	MaxOutputTokens int64
}

// ErrUnknownProvider is returned by Open for a spec whose provider was never
// registered.
var ErrUnknownProvider = errors.New("model: unknown provider")

var (
	registryMu sync.RWMutex
	registry   = map[string]func(name string, cfg Config) (Model, error){}
)

// Register makes a provider available to Open under the given name. Provider
// packages call it from init, so importing a provider package (for its side
// effect, if nothing else) is what makes its specs work. Like
// database/sql.Register, it panics if open is nil, if the name is empty or
// contains a colon, or if the name is already taken: these are programming
// errors, found the first time the program starts.
func Register(provider string, open func(name string, cfg Config) (Model, error)) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if open == nil {
		panic("model: Register open function is nil")
	}
	if provider == "" || strings.Contains(provider, ":") {
		panic(fmt.Sprintf("model: Register provider name %q is empty or contains ':'", provider))
	}
	if _, dup := registry[provider]; dup {
		panic(fmt.Sprintf("model: Register called twice for provider %q", provider))
	}
	registry[provider] = open
}

// Providers returns the names of the registered providers, sorted.
func Providers() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Open returns the model a spec names. A spec is a provider, optionally
// followed by a colon and the provider's model name: "echo",
// "openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5", "ollama:llama3.2".
// The provider is matched case-insensitively; the model name is passed on
// as written. cfg's non-empty fields win over the provider's environment
// variables. An unknown provider gives an error that wraps
// ErrUnknownProvider and lists the registered ones.
func Open(spec string, cfg Config) (Model, error) {
	provider, name, _ := strings.Cut(strings.TrimSpace(spec), ":")
	provider = strings.ToLower(strings.TrimSpace(provider))
	if provider == "" {
		return nil, fmt.Errorf("model: empty model spec %q: want provider or provider:model (known providers: %s)",
			spec, strings.Join(Providers(), ", "))
	}
	registryMu.RLock()
	open, ok := registry[provider]
	registryMu.RUnlock()
	if !ok {
		known := Providers()
		list := strings.Join(known, ", ")
		if len(known) == 0 {
			list = "none; import a provider package such as github.com/spool-go/spool/model/echo"
		}
		return nil, fmt.Errorf("%w %q (known providers: %s)", ErrUnknownProvider, provider, list)
	}
	m, err := open(strings.TrimSpace(name), cfg)
	if err != nil {
		return nil, fmt.Errorf("model: open %q: %w", spec, err)
	}
	return m, nil
}
