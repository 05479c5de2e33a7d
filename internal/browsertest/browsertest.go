// Package browsertest runs tests in headless Chromium from go test on the
// machine that runs go test: Chromium finds (or skips the test for) the
// browser, NewBrowser starts one with a fresh profile and stops it when the
// test ends, and RunWasm compiles a package's tests to WebAssembly, runs
// them in a page and reports their result and output as the calling test's.
//
// Without Chromium a test using it is skipped with a message, except when
// the environment has CI=true, where that is a failure (.ci/run installs
// Debian's chromium package). SPOOL_CHROMIUM names the browser to use.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium returns the path of the Chromium (or Chrome) to run: the
// SPOOL_CHROMIUM variable, else /usr/bin/chromium, else the first of
// chromium, chromium-browser, google-chrome on PATH. Without one it skips
// t, or fails it under CI=true.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("SPOOL_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("SPOOL_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no Chromium: install Debian's chromium package (apt-get install chromium) or set SPOOL_CHROMIUM"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Flags are the command-line switches every browser gets, besides a fresh
// profile: headless, no GPU, and nothing that reaches the network on its
// own (updates, sync, QUIC probes), so a test talks only to its own server
// on loopback. --no-sandbox lets it run as root in containers.
var Flags = []chromedp.ExecAllocatorOption{
	chromedp.Headless,
	chromedp.NoSandbox,
	chromedp.DisableGPU,
	chromedp.NoFirstRun,
	chromedp.NoDefaultBrowserCheck,
	chromedp.Flag("disable-quic", true),
	chromedp.Flag("disable-background-networking", true),
	chromedp.Flag("disable-component-update", true),
	chromedp.Flag("disable-sync", true),
	chromedp.Flag("disable-extensions", true),
	chromedp.Flag("disable-default-apps", true),
	chromedp.Flag("disable-breakpad", true),
	chromedp.Flag("disable-dev-shm-usage", true), // /dev/shm is small in containers
	chromedp.Flag("disable-background-timer-throttling", true),
	chromedp.Flag("disable-renderer-backgrounding", true),
	chromedp.Flag("metrics-recording-only", true),
	chromedp.Flag("password-store", "basic"),
}

// NewBrowser starts Chromium (see Chromium) with Flags and a new, empty
// profile directory, and returns the context of its first tab. The
// browser is closed, its processes ended and its profile removed when the
// test ends. Errors chromedp logs (events of a newer browser it cannot
// decode) go to t.Log only with -v.
func NewBrowser(t testing.TB) context.Context {
	t.Helper()
	path := Chromium(t)
	opts := append([]chromedp.ExecAllocatorOption{chromedp.ExecPath(path)}, Flags...)
	// No UserDataDir option: chromedp then makes a fresh temporary profile,
	// and after the browser exits kills any of its child processes still
	// running with that profile and removes the directory.
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	logf := func(format string, args ...any) {
		if testing.Verbose() {
			t.Logf("chromedp: "+format, args...)
		}
	}
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithErrorf(func(format string, args ...any) {
		if !strings.Contains(format, "could not unmarshal event") {
			logf(format, args...)
		}
	}))
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		cancel()
		cancelAlloc()
		t.Fatalf("start %s: %v", path, err)
	}
	t.Cleanup(func() {
		// Close the browser gracefully (and wait for it), then free the
		// allocator, which waits for the process and its profile.
		closeCtx, stop := context.WithTimeout(ctx, 10*time.Second)
		defer stop()
		if err := chromedp.Cancel(closeCtx); err != nil {
			t.Logf("close the browser: %v (it is killed instead)", err)
		}
		cancel()
		cancelAlloc()
	})
	return ctx
}
