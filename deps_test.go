package spool_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// depsRules is the layering of the module, in the manner of
// go/build/deps_test.go: a statement of policy, not a record of what the
// code happens to import today. Change it only when the design changes.
//
// "a, b < c, d" means c and d may import a and b, and everything a and b
// may import. Each package appears exactly once on the right of a "<",
// which defines it; a name must be defined before it is used on the left.
// "a !< b" asserts that b may not import a, not even through others.
// Names are import paths below the module ("spool" is the root package);
// names in capitals are groups; NONE is the bottom. Comments start with #.
const depsRules = `
	# The wire format of a transcript, and the leaves beside it.
	NONE < transcript, internal/durable, internal/flock, web;
	internal/durable < seal;

	# The model contract. The request message lives here (history produces
	# it, providers consume it), so providers never depend on the windowing
	# rules, and history depends on nothing but the contract and transcript.
	transcript < model;
	model < history, tool, model/internal/provider, model/echo;
	model/internal/provider < model/openai, model/anthropic;
	model/echo, model/openai, model/anthropic < MODELS;

	# The store contract, its authors' kit, the stores and the checks every
	# store must pass. Stores know transcripts, encryption, durable files
	# and file locks; never the runtime, never a model.
	transcript < store/internal/rules < store < store/storekit;
	store < store/internal/sockbus;
	store/storekit, seal, internal/durable, internal/flock, store/internal/sockbus
	< store/filestore, store/sqlitestore, store/memstore,
	  store/pgstore, store/redisstore, store/idbstore;
	store/filestore, store/sqlitestore, store/memstore,
	store/pgstore, store/redisstore, store/idbstore < STORES;
	store/storekit < store/storetest, store/transfer;
	store/storetest < store/internal/sockbus/sockbustest;

	# The runtime, on the contracts; the file store is its default.
	history, tool, store/filestore < spool;

	# On top of the runtime: observers, channels, the HTTP server, the CLI.
	spool < telemetry;
	NONE < server/channel/internal/markdown;
	spool, server/channel/internal/markdown < server/channel;
	server/channel, server/channel/internal/markdown
	< server/channel/slack, server/channel/telegram, server/channel/discord;
	server/channel/slack, server/channel/telegram, server/channel/discord < CHANNELS;
	server/channel < server/channel/mock, server;
	NONE < internal/termmd;
	MODELS, STORES, store/transfer, telemetry, server, CHANNELS, web, internal/termmd < cmd/spool;

	# Test support: imported by tests only, never by the code above.
	NONE < internal/spooltest, internal/replicatest, internal/newcomer,
	       internal/browsertest, internal/testreport, internal/crosscheck, internal/benchsuite,
	       internal/faultnet, store/pgstore/pgtest;
	transcript, store < internal/benchdata;
	transcript < internal/transcriptgen;
	model < model/internal/streamfuzz;
	STORES, store/storetest < internal/teststores;
	server < internal/apicontract;
	# The deploy recipes' checks, tests only.
	internal/spooltest < deploy;
	# The example apps' tests.
	internal/spooltest, internal/browsertest < examples/usechat;
	server, model/echo, store/memstore, internal/apicontract < internal/chatfake;

	# The layers of the design, stated once more as prohibitions.
	# Stores never import the runtime or a model.
	spool, MODELS, history, tool !< STORES, store/storetest, store/transfer;
	# Models never import stores; history imports no store.
	store, STORES !< MODELS, history, tool;
	# Providers depend on the model contract, not on the windowing rules.
	history !< MODELS;
	# The runtime never imports the server, the CLI, channels or observers.
	server, server/channel, CHANNELS, telemetry, cmd/spool !< spool;
	# The code never imports test support.
	internal/spooltest, internal/replicatest, internal/benchdata, internal/transcriptgen, internal/faultnet,
	internal/teststores, internal/chatfake, internal/apicontract, store/storetest, store/pgstore/pgtest,
	store/internal/sockbus/sockbustest
	!< spool, server, CHANNELS, telemetry, cmd/spool, STORES, MODELS;
`

// TestDeps checks every import between the module's packages against
// depsRules, in every file whatever its build constraints (so the
// Windows- and browser-only files count too), and that every package of
// the module has its place in the rules.
func TestDeps(t *testing.T) {
	allowed, negatives := parseDepsRules(t, depsRules)
	imports := moduleImports(t)
	for _, pkg := range slices.Sorted(maps.Keys(imports)) {
		ok, placed := allowed[pkg]
		if !placed {
			t.Errorf("package %s is not in depsRules: give it its place in the layers", pkg)
			continue
		}
		for _, imp := range imports[pkg] {
			if !ok[imp] {
				t.Errorf("unexpected dependency: %s imports %s (depsRules allows it %s)", pkg, imp, strings.Join(slices.Sorted(maps.Keys(ok)), ", "))
			}
		}
	}
	for name := range allowed {
		if _, exists := imports[name]; !exists && strings.ToUpper(name) != name {
			t.Errorf("depsRules names %s, which is not a package of the module", name)
		}
	}
	for _, n := range negatives {
		if allowed[n.above][n.below] {
			t.Errorf("depsRules: %s !< %s, yet %s may import %s", n.below, n.above, n.above, n.below)
		}
	}
}

type negative struct{ below, above string }

// parseDepsRules returns, for each name, the set of names it may import
// (the transitive closure of the rules), and the negative assertions.
func parseDepsRules(t *testing.T, rules string) (map[string]map[string]bool, []negative) {
	t.Helper()
	allowed := map[string]map[string]bool{"NONE": {}}
	var negatives []negative
	var text strings.Builder
	for line := range strings.Lines(rules) {
		line, _, _ = strings.Cut(line, "#")
		text.WriteString(line + " ")
	}
	for stmt := range strings.SplitSeq(text.String(), ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if below, above, ok := strings.Cut(stmt, "!<"); ok {
			for _, a := range names(above) {
				for _, b := range names(below) {
					negatives = append(negatives, negative{below: b, above: a})
				}
			}
			continue
		}
		parts := strings.Split(stmt, "<")
		if len(parts) < 2 {
			t.Fatalf("depsRules: %q is neither a < b nor a !< b", strings.TrimSpace(stmt))
		}
		for i := 1; i < len(parts); i++ {
			lower := map[string]bool{}
			for _, b := range names(parts[i-1]) {
				set, defined := allowed[b]
				if !defined {
					t.Fatalf("depsRules: %s is used before it is defined", b)
				}
				lower[b] = true
				for x := range set {
					lower[x] = true
				}
			}
			delete(lower, "NONE")
			for _, a := range names(parts[i]) {
				if _, dup := allowed[a]; dup {
					t.Fatalf("depsRules: %s is defined twice", a)
				}
				allowed[a] = lower
			}
		}
	}
	delete(allowed, "NONE")
	return allowed, negatives
}

func names(list string) []string {
	var out []string
	for f := range strings.SplitSeq(list, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// moduleImports returns each package of the module (by its path below the
// module, "spool" for the root) with the module's packages its non-test
// files import. Folders of test data and hidden folders are not packages.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	const module = "github.com/spool-go/spool"
	name := func(path string) string {
		if path == module {
			return "spool"
		}
		return strings.TrimPrefix(path, module+"/")
	}
	imports := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		pkg := name(module + "/" + filepath.ToSlash(filepath.Dir(path)))
		if filepath.Dir(path) == "." {
			pkg = "spool"
		}
		if _, ok := imports[pkg]; !ok {
			imports[pkg] = nil // a package of tests only has its place too
		}
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, spec := range f.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			if (p == module || strings.HasPrefix(p, module+"/")) && !slices.Contains(imports[pkg], name(p)) {
				imports[pkg] = append(imports[pkg], name(p))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("go.mod"); err != nil {
		t.Fatal("TestDeps runs in the module's root folder:", err)
	}
	return imports
}

// TestErrorMessages holds the module to one convention for error
// messages: an error a package returns starts with the package's name
// ("store: session not found", "filestore: root /x is not a folder"), or
// with the error it wraps first ("%w: …", which carries its own). It
// checks the sentinel errors and the errors made in exported functions
// and methods; unexported helpers make details that their exported
// callers wrap, as do error types in their Err field. Commands print
// errors their own way.
func TestErrorMessages(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (d.Name() == "testdata" || d.Name() == "internal" || d.Name() == "cmd" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		prefix := f.Name.Name + ": "
		exported := func(n ast.Node) bool {
			switch d := n.(type) {
			case *ast.FuncDecl:
				return d.Name.IsExported()
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if vs, ok := spec.(*ast.ValueSpec); ok {
						for _, name := range vs.Names {
							if name.IsExported() {
								return true
							}
						}
					}
				}
			}
			return false
		}
		var check func(n ast.Node, detail bool)
		check = func(n ast.Node, detail bool) {
			ast.Inspect(n, func(n ast.Node) bool {
				if kv, ok := n.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Err" {
						check(kv.Value, true)
						return false
					}
				}
				call, ok := n.(*ast.CallExpr)
				if !ok || detail || len(call.Args) == 0 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				pkg, ok := sel.X.(*ast.Ident)
				if !ok || !(pkg.Name == "errors" && sel.Sel.Name == "New" || pkg.Name == "fmt" && sel.Sel.Name == "Errorf") {
					return true
				}
				lit, ok := call.Args[0].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				msg, _ := strconv.Unquote(lit.Value)
				if !strings.HasPrefix(msg, prefix) && !strings.HasPrefix(msg, "%w") {
					t.Errorf("%s: error %q starts with neither %q nor the error it wraps (%%w)", fset.Position(lit.Pos()), msg, prefix)
				}
				return true
			})
		}
		for _, decl := range f.Decls {
			if exported(decl) {
				check(decl, false)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
