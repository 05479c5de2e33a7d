package filestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

func TestLayoutAndWireFormat(t *testing.T) {
	root := t.TempDir()
	s := open(t, root)
	proj := store.Key{Agent: "support", ID: "s1"}
	user := store.Key{Agent: "support", Owner: "alice@example.com", ID: "s1"}
	pe := seed(t, s, proj, "", t0, 4)
	ue := seed(t, s, user, "", t0, 2)

	// One entry per line, exactly the transcript wire shape.
	b, err := os.ReadFile(filepath.Join(root, "support", "s1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if want := lines(t, pe...); string(b) != string(want) {
		t.Fatalf("project transcript:\n%s\nwant\n%s", b, want)
	}
	dec := transcript.NewDecoder(strings.NewReader(string(b)))
	for i := range pe {
		if e, err := dec.Decode(); err != nil || !e.Equal(pe[i]) {
			t.Fatalf("transcript.Decoder line %d: %v", i, err)
		}
	}
	b, err = os.ReadFile(filepath.Join(root, "support", "users", "alice@example.com", "s1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if want := lines(t, ue...); string(b) != string(want) {
		t.Fatalf("user transcript:\n%s\nwant\n%s", b, want)
	}
	sameEntries(t, read(t, s, proj), pe)
	sameEntries(t, read(t, s, user), ue)
}

func TestInvalidKeysTouchNothing(t *testing.T) {
	root := t.TempDir()
	s := open(t, root)
	e := storetest.NewEntry("", t0, transcript.TypeUserMessage, nil)
	for _, k := range []store.Key{
		{Agent: "..", ID: "x"}, {Agent: "a", ID: "../x"}, {Agent: "a", Owner: "..", ID: "x"},
		{Agent: "a", ID: "a/b"}, {Agent: "a", ID: "x\x00"}, {Agent: "a", ID: ""}, {Agent: "a", ID: "c:x"},
	} {
		if err := s.Append(t.Context(), k, e); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Append %q: %v, want ErrInvalidKey", k, err)
		}
		if _, err := s.Read(t.Context(), k); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Read %q: %v, want ErrInvalidKey", k, err)
		}
	}
	if names, _ := os.ReadDir(root); len(names) != 0 {
		t.Fatalf("invalid keys left %v in the root", names)
	}
}

func TestIDsCannotMeetOtherFiles(t *testing.T) {
	// Ids that look like the store's own names stay sessions of their own.
	s := open(t, t.TempDir())
	ns := store.Namespace{Agent: "a"}
	ids := []string{".index", "users", "x.jsonl", "x.jsonl.lock", "x.jsonl.torn", "x", ".index.abc.tmp", "x.jsonl.off"}
	want := map[string][]transcript.Entry{}
	for i, id := range ids {
		want[id] = seed(t, s, ns.Key(id), "", t0.Add(time.Duration(i)*time.Second), 3)
	}
	seed(t, s, store.Key{Agent: "a", Owner: "users", ID: "x"}, "", t0, 1)
	unlock, err := s.Lock(t.Context(), ns.Key("x"))
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	for _, s := range []*Store{s, open(t, s.Root())} {
		for id, w := range want {
			sameEntries(t, read(t, s, ns.Key(id)), w)
		}
		if got := listAll(t, s, ns); len(got) != len(ids) {
			t.Fatalf("List: %d sessions, want %d", len(got), len(ids))
		}
	}
}

func TestDefaultRoot(t *testing.T) {
	home := func() (string, error) { return "/home/u", nil }
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		goos string
		env  map[string]string
		want string
	}{
		{"linux", nil, "/home/u/.local/share/spool/sessions"},
		{"linux", map[string]string{"XDG_DATA_HOME": "/data"}, "/data/spool/sessions"},
		{"freebsd", map[string]string{"XDG_DATA_HOME": "relative"}, "/home/u/.local/share/spool/sessions"},
		{"darwin", map[string]string{"XDG_DATA_HOME": "/data"}, "/home/u/Library/Application Support/spool/sessions"},
		{"windows", map[string]string{"LOCALAPPDATA": "/appdata"}, "/appdata/spool/sessions"},
	}
	for _, tt := range tests {
		got, err := defaultRoot(tt.goos, env(tt.env), home)
		if err != nil || got != filepath.FromSlash(tt.want) {
			t.Errorf("%s %v: %q, %v; want %q", tt.goos, tt.env, got, err, tt.want)
		}
	}
	if _, err := defaultRoot("windows", env(nil), home); err == nil {
		t.Error("windows without LOCALAPPDATA: no error")
	}
}

func TestOpenURL(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", dir)
	t.Chdir(dir)
	tests := []struct {
		url  string
		root string
		ret  store.Retention
	}{
		{"file:", filepath.Join(dir, "spool", "sessions"), store.DefaultRetention},
		{"file:" + dir + "/p", dir + "/p", store.DefaultRetention},
		{"file://" + dir + "/p", dir + "/p", store.DefaultRetention},
		{"file:rel/p", filepath.Join(dir, "rel", "p"), store.DefaultRetention},
		{"file:/x?maxSessions=20&maxAge=720h", "/x", store.Retention{MaxSessions: 20, MaxAge: 720 * time.Hour}},
		{"file:/x?maxSessions=0", "/x", store.Retention{MaxAge: store.DefaultRetention.MaxAge}},
		{"file:/x?maxAge=30d", "/x", store.Retention{MaxSessions: 50, MaxAge: 30 * 24 * time.Hour}},
		{"file:/x?retention=none", "/x", store.Retention{}},
	}
	for _, tt := range tests {
		st, err := store.Open(context.Background(), tt.url)
		if err != nil {
			t.Errorf("%s: %v", tt.url, err)
			continue
		}
		s := st.(*Store)
		if s.Root() != tt.root || s.cfg.retention != tt.ret {
			t.Errorf("%s: root %s retention %+v; want %s %+v", tt.url, s.Root(), s.cfg.retention, tt.root, tt.ret)
		}
	}
	for _, bad := range []string{"file:/x?maxSessions=-1", "file:/x?maxAge=soon", "file:/x?maxsessions=3", "file://host/x", "file:/x?retention=all", "file:/x?maxAge=1h&maxAge=2h"} {
		if _, err := Open(t.Context(), bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestWindowsNames(t *testing.T) {
	for name, ok := range map[string]bool{
		"con": false, "CON": false, "nul.txt": false, "com1": false, "LPT9.x": false, "aux": false,
		"console": true, "com": true, "com10": true, "a.b": true, "x": true,
	} {
		if got := windowsName(name, false); got != ok {
			t.Errorf("windowsName(%q) = %v, want %v", name, got, ok)
		}
	}
	if windowsName("agent.", true) || !windowsName("agent.", false) {
		t.Error("a folder name ending in a dot must be refused, a file's stem need not")
	}
}

func TestNamespacesAndClose(t *testing.T) {
	root := t.TempDir()
	s := open(t, root)
	seed(t, s, store.Key{Agent: "b", ID: "x"}, "", t0, 1)
	seed(t, s, store.Key{Agent: "a", Owner: "u2", ID: "x"}, "", t0, 1)
	seed(t, s, store.Key{Agent: "a", Owner: "u1", ID: "x"}, "", t0, 1)
	if err := s.Delete(t.Context(), store.Key{Agent: "a", Owner: "u2", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	got, err := open(t, root).Namespaces(t.Context())
	want := []store.Namespace{{Agent: "a", Owner: "u1"}, {Agent: "b"}}
	if err != nil || len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Namespaces: %v %v, want %v", got, err, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(t.Context(), store.Key{Agent: "b", ID: "x"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
}
