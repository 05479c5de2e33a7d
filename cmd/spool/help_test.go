package main

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/spool-go/spool/internal/spooltest"
)

// envNote is a flag's "(env SPOOL_X)" note in a usage line.
var envNote = regexp.MustCompile(`\(env SPOOL_[A-Z_]+\)`)

// Every command and group answers -h, --help and help on stdout with exit
// status 0, and the usage it prints names the command.
func TestHelpEverywhere(t *testing.T) {
	c := newCLI(t, nil)
	var walk func(path []string, cmd *command)
	walk = func(path []string, cmd *command) {
		path = append(path, cmd.name)
		args := path[1:]
		forms := [][]string{
			append(append([]string{}, args...), "-h"),
			append(append([]string{}, args...), "--help"),
			append([]string{"help"}, args...),
		}
		if cmd.subs != nil {
			forms = append(forms, append(append([]string{}, args...), "help"))
		}
		for _, f := range forms {
			code, out, errOut := c.run("", f...)
			if code != 0 || errOut != "" {
				t.Errorf("spool %s: exit %d, stderr %q; want 0 and the usage on stdout", strings.Join(f, " "), code, errOut)
			}
			if !strings.Contains(out, "usage: "+strings.Join(path, " ")) {
				t.Errorf("spool %s printed no usage of %q:\n%s", strings.Join(f, " "), strings.Join(path, " "), out)
			}
			for _, line := range strings.Split(out, "\n") {
				if m := envNote.FindAllString(line, -1); len(m) == 2 && m[0] == m[1] {
					t.Errorf("spool %s names %s twice: %q", strings.Join(f, " "), m[0], line)
				}
			}
		}
		for _, sub := range cmd.subs {
			walk(path, sub)
		}
	}
	walk(nil, commands)

	// A group without its command, or with an unknown one, is still a
	// usage error on stderr.
	for _, args := range [][]string{{}, {"sessions"}, {"sessions", "nope"}, {"nope"}} {
		code, out, errOut := c.run("", args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "usage: ") {
			t.Errorf("spool %s: exit %d, stdout %q, stderr %q; want 2 and the usage on stderr", strings.Join(args, " "), code, out, errOut)
		}
	}
}

// spool version and --version print the module path, its version and the
// commit the binary was built from.
func TestVersion(t *testing.T) {
	bin := spooltest.Binary(t)
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	// The go command stamps the commit only in a repository whose .git is
	// a folder: not in a linked worktree, whose .git is a file.
	if fi, serr := os.Stat("../../.git"); serr != nil || !fi.IsDir() {
		err = errors.New("not a plain clone")
	}
	for _, arg := range []string{"version", "--version"} {
		out, err2 := exec.Command(bin, arg).CombinedOutput()
		if err2 != nil {
			t.Fatalf("spool %s: %v\n%s", arg, err2, out)
		}
		s := string(out)
		// A build stamped from a clone has a pseudo-version, one without
		// VCS information "(devel)", go install …@v1.2.3 the tag.
		if !versionRE.MatchString(s) || !strings.Contains(s, " github.com/spool-go/spool ") {
			t.Errorf("spool %s printed %q; want the version and the module path", arg, s)
		}
		if err == nil && !strings.Contains(s, "commit "+strings.TrimSpace(string(rev))) {
			t.Errorf("spool %s printed %q; want the commit %s it was built from", arg, s, rev)
		}
	}
}

var versionRE = regexp.MustCompile(`^spool (\(devel\)|v[0-9]+\.[0-9]+\.[0-9]+\S*) `)
