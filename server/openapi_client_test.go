package server_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
)

// A client generated from the document works: openapi-typescript makes
// the types, testdata/openapi/client.ts (the README's example) uses them
// through openapi-fetch, tsc --strict type-checks it, and node runs it
// against a server. Needs node and npm (the packages are installed once
// into the user's cache folder); skipped without them, except under
// CI=true.
func TestOpenAPIClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the generated client test installs npm packages")
	}
	node, dir := npmPackages(t, "typescript@5.9.3", "openapi-typescript@7.13.0", "openapi-fetch@0.17.0", "@types/node@20.19.9")
	work := t.TempDir()
	os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(work, "node_modules"))
	os.WriteFile(filepath.Join(work, "package.json"), []byte(`{"private":true,"type":"module"}`), 0o644)
	src, err := os.ReadFile(filepath.Join("testdata", "openapi", "client.ts"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(work, "client.ts"), src, 0o644)
	doc, _ := filepath.Abs("openapi.json")
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(node, append([]string{filepath.Join(work, "node_modules", name)}, args...)...)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	run("openapi-typescript/bin/cli.js", doc, "-o", "spool-api.d.ts")
	run("typescript/bin/tsc", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--skipLibCheck", "--outDir", "out", "client.ts")

	e := newEnv(t, spool.Config{}, server.Options{Keys: mustKeys(t)})
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "out/client.js", e.http.URL, "project-key-0123456789")
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the generated client: %v\n%s", err, out)
	}
	for _, want := range []string{"answer: echo: hello (ok, ", "sessions: ts-client", "missing: 404 session_not_found"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("the generated client printed %q, not %q", out, want)
		}
	}
}

// npmPackages installs pkgs (name@version) once into a folder of the
// user's cache named by them, and returns node and that folder. Without
// node and npm, or when npm cannot install, the test is skipped, except
// under CI=true where it fails.
func npmPackages(t *testing.T, pkgs ...string) (node, dir string) {
	t.Helper()
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and node or npm is missing")
		}
		t.Skip("node or npm not found: skipped")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir = filepath.Join(cache, "spool-test", strings.NewReplacer("@", "-", "/", "-").Replace(strings.Join(pkgs, "+")))
	if _, err := os.Stat(filepath.Join(dir, ".installed")); err == nil {
		return node, dir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private":true,"type":"module"}`), 0o644)
	cmd := exec.Command(npm, append([]string{"install", "--no-audit", "--no-fund", "--loglevel=error"}, pkgs...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("npm install %v: %v\n%s", pkgs, err, out)
		}
		t.Skipf("npm install %v failed (offline?): %v\n%s", pkgs, err, out)
	}
	os.WriteFile(filepath.Join(dir, ".installed"), nil, 0o644)
	return node, dir
}
