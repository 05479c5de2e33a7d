package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzFlags is a flag set with a setting of each kind.
func fuzzFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var key string
	fs.String("name", "", "a string")
	fs.String("channels", "", "a list")
	fs.Duration("grace", time.Second, "a duration")
	fs.Int64("max-body", 1, "a number")
	fs.Bool("debug", false, "a boolean")
	secretVar(fs, &key, "api-key", "", "a secret")
	fs.String("config", "", "the file")
	return fs
}

// FuzzConfigFile gives the config file reader arbitrary TOML and a
// setting arbitrary text: reading never panics and fails only with a usage
// error; what it reads names only settings, and each value is one a flag
// takes or refuses; and a setting --print-config writes reads back as it
// was, so that its output is a config file.
func FuzzConfigFile(f *testing.F) {
	for _, seed := range []struct{ file, value string }{
		{`name = "x"` + "\n" + `grace = "30s"` + "\n" + `max-body = 4096` + "\n" + `debug = true`, "plain"},
		{`channels = ["slack", "discord"]`, "a,b"},
		{`name = 1.5`, `quote " and \ backslash`},
		{`[table]` + "\n" + `name = "x"`, "tab\tnewline\nnul\x00"},
		{`config = "other.toml"`, "name = \"x\" # not a comment"},
		{`nope = 1`, "ü € 😀 \u2028"},
		{`name = [1, 2]`, "postgres://u:pw@host/db"},
		{`name = 1979-05-27T07:32:00Z`, "'single' '''triple'''"},
		{`name = "x"` + "\n" + `name = "y"`, ""},
		{"name = \"\x7f\"", "\x1b[31mred"},
	} {
		f.Add(seed.file, seed.value)
	}
	f.Fuzz(func(t *testing.T, file, value string) {
		dir := t.TempDir()
		path := filepath.Join(dir, "spool.toml")
		os.WriteFile(path, []byte(file), 0o600)
		fs := fuzzFlags()
		vals, err := readConfigFile(fs, path)
		var ue *usageError
		if err != nil && !errors.As(err, &ue) {
			t.Fatalf("readConfigFile: %v (%T), want a usage error", err, err)
		}
		for k, v := range vals {
			fl := fs.Lookup(k)
			if fl == nil || metaFlags[k] {
				t.Fatalf("read setting %q, which is no setting", k)
			}
			fl.Value.Set(v)
		}

		// --print-config's output reads back: the string setting as it was.
		if !utf8.ValidString(value) || redactURL(value) != value {
			return // TOML holds only UTF-8; a URL's password is printed redacted
		}
		fs = fuzzFlags()
		fs.Set("name", value)
		var out bytes.Buffer
		(&settings{fs: fs, source: map[string]string{}}).print(&out, "serve")
		os.WriteFile(path, out.Bytes(), 0o600)
		vals, err = readConfigFile(fuzzFlags(), path)
		if err != nil || vals["name"] != value {
			t.Fatalf("--print-config with name %q wrote\n%s\nwhich reads back as %q, %v", value, out.Bytes(), vals["name"], err)
		}
	})
}
