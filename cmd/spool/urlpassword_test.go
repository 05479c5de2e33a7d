package main

import (
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
