package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// chatSessions makes sessions through spool chat, the way a user would.
type chatScript struct {
	id      string
	prompts []string
}

func chatSessions(t *testing.T, c *cli, storeURL string, scripts ...chatScript) {
	t.Helper()
	for _, s := range scripts {
		id, ps := s.id, s.prompts
		code, _, errs := c.run(strings.Join(ps, "\n")+"\n", "chat", "--store", storeURL, "--session", id)
		// Input that ends with an approval pending exits 1 on purpose.
		if code != 0 && !(code == 1 && strings.Contains(errs, "input ended with an approval pending")) {
			t.Fatalf("chat: exit %d: %s", code, errs)
		}
	}
}

func TestSessionsCommands(t *testing.T) {
	for name, url := range map[string]string{
		"file":   "file:" + t.TempDir(),
		"sqlite": tempStoreURL(t),
	} {
		t.Run(name, func(t *testing.T) {
			c := newCLI(t, map[string]string{"SPOOL_STORE": url})
			chatSessions(t, c, url,
				chatScript{"alpha", []string{"where is my parcel", "thanks a lot"}},
				chatScript{"beta", []string{"hello zebra", `/call save_note {"text":"z"}`}})

			code, out, errs := c.run("", "sessions", "ls")
			if code != 0 || !strings.Contains(out, "alpha") || !strings.Contains(out, "where is my parcel") || !strings.Contains(out, "PENDING") {
				t.Fatalf("ls: %d %s %s", code, out, errs)
			}
			code, out, _ = c.run("", "sessions", "ls", "--json", "--limit", "1")
			var page struct {
				Sessions []struct {
					ID               string `json:"id"`
					PendingApprovals int    `json:"pendingApprovals"`
					Compactions      *int   `json:"compactions"`
				} `json:"sessions"`
				NextCursor *string `json:"nextCursor"`
			}
			if err := json.Unmarshal([]byte(out), &page); err != nil || code != 0 || len(page.Sessions) != 1 || page.NextCursor == nil {
				t.Fatalf("ls --json: %d %s %v", code, out, err)
			}
			if page.Sessions[0].ID != "beta" || page.Sessions[0].PendingApprovals != 1 ||
				page.Sessions[0].Compactions == nil || *page.Sessions[0].Compactions != 0 {
				t.Fatalf("newest first with its pending approval: %+v", page.Sessions[0])
			}
			code, out, _ = c.run("", "sessions", "ls", "--json", "--cursor", *page.NextCursor)
			if code != 0 || !strings.Contains(out, `"alpha"`) || strings.Contains(out, `"beta"`) {
				t.Fatalf("second page: %s", out)
			}
			if code, _, _ := c.run("", "sessions", "ls", "--cursor", "bogus"); code != 2 {
				t.Fatalf("bogus cursor: exit %d, want 2", code)
			}

			code, out, _ = c.run("", "sessions", "show", "alpha")
			if code != 0 || !strings.Contains(out, "user") || !strings.Contains(out, "echo: thanks a lot") || !strings.Contains(out, "turn end") {
				t.Fatalf("show: %s", out)
			}
			code, out, _ = c.run("", "sessions", "show", "alpha", "--json")
			if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 6 || !strings.HasPrefix(lines[0], `{"id":`) {
				t.Fatalf("show --json: %s", out)
			}
			code, out, _ = c.run("", "sessions", "history", "alpha", "--json", "--max-messages", "2")
			var msgs []map[string]any
			if err := json.Unmarshal([]byte(out), &msgs); err != nil || code != 0 || len(msgs) != 2 || msgs[0]["content"] != "thanks a lot" {
				t.Fatalf("history --json: %s %v", out, err)
			}
			code, out, _ = c.run("", "sessions", "search", "ZEBRA")
			if code != 0 || !strings.Contains(out, "beta") || strings.Contains(out, "alpha") {
				t.Fatalf("search: %d %s", code, out)
			}

			// Unknown sessions exit 1 naming them; bad flags exit 2.
			for _, cmd := range [][]string{{"show", "nope"}, {"history", "nope"}, {"rm", "nope"}} {
				code, _, errs := c.run("", append([]string{"sessions"}, cmd...)...)
				if code != 1 || !strings.Contains(errs, `"nope"`) {
					t.Fatalf("%v: exit %d, %s", cmd, code, errs)
				}
			}
			for _, cmd := range [][]string{{"show"}, {"ls", "--limit", "0"}, {"show", "../x"}, {"ls", "--nope"}, {"frob"}, {"prune"}} {
				if code, _, _ := c.run("", append([]string{"sessions"}, cmd...)...); code != 2 {
					t.Fatalf("%v: exit %d, want 2", cmd, code)
				}
			}

			// Export, delete, import: the same transcripts come back.
			code, exported, errs := c.run("", "sessions", "export", "--all")
			if code != 0 || strings.Count(exported, "\n") != 12 {
				t.Fatalf("export: %d %s", code, errs)
			}
			_, before, _ := c.run("", "sessions", "show", "alpha", "--json")
			if code, out, errs := c.run("", "sessions", "rm", "alpha", "alpha"); code != 0 || out != "deleted alpha\n" {
				t.Fatalf("rm alpha alpha: exit %d, %q, %s; want alpha deleted once", code, out, errs)
			}
			if code, _, _ := c.run("", "sessions", "show", "alpha"); code != 1 {
				t.Fatal("alpha survived rm")
			}
			code, _, errs = c.run(exported, "sessions", "import")
			if code != 0 || !strings.Contains(errs, "6 entries added, 6 already there") {
				t.Fatalf("import: %d %s", code, errs)
			}
			if _, after, _ := c.run("", "sessions", "show", "alpha", "--json"); after != before {
				t.Fatalf("import changed the transcript:\n%s\n%s", before, after)
			}

			// Prune keeps the newest session.
			code, out, _ = c.run("", "sessions", "prune", "--max-sessions", "1")
			if code != 0 || !strings.Contains(out, "pruned 1 sessions") {
				t.Fatalf("prune: %s", out)
			}
		})
	}
}

func TestMigrate(t *testing.T) {
	from := "file:" + t.TempDir()
	to := "sqlite:" + filepath.Join(t.TempDir(), "to.db")
	c := newCLI(t, nil)
	chatSessions(t, c, from, chatScript{"one", []string{"first"}}, chatScript{"two", []string{"second", "third"}})
	for i := range 2 {
		code, _, errs := c.run("", "migrate", "--from", from, "--to", to)
		if code != 0 {
			t.Fatalf("migrate: %s", errs)
		}
		// The second run finds everything there, and says so.
		if again := strings.Contains(errs, " 0 entries added"); again != (i == 1) {
			t.Fatalf("migrate run %d: %s", i+1, errs)
		}
	}
	_, a, _ := c.run("", "sessions", "show", "two", "--json", "--store", from)
	_, b, _ := c.run("", "sessions", "show", "two", "--json", "--store", to)
	if a == "" || a != b {
		t.Fatalf("migrated transcript differs:\n%s\n%s", a, b)
	}
	if code, _, _ := c.run("", "migrate", "--from", from); code != 2 {
		t.Fatal("migrate without --to accepted")
	}
}

// sessions import takes the agent and owner of each session from its
// lines: --agent and --user would select nothing, and are refused by
// name rather than ignored (an import --user bob brought in every user's
// sessions).
func TestImportRefusesAgentAndUser(t *testing.T) {
	dir := t.TempDir()
	c := newCLI(t, map[string]string{"SPOOL_STORE": "file:" + dir})
	if code, _, errs := c.run("hello\n", "chat", "--user", "alice", "--session", "s1"); code != 0 {
		t.Fatalf("chat: %s", errs)
	}
	code, export, errs := c.run("", "sessions", "export", "--all")
	if code != 0 || !strings.Contains(export, `"owner":"alice"`) {
		t.Fatalf("export: %d %s %s", code, export, errs)
	}
	into := newCLI(t, map[string]string{"SPOOL_STORE": "file:" + t.TempDir()})
	for _, flag := range []string{"--user", "--agent"} {
		code, _, errs := into.run(export, "sessions", "import", flag, "bob")
		if code != 2 || !strings.Contains(errs, flag) || strings.Count(errs, "spool:") != 1 {
			t.Errorf("import %s bob: exit %d, stderr %q; want 2 naming %s", flag, code, errs, flag)
		}
	}
	if code, _, errs := into.run(export, "sessions", "import"); code != 0 {
		t.Fatalf("import: %d %s", code, errs)
	}
	if code, out, _ := into.run("", "sessions", "show", "s1", "--user", "alice", "--json"); code != 0 || !strings.Contains(out, "hello") {
		t.Fatalf("the imported session under alice: %d %s", code, out)
	}
}
