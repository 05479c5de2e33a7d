package newcomer_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The README's Go blocks go through the compiler. A block is a fragment
// (statements, or declarations without their imports), so each one is
// compiled inside a fill-in: a Go file in testdata/readme (NAME.go.tmpl) that declares
// what the fragment uses without defining it (a ctx, a tool, a store of
// one's own), with the line
//
//	//README
//
// where the block goes, and a first line
//
//	// README block: <the block's first line of code>
//
// naming its block. Each filled-in block is one package that exists only in
// the go command's -overlay (nothing is written into the module), and the
// compiler's errors point at README.md lines through //line directives. A
// block without a fill-in, or a fill-in without its block, fails the test.

const readmePath = "../../README.md"

// readmeBlock is one fenced block of README.md.
type readmeBlock struct {
	lang  string
	line  int // of the first line inside the fence
	lines []string
}

func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	var out []readmeBlock
	var cur *readmeBlock
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &readmeBlock{lang: strings.TrimSpace(strings.TrimPrefix(line, "```")), line: n + 1}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	if cur != nil {
		t.Fatalf("README.md:%d: a fenced block that never closes", cur.line-1)
	}
	return out
}

// firstCode is the block's first line that is code: neither blank nor a
// build constraint.
func (b readmeBlock) firstCode() string {
	for _, l := range b.lines {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "//go:build") {
			return l
		}
	}
	return ""
}

// constraint is the block's //go:build line, if any.
func (b readmeBlock) constraint() string {
	for _, l := range b.lines {
		if strings.HasPrefix(l, "//go:build") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// fillIn is one file of testdata/readme.
type fillIn struct {
	name, path string
	block      string // the first code line of the block it holds
	lines      []string
	used       bool
}

const (
	fillInHeader = "// README block: "
	fillInMarker = "//README"
)

func fillIns(t *testing.T) map[string]*fillIn {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "readme", "*.go.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*fillIn{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f := &fillIn{name: filepath.Base(p), lines: strings.Split(string(b), "\n")}
		if f.path, err = filepath.Abs(p); err != nil {
			t.Fatal(err)
		}
		for _, l := range f.lines {
			if strings.HasPrefix(l, fillInHeader) {
				f.block = strings.TrimSpace(strings.TrimPrefix(l, fillInHeader))
				break
			}
		}
		if f.block == "" {
			t.Fatalf("%s: no %q line naming its README block", p, fillInHeader)
		}
		if out[f.block] != nil {
			t.Fatalf("%s and %s both fill in the block %q", p, out[f.block].path, f.block)
		}
		out[f.block] = f
	}
	return out
}

// fill returns the fill-in with the block in place of its marker, and
// //line directives so that errors name README.md and the fill-in's own
// lines.
func (f *fillIn) fill(t *testing.T, b readmeBlock, readme string) []byte {
	t.Helper()
	var out bytes.Buffer
	placed := false
	for i, l := range f.lines {
		if strings.TrimSpace(l) != fillInMarker {
			out.WriteString(l + "\n")
			continue
		}
		if placed {
			t.Fatalf("%s: %s twice", f.path, fillInMarker)
		}
		placed = true
		fmt.Fprintf(&out, "//line %s:%d\n", readme, b.line)
		for _, bl := range b.lines {
			if strings.HasPrefix(bl, "//go:build") {
				bl = "" // the fill-in carries the constraint, before its package clause
			}
			out.WriteString(bl + "\n")
		}
		fmt.Fprintf(&out, "//line %s:%d\n", f.path, i+2)
	}
	if !placed {
		t.Fatalf("%s: no %s line where the block goes", f.path, fillInMarker)
	}
	return out.Bytes()
}

func TestREADMEGoBlocksCompile(t *testing.T) {
	goTool := goCommand(t)
	readme, err := filepath.Abs(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(readme)
	fills := fillIns(t)
	overlay := t.TempDir()
	replace := map[string]string{}
	var host, wasm []string // package directories to build
	n := 0
	for _, b := range readmeBlocks(t) {
		if b.lang != "go" {
			continue
		}
		f := fills[b.firstCode()]
		if f == nil {
			t.Errorf("README.md:%d: a Go block with no fill-in: add a file to testdata/readme starting %q", b.line, fillInHeader+b.firstCode())
			continue
		}
		f.used = true
		src := f.fill(t, b, readme)
		if c := b.constraint(); c != "" && !bytes.HasPrefix(src, []byte(c+"\n")) {
			t.Errorf("README.md:%d: the block says %q; its fill-in %s must start with the same line", b.line, c, f.name)
			continue
		}
		n++
		tmp := filepath.Join(overlay, fmt.Sprintf("block%d.go", n))
		if err := os.WriteFile(tmp, src, 0o600); err != nil {
			t.Fatal(err)
		}
		// A package directory that does not exist: only the overlay has it.
		dir := filepath.Join(root, "internal", "newcomer", "readme-overlay", fmt.Sprintf("block%d", n))
		replace[filepath.Join(dir, "block.go")] = tmp
		if strings.Contains(b.constraint(), "wasm") {
			wasm = append(wasm, dir)
		} else {
			host = append(host, dir)
		}
	}
	for _, f := range fills {
		if !f.used {
			t.Errorf("%s fills in a README block that is gone (%q): remove it or fix its header", f.path, f.block)
		}
	}
	if n == 0 {
		t.Fatal("README.md has no Go block")
	}
	ov, _ := json.Marshal(map[string]any{"Replace": replace})
	ovPath := filepath.Join(overlay, "overlay.json")
	if err := os.WriteFile(ovPath, ov, 0o600); err != nil {
		t.Fatal(err)
	}
	build := func(env []string, dirs []string) {
		if len(dirs) == 0 {
			return
		}
		cmd := exec.Command(goTool, append([]string{"build", "-overlay", ovPath}, dirs...)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("a Go block of README.md does not compile (GOOS/GOARCH %s):\n%s", platform(env), out)
		}
	}
	build(nil, host)
	build([]string{"GOOS=js", "GOARCH=wasm"}, wasm)
}

// Every `go doc` command the README shows works, and prints a package
// comment.
func TestREADMEGoDocCommands(t *testing.T) {
	goTool := goCommand(t)
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("`go doc ([^`]+)`")
	var args []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		if !slices.Contains(args, m[1]) {
			args = append(args, m[1])
		}
	}
	if len(args) == 0 {
		t.Fatal("README.md shows no `go doc` command")
	}
	for _, a := range args {
		cmd := exec.Command(goTool, append([]string{"doc"}, strings.Fields(a)...)...)
		cmd.Dir = "../.."
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("README.md says `go doc %s`; it fails: %v\n%s", a, err, out)
			continue
		}
		// The package clause, then its comment.
		lines := strings.SplitN(string(out), "\n", 4)
		if len(lines) < 3 || !strings.HasPrefix(lines[0], "package ") || strings.TrimSpace(lines[2]) == "" {
			t.Errorf("`go doc %s` prints no package comment:\n%s", a, out)
		}
	}
}

// The README says how to install the spool command before it first runs
// a bare `spool` in a shell block.
func TestREADMEInstallsBeforeUse(t *testing.T) {
	const install = "go install github.com/spool-go/spool/cmd/spool@latest"
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte(install))
	if at < 0 {
		t.Fatalf("README.md never says %q", install)
	}
	if !bytes.Contains(b, []byte("go install ./cmd/spool")) {
		t.Errorf("README.md never says how to install from a clone (go install ./cmd/spool)")
	}
	installLine := bytes.Count(b[:at], []byte("\n")) + 1
	for _, blk := range readmeBlocks(t) {
		if blk.lang != "sh" {
			continue
		}
		for i, l := range blk.lines {
			if strings.HasPrefix(strings.TrimSpace(l), "spool ") && blk.line+i < installLine {
				t.Errorf("README.md:%d runs %q before line %d says how to install spool", blk.line+i, strings.TrimSpace(l), installLine)
			}
		}
	}
}

// goCommand returns the go command that built this test.
func goCommand(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("these tests run the go command: %v", err)
	}
	return p
}

func platform(env []string) string {
	if len(env) == 0 {
		return "of this machine"
	}
	return strings.Join(env, " ")
}
