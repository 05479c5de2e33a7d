package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/spool-go/spool/seal"
)

// A store URL's password never reaches an error message, which goes to
// stderr and from there, for a server, to its logs: the errors that name
// a database store's URL (encryption asked for where it is not available;
// keys rotate on a store that is not encrypted at rest) show it redacted.
func TestStoreURLPasswordNotInErrors(t *testing.T) {
	const password = "hunter2-zebra-4417"
	for _, tc := range []struct {
		name string
		vars map[string]string
		args []string
		want string // how the error names the store
	}{
		{"encryption key with postgres", map[string]string{seal.EnvKey: newKeyValue()},
			[]string{"sessions", "ls", "--store", "postgres://spool:" + password + "@127.0.0.1:1/spool"}, "xxxxx@127.0.0.1"},
		{"encryption key with redis", map[string]string{seal.EnvKey: newKeyValue()},
			[]string{"sessions", "ls", "--store", "redis://:" + password + "@127.0.0.1:1/0"}, "xxxxx@127.0.0.1"},
		{"encryption key with postgres, password in the query", map[string]string{seal.EnvKey: newKeyValue()},
			[]string{"sessions", "ls", "--store", "postgres://spool@127.0.0.1:1/spool?password=" + password}, "127.0.0.1:1/spool?password=xxxxx"},
		{"keys rotate on postgres", nil,
			[]string{"keys", "rotate", "--store", "postgres://spool:" + password + "@127.0.0.1:1/spool"}, "xxxxx@127.0.0.1"},
		// A '#', '/' or '?' in a password that was not escaped ends the
		// URL's user part there: the URL does not parse.
		{"keys rotate, a password with a #", nil,
			[]string{"keys", "rotate", "--store", "postgres://spool:" + password + "#x@127.0.0.1:1/spool"}, "xxxxx@127.0.0.1"},
		{"encryption key with postgres, a password with a /", map[string]string{seal.EnvKey: newKeyValue()},
			[]string{"sessions", "ls", "--store", "postgres://spool:" + password + "/x@127.0.0.1:1/spool"}, "bad store URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := newCLI(t, tc.vars).run("", tc.args...)
			if code == 0 {
				t.Fatalf("exit 0\n%s", out)
			}
			if strings.Contains(out+errOut, password) {
				t.Fatalf("the store URL's password is printed:\n%s%s", out, errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Fatalf("the error does not name the store (redacted):\n%s", errOut)
			}
		})
	}
}

// FuzzRedactURL: a store URL's password, escaped or not (a '/', '?' or
// '#' in it makes the URL fail to parse), is never in what redactURL
// shows of the URL, whether it is in the user part or in a password
// query parameter.
func FuzzRedactURL(f *testing.F) {
	for _, seed := range [][2]string{
		{"spool", "hunter2"}, {"", "s3cr3t#x"}, {"u", "a/b?c"}, {"u:v", "p%41ss"}, {"ü", "pässwörd"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, user, password string) {
		if len(password) < 4 || strings.ContainsAny(password, "@:") || strings.ContainsAny(user, "@/?#") ||
			strings.Contains("postgres://"+user+":@127.0.0.1:5432/spool?sslmode=disable", password) {
			return // not a password a URL can hold there, or one the rest of the URL shows anyway
		}
		for _, v := range []string{
			"postgres://" + user + ":" + password + "@127.0.0.1:5432/spool?sslmode=disable",
			"postgres://" + user + ":" + url.QueryEscape(password) + "@127.0.0.1:5432/spool",
			"postgres://" + user + "@127.0.0.1:5432/spool?password=" + url.QueryEscape(password),
		} {
			if got := redactURL(v); strings.Contains(got, password) || strings.Contains(got, url.QueryEscape(password)) {
				t.Fatalf("redactURL(%q) = %q, which shows the password", v, got)
			}
		}
	})
}
