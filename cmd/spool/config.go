package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Settings: every flag of a command that takes them (spool serve) is a
// setting, read from the command line, else from the environment variable
// SPOOL_<NAME> (the flag's name in capitals, - as _: --read-timeout is
// SPOOL_READ_TIMEOUT), else from the config file (--config FILE or
// SPOOL_CONFIG, TOML, keys named as the flags: read-timeout = "30s"),
// else the flag's default. One mechanism over the whole flag set: a flag
// registered on the command's flag set is a setting with no more code.

// Flags that steer the settings and are not settings themselves.
var metaFlags = map[string]bool{"config": true, "print-config": true}

// envName is the environment variable of the setting name.
func envName(name string) string {
	return "SPOOL_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// secretValue is a string flag whose value is a secret: --print-config
// redacts it.
type secretValue struct{ p *string }

func (s secretValue) String() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}
func (s secretValue) Set(v string) error { *s.p = v; return nil }
func (s secretValue) Get() any           { return s.String() }

// secretVar registers a secret string flag.
func secretVar(fs *flag.FlagSet, p *string, name, value, usage string) {
	*p = value
	fs.Var(secretValue{p}, name, usage)
}

// settings records where each setting's value came from.
type settings struct {
	fs     *flag.FlagSet
	source map[string]string // by flag name: "flag", "env SPOOL_X", "file PATH", "default"
}

// withEnvNames appends the variable of each setting to its usage line, so
// that -h lists them; call it once every flag is registered. A flag shared
// with the other commands (--store) already names its variable.
func withEnvNames(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		note := " (env " + envName(f.Name) + ")"
		if !metaFlags[f.Name] && !strings.Contains(f.Usage, note) {
			f.Usage += note
		}
	})
}

// resolveSettings gives every flag not on the command line its value from
// the environment or the config file, in that order of precedence. A bad
// value is a usage error naming the variable, or the file and the key.
func resolveSettings(fs *flag.FlagSet, env *environ, configFile string) (*settings, error) {
	st := &settings{fs: fs, source: map[string]string{}}
	fs.Visit(func(f *flag.Flag) { st.source[f.Name] = "flag" })
	if configFile == "" {
		configFile = env.getenv("SPOOL_CONFIG")
	}
	file, err := readConfigFile(fs, configFile)
	if err != nil {
		return nil, err
	}
	var problem error
	fs.VisitAll(func(f *flag.Flag) {
		if problem != nil || metaFlags[f.Name] || st.source[f.Name] == "flag" {
			return
		}
		if v := env.getenv(envName(f.Name)); v != "" {
			if err := f.Value.Set(v); err != nil {
				problem = usagef("%s=%q: %s", envName(f.Name), redactValue(f, v), setProblem(f, err))
				return
			}
			st.source[f.Name] = "env " + envName(f.Name)
			return
		}
		if v, ok := file[f.Name]; ok {
			if err := f.Value.Set(v); err != nil {
				problem = usagef("--config %s: %s = %q: %s", configFile, f.Name, redactValue(f, v), setProblem(f, err))
				return
			}
			st.source[f.Name] = "file " + configFile
			return
		}
		st.source[f.Name] = "default"
	})
	return st, problem
}

// readConfigFile reads a TOML file of settings into flag values as text.
// A key that names no flag, a table, or a value of the wrong kind is an
// error naming the file, the key and what is expected.
func readConfigFile(fs *flag.FlagSet, path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("--config: %v", err)
	}
	var raw map[string]any
	if _, err := toml.Decode(string(b), &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, usagef("--config %s: line %d: %s", path, pe.Position.Line, pe.Message)
		}
		return nil, usagef("--config %s: %v", path, err)
	}
	out := map[string]string{}
	var known []string
	fs.VisitAll(func(f *flag.Flag) {
		if !metaFlags[f.Name] {
			known = append(known, f.Name)
		}
	})
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, table := raw[k].(map[string]any); table {
			return nil, usagef("--config %s: %s is a table; settings are flat: name = value", path, k)
		}
		f := fs.Lookup(k)
		if f == nil || metaFlags[k] {
			return nil, usagef("--config %s: unknown setting %q (the settings are the flags of the command: %s)", path, k, strings.Join(known, ", "))
		}
		v, err := settingText(raw[k])
		if err != nil {
			return nil, usagef("--config %s: %s: %v", path, k, err)
		}
		out[k] = v
	}
	return out, nil
}

// settingText is a TOML value as a flag's text: strings as they are,
// numbers and booleans written out, an array of strings joined by commas
// (for the list flags: channels = ["slack", "discord"]).
func settingText(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return "", errors.New("a list must hold strings")
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("a %T is not a setting's value (give a string, number or boolean)", v)
}

// setProblem says what is wrong with a value f refused: the flag package
// says only "parse error" for a number, a duration or a boolean.
func setProblem(f *flag.Flag, err error) string {
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case time.Duration:
			return "not a duration (give a number with a unit: 30s, 2m, 1h30m)"
		case bool:
			return "not a boolean (give true or false)"
		case int, int64, uint, uint64:
			return "not a whole number"
		}
	}
	return err.Error()
}

// isSecret reports whether f's value must not be printed.
func isSecret(f *flag.Flag) bool {
	_, ok := f.Value.(secretValue)
	return ok
}

// redactValue returns v as it may be shown: a secret's is "<redacted>",
// and a URL's password is replaced too (a store URL can hold one).
func redactValue(f *flag.Flag, v string) string {
	if isSecret(f) && v != "" {
		return "<redacted>"
	}
	return redactURL(v)
}

// redactUnparsed redacts v as a URL whose password holds a '/', '?' or
// '#' that was not escaped: those end the URL's user part for url.Parse,
// so "postgres://u:pa#ss@host/db" does not parse, or parses without a
// password, and its password would be shown whole. What lies between the
// scheme's "://" and the last '@' is the user part, and all of it after
// its first ':' is replaced; so are the password parameters of what
// follows a '?' after it.
func redactUnparsed(v string) string {
	scheme, rest, ok := strings.Cut(v, "://")
	if !ok {
		return v
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		if user, _, has := strings.Cut(rest[:at], ":"); has {
			rest = user + ":xxxxx" + rest[at:]
		}
	}
	if base, query, has := strings.Cut(rest, "?"); has {
		rest = base + "?" + redactQuery(query)
	}
	return scheme + "://" + rest
}

// redactURL returns v with its password replaced when it is a URL that
// has one (a store URL can), else v as it is: what an error or a setting
// may show of it. A Postgres URL may also carry one as a query parameter
// (?password=, ?sslpassword=), which pgx reads as well.
func redactURL(v string) string {
	u, err := url.Parse(v)
	if _, rest, ok := strings.Cut(v, "://"); err != nil || (u.User == nil && ok && strings.Contains(rest, "@")) {
		// Refused, or parsed without a user part though it has an '@':
		// "postgres://u:123#x@host/db" parses as host u, port 123, and
		// the rest a fragment.
		return redactUnparsed(v)
	}
	changed := false
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			changed = true
		}
	}
	if q := redactQuery(u.RawQuery); q != u.RawQuery {
		u.RawQuery, changed = q, true
	}
	if !changed {
		return v
	}
	return u.String()
}

// redactQuery returns a URL's raw query with the values of its password
// parameters replaced, parameter by parameter, so that the others keep
// their order and spelling.
func redactQuery(raw string) string {
	if raw == "" {
		return raw
	}
	params := strings.Split(raw, "&")
	for i, p := range params {
		name, _, _ := strings.Cut(p, "=")
		if n, err := url.QueryUnescape(name); err == nil && isPasswordParam(n) {
			params[i] = name + "=xxxxx"
		}
	}
	return strings.Join(params, "&")
}

// isPasswordParam reports whether a URL's query parameter name holds a
// password for the database drivers spool uses.
func isPasswordParam(name string) bool {
	return strings.EqualFold(name, "password") || strings.EqualFold(name, "sslpassword")
}

// print writes the settings as a TOML config file, each with where its
// value came from, secrets redacted.
func (st *settings) print(w io.Writer, command string) {
	fmt.Fprintf(w, "# %s settings: flag > environment (SPOOL_*) > config file > default\n", command)
	st.fs.VisitAll(func(f *flag.Flag) {
		if metaFlags[f.Name] {
			return
		}
		fmt.Fprintf(w, "%s = %s  # %s\n", f.Name, tomlValue(f, redactValue(f, f.Value.String())), st.source[f.Name])
	})
}

// tomlValue writes a flag's value as TOML: booleans and integers bare,
// everything else (durations too) as a string.
func tomlValue(f *flag.Flag, text string) string {
	if g, ok := f.Value.(flag.Getter); ok && !isSecret(f) {
		switch v := g.Get().(type) {
		case bool:
			return strconv.FormatBool(v)
		case int, int64, uint, uint64:
			return fmt.Sprint(v)
		case time.Duration:
			text = v.String()
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b) // a JSON string is a TOML basic string, but for DEL
	enc.SetEscapeHTML(false)
	enc.Encode(text)
	// JSON leaves DEL (0x7f) bare, which TOML refuses in a string.
	return strings.ReplaceAll(strings.TrimSpace(b.String()), "\x7f", `\u007f`)
}
