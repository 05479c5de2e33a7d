package newcomer_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
)

// A Config with no Store keeps sessions in the file store under the user's
// data folder, with no store package imported: this test package imports
// only spool and the echo model (TestImportsStayMinimal holds it to that),
// so the file store reaches it only through package spool.
func TestDefaultStoreNeedsNoImport(t *testing.T) {
	data := t.TempDir()
	home := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	t.Setenv("HOME", home)
	t.Setenv("LOCALAPPDATA", data)
	want := filepath.Join(data, "spool", "sessions", "support")
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		want = filepath.Join(home, "Library", "Application Support", "spool", "sessions", "support")
	}

	agent, err := spool.New(spool.Config{Name: "support", Model: echo.New()})
	if err != nil {
		t.Fatalf("spool.New with no Store: %v (want the default file store)", err)
	}
	defer agent.Close()
	ctx := t.Context()
	sess, err := agent.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sess.Send(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "echo: hello" {
		t.Errorf("answer %q, want %q", res.Text, "echo: hello")
	}
	path := filepath.Join(want, sess.ID()+".jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the session's transcript is not where the default store keeps it: %v", err)
	}
	if !strings.Contains(string(b), `"type":"user.message"`) || !strings.Contains(string(b), "hello") {
		t.Errorf("%s does not hold the prompt:\n%s", path, b)
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", path, fi.Mode().Perm())
		}
	}
}

// The test above proves something only while this package imports no store:
// a store imported here would register "file:" by itself.
func TestImportsStayMinimal(t *testing.T) {
	allowed := map[string]bool{
		"github.com/spool-go/spool":            true,
		"github.com/spool-go/spool/model/echo": true,
	}
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(path, ".") && !allowed[path] {
				t.Errorf("%s imports %s: this package may import only the standard library, spool and model/echo, or TestDefaultStoreNeedsNoImport proves nothing", name, path)
			}
		}
	}
}
