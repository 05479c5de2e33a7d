package echo

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/model"
)

// TestParseSpec: the spec after "echo:" sets the name and the delay, and a
// bad option is an error naming it, through model.Open as --model gives it.
func TestParseSpec(t *testing.T) {
	for spec, want := range map[string]struct {
		name  string
		delay time.Duration
	}{
		"echo":                  {"echo", 0},
		"echo:parrot":           {"parrot", 0},
		"echo:?delay=50ms":      {"echo", 50 * time.Millisecond},
		"echo:parrot?delay=1s":  {"parrot", time.Second},
		"ECHO:?delay=0s":        {"echo", 0},
		"echo:slow?delay=1m30s": {"slow", 90 * time.Second},
	} {
		m, err := model.Open(spec, model.Config{})
		if err != nil {
			t.Errorf("Open(%q): %v", spec, err)
			continue
		}
		e := m.(*Model)
		if e.Name() != want.name || e.delay != want.delay {
			t.Errorf("Open(%q): name %q delay %v, want %q %v", spec, e.Name(), e.delay, want.name, want.delay)
		}
	}
	for spec, wantErr := range map[string]string{
		"echo:?delay=fast":         `delay "fast"`,
		"echo:?delay=-1s":          `delay "-1s"`,
		"echo:?delay=1s&delay=2s":  "delay given 2 times",
		"echo:?dealy=50ms":         `unknown option "dealy"`,
		"echo:?delay=%zz":          "bad options",
		"echo:parrot?speed=1&x=2":  "unknown option",
		"echo:?delay=50ms&other=1": `unknown option "other"`,
	} {
		_, err := model.Open(spec, model.Config{})
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Open(%q) = %v, want an error with %q", spec, err, wantErr)
		}
		if errors.Is(err, model.ErrUnknownProvider) {
			t.Errorf("Open(%q): %v is not an unknown provider", spec, err)
		}
	}
}

// Whatever the spec, ParseSpec does not panic, and what it accepts has a
// delay that is not negative and a name without the query.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"", "parrot", "?delay=50ms", "parrot?delay=1s", "?delay=-1s", "?delay=", "?&", "a?b?c", "?delay=1s&delay=2s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		opts, err := ParseSpec(spec)
		if err != nil {
			return
		}
		m := New(opts...)
		if m.delay < 0 {
			t.Fatalf("ParseSpec(%q): delay %v", spec, m.delay)
		}
		name, _, _ := strings.Cut(spec, "?")
		if name != "" && m.Name() != name || name == "" && m.Name() != DefaultName {
			t.Fatalf("ParseSpec(%q): name %q", spec, m.Name())
		}
	})
}
