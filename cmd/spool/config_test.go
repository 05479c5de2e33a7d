package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// printed runs spool serve --print-config and returns each setting's value
// and source, checking the output is itself a valid config file.
func printed(t *testing.T, vars map[string]string, args ...string) (map[string]any, map[string]string) {
	t.Helper()
	code, out, stderr := newCLI(t, vars).run("", append([]string{"serve", "--print-config"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var values map[string]any
	if _, err := toml.Decode(out, &values); err != nil {
		t.Fatalf("--print-config is not TOML: %v\n%s", err, out)
	}
	sources := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		name, rest, ok := strings.Cut(line, " = ")
		if !ok {
			continue
		}
		_, src, _ := strings.Cut(rest, "  # ")
		sources[name] = src
	}
	return values, sources
}

// Every setting: flag > environment > config file > default, for flags
// of serve itself, of the common flags and of the channel flags alike.
func TestServeSettingsPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "spool.toml")
	os.WriteFile(file, []byte(`
addr = "127.0.0.1:9001"
read-timeout = "7s"
grace = "11s"
max-body = 4096
expose-version = true
channels = ["slack", "discord"]
channel-turn-timeout = "3m"
agent = "from-file"
`), 0o600)
	vars := map[string]string{
		"SPOOL_CONFIG":               file,
		"SPOOL_READ_TIMEOUT":         "8s",
		"SPOOL_GRACE":                "12s",
		"SPOOL_CHANNEL_TURN_TIMEOUT": "4m",
		"SPOOL_LOG_FORMAT":           "json",
	}
	values, sources := printed(t, vars, "--grace", "13s", "--mode", "auto")
	want := []struct {
		name   string
		value  any
		source string
	}{
		{"grace", "13s", "flag"},
		{"mode", "auto", "flag"},
		{"read-timeout", "8s", "env SPOOL_READ_TIMEOUT"},
		{"channel-turn-timeout", "4m0s", "env SPOOL_CHANNEL_TURN_TIMEOUT"},
		{"log-format", "json", "env SPOOL_LOG_FORMAT"},
		{"addr", "127.0.0.1:9001", "file " + file},
		{"max-body", int64(4096), "file " + file},
		{"expose-version", true, "file " + file},
		{"channels", "slack,discord", "file " + file},
		{"agent", "from-file", "file " + file},
		{"keep-alive", "15s", "default"},
		{"scope", "project", "default"},
		{"log-level", "info", "default"},
	}
	for _, w := range want {
		if values[w.name] != w.value || sources[w.name] != w.source {
			t.Errorf("%s = %v (%s), want %v (%s)", w.name, values[w.name], sources[w.name], w.value, w.source)
		}
	}
	if _, ok := values["config"]; ok {
		t.Error("--config is printed as a setting")
	}
	// The printed settings are a config file that gives the same result.
	code, out, _ := newCLI(t, vars).run("", "serve", "--print-config", "--grace", "13s", "--mode", "auto")
	again := filepath.Join(dir, "again.toml")
	os.WriteFile(again, []byte(out), 0o600)
	values2, _ := printed(t, nil, "--config", again)
	if code != 0 || values2["read-timeout"] != "8s" || values2["grace"] != "13s" || values2["channels"] != "slack,discord" {
		t.Fatalf("the printed config read back: %v", values2)
	}
}

// --print-config never shows a secret: the keys, nor a password in a
// store URL, whether they came from a flag, the environment or the file.
func TestPrintConfigRedacts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "spool.toml")
	os.WriteFile(file, []byte(`model-key = "sk-file-secret-123"`+"\n"), 0o600)
	vars := map[string]string{"SPOOL_API_KEY": "env-secret-key-0123456789", "SPOOL_CONFIG": file}
	code, out, _ := newCLI(t, vars).run("", "serve", "--print-config", "--store", "postgres://spool:pg-secret-pw@db.internal:5432/spool")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, secret := range []string{"env-secret-key", "sk-file-secret", "pg-secret-pw"} {
		if strings.Contains(out, secret) {
			t.Fatalf("--print-config shows %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{`api-key = "<redacted>"  # env SPOOL_API_KEY`, `model-key = "<redacted>"  # file ` + file, `db.internal:5432`} {
		if !strings.Contains(out, want) {
			t.Fatalf("--print-config lacks %q:\n%s", want, out)
		}
	}
}

// A Postgres URL may carry its password as a query parameter
// (?password=, ?sslpassword=), which pgx reads like the one before the
// host: --print-config redacts it too.
func TestPrintConfigRedactsQueryPassword(t *testing.T) {
	code, out, _ := newCLI(t, nil).run("", "serve", "--print-config", "--store", "postgres://spool@db.internal:5432/spool?sslmode=require&password=pg-query-pw&sslpassword=pg-ssl-pw")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, secret := range []string{"pg-query-pw", "pg-ssl-pw"} {
		if strings.Contains(out, secret) {
			t.Fatalf("--print-config shows %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "db.internal:5432") || !strings.Contains(out, "sslmode=require") {
		t.Fatalf("--print-config does not name the store:\n%s", out)
	}
}

// A bad setting is exit 2 naming where it came from and what is wrong.
func TestServeSettingsErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o600)
		return p
	}
	cases := []struct {
		name string
		vars map[string]string
		args []string
		msg  []string
	}{
		{"unknown key", nil, []string{"--config", write("a.toml", "adr = \"x\"\n")}, []string{"a.toml", `unknown setting "adr"`, "addr"}},
		{"bad value in file", nil, []string{"--config", write("b.toml", "read-timeout = \"soon\"\n")}, []string{"b.toml", "read-timeout", "soon"}},
		{"duration as a number", nil, []string{"--config", write("c.toml", "grace = 30\n")}, []string{"c.toml", "grace", "not a duration", "30s"}},
		{"table", nil, []string{"--config", write("d.toml", "[server]\naddr = \"x\"\n")}, []string{"d.toml", "server", "flat"}},
		{"not TOML", nil, []string{"--config", write("e.toml", "addr = \n")}, []string{"e.toml", "line 1"}},
		{"missing file", nil, []string{"--config", filepath.Join(dir, "nope.toml")}, []string{"--config", "nope.toml"}},
		{"bad env", map[string]string{"SPOOL_MAX_BODY": "lots"}, nil, []string{"SPOOL_MAX_BODY", "lots", "whole number"}},
		{"bad log format", map[string]string{"SPOOL_LOG_FORMAT": "xml"}, nil, []string{"--log-format", "xml"}},
		{"bad log level", nil, []string{"--log-level", "loud"}, []string{"--log-level", "loud"}},
		{"user from env", map[string]string{"SPOOL_USER": "bob"}, nil, []string{"SPOOL_USER"}},
	}
	for _, c := range cases {
		code, _, stderr := newCLI(t, c.vars).run("", append([]string{"serve", "--store", "memory:"}, c.args...)...)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2 (%s)", c.name, code, stderr)
			continue
		}
		for _, m := range c.msg {
			if !strings.Contains(stderr, m) {
				t.Errorf("%s: %q does not say %q", c.name, stderr, m)
			}
		}
	}
}

// -h names each setting's variable.
func TestServeHelpNamesVariables(t *testing.T) {
	code, out, _ := newCLI(t, nil).run("", "serve", "-h")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, v := range []string{"SPOOL_ADDR", "SPOOL_STORE", "SPOOL_READ_TIMEOUT", "SPOOL_CHANNELS", "SPOOL_LOG_FORMAT", "SPOOL_CONFIG", "--print-config"} {
		if !strings.Contains(out, v) {
			t.Errorf("serve -h does not name %s", v)
		}
	}
}
