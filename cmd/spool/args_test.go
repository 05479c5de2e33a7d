package main

import (
	"strings"
	"testing"
)

// export --all --agent X exports only agent X's sessions; with none,
// nothing, not every agent's sessions; and a session named twice is
// exported once (an import of the file would conflict with the second).
func TestExportSelection(t *testing.T) {
	c := newCLI(t, nil)
	url := tempStoreURL(t)
	if code, _, errs := c.run("hello\n", "chat", "--store", url, "--session", "s1"); code != 0 {
		t.Fatalf("chat: %d %s", code, errs)
	}
	code, out, errs := c.run("", "sessions", "export", "--all", "--agent", "other", "--store", url)
	if code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}
	if strings.Contains(out, `"agent":"default"`) {
		t.Errorf("export --all --agent other exported agent default's sessions:\n%s", out)
	}
	code, once, errs := c.run("", "sessions", "export", "s1", "--store", url)
	if code != 0 {
		t.Fatalf("export s1: %d %s", code, errs)
	}
	if code, twice, errs := c.run("", "sessions", "export", "s1", "s1", "--store", url); code != 0 || twice != once {
		t.Errorf("export s1 s1: %d %s\n%s\nwant what export s1 writes:\n%s", code, errs, twice, once)
	}
}

// export --all --user X exports X's sessions of every agent, as --all
// --agent X exports agent X's of every user: --user alone does not narrow
// the export to agent "default" (--agent's default).
func TestExportAllOfAUser(t *testing.T) {
	c := newCLI(t, nil)
	url := tempStoreURL(t)
	for _, a := range [][]string{
		{"--agent", "default", "--user", "alice", "--session", "d1"},
		{"--agent", "other", "--user", "alice", "--session", "o1"},
		{"--agent", "other", "--user", "bob", "--session", "b1"},
	} {
		if code, _, errs := c.run("hello\n", append([]string{"chat", "--store", url}, a...)...); code != 0 {
			t.Fatalf("chat %v: %d %s", a, code, errs)
		}
	}
	code, out, errs := c.run("", "sessions", "export", "--all", "--user", "alice", "--store", url)
	if code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}
	if !strings.Contains(out, `"session":"d1"`) || !strings.Contains(out, `"session":"o1"`) || strings.Contains(out, `"owner":"bob"`) {
		t.Errorf("export --all --user alice: want alice's d1 (agent default) and o1 (agent other), nothing of bob's; got:\n%s", out)
	}
	code, out, errs = c.run("", "sessions", "export", "--all", "--user", "alice", "--agent", "other", "--store", url)
	if code != 0 || !strings.Contains(out, `"session":"o1"`) || strings.Contains(out, `"session":"d1"`) || strings.Contains(out, `"owner":"bob"`) {
		t.Errorf("export --all --user alice --agent other: %d %s; want o1 alone:\n%s", code, errs, out)
	}
}

// migrate has no --store: its errors name --from and --to.
func TestMigrateErrorsNameItsFlags(t *testing.T) {
	c := newCLI(t, nil)
	src := tempStoreURL(t)
	if code, _, errs := c.run("hello\n", "chat", "--store", src); code != 0 {
		t.Fatalf("chat: %d %s", code, errs)
	}
	code, _, errs := c.run("", "migrate", "--from", src, "--to", "bogus:x")
	if code != 2 || strings.Contains(errs, "--store") || !strings.Contains(errs, "--to") {
		t.Errorf("migrate --to bogus:x: exit %d, stderr %q; want 2 and an error naming --to, not --store", code, errs)
	}
	code, _, errs = c.run("", "migrate", "--from", "sqlite:"+t.TempDir()+"/none.db", "--to", "memory:")
	if code != 1 || strings.Contains(errs, "--store or SPOOL_STORE") {
		t.Errorf("migrate --from missing: exit %d, stderr %q; want no advice to use --store/SPOOL_STORE", code, errs)
	}
}

// Everything after "--" is an argument, flag or not.
func TestDoubleDashEndsFlags(t *testing.T) {
	c := newCLI(t, nil)
	url := tempStoreURL(t)
	if code, _, errs := c.run("hello\n", "chat", "--store", url, "--session", "s1"); code != 0 {
		t.Fatalf("chat: %d %s", code, errs)
	}
	code, out, errs := c.run("", "sessions", "rename", "s1", "--store", url, "--", "a", "--json")
	if code != 0 || !strings.Contains(out, "a --json") {
		t.Errorf("rename s1 -- a --json: exit %d, out %q, err %q; want the title \"a --json\"", code, out, errs)
	}
}

// A bad --agent or --user is an error naming that flag: the store's
// words for them ("agent", "owner") say nothing of --user.
func TestBadNamespaceNamesItsFlag(t *testing.T) {
	c := newCLI(t, nil)
	url := tempStoreURL(t)
	for _, tc := range [][]string{
		{"--user", "a/b"},
		{"--agent", "a b"},
		{"--agent", "ok", "--user", ".."},
	} {
		flag := tc[len(tc)-2]
		for _, cmd := range [][]string{{"sessions", "ls"}, {"sessions", "show", "s1"}, {"chat"}} {
			args := append(append(append([]string{}, cmd...), "--store", url), tc...)
			code, _, errs := c.run("hello\n", args...)
			if code != 2 || !strings.Contains(errs, "spool: "+flag) || strings.Contains(errs, "owner") {
				t.Errorf("%v: exit %d, stderr %q; want 2 and an error naming %s", args, code, errs, flag)
			}
		}
	}
}

// A --max-age that is no number of days, or more than a duration holds,
// is refused: converted, it would wrap to no limit or to a short one.
func TestPruneMaxAgeBounds(t *testing.T) {
	c := newCLI(t, nil)
	for _, v := range []string{"NaN", "Inf", "1e9", "106752"} {
		code, _, errs := c.run("", "sessions", "prune", "--store", "memory:", "--max-sessions", "5", "--max-age", v)
		if code != 2 || !strings.Contains(errs, "--max-age") {
			t.Errorf("prune --max-age %s: exit %d, %q; want 2 and an error naming --max-age", v, code, errs)
		}
	}
}
