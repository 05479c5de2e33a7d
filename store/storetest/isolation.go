package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

var isolationChecks = []check{
	{"Isolation/Owners", testOwnerIsolation},
	{"Isolation/Agents", testAgentIsolation},
}

// testOwnerIsolation gives owner A and the project scope a session with the
// same id and checks that owner B can neither read, list nor delete them,
// and that the three never meet.
func testOwnerIsolation(t *testing.T, s store.Store) {
	agent, id := name("agent"), name("sess")
	a := store.Key{Agent: agent, Owner: name("alice"), ID: id}
	b := store.Key{Agent: agent, Owner: name("bob"), ID: id}
	p := store.Key{Agent: agent, ID: id}
	start := base()
	aEntries := seed(t, s, a, start, 3)
	pEntries := seed(t, s, p, start.Add(time.Second), 2)

	checkRead(t, s, b, nil, "owner B reads nothing of owner A's or the project's session with the same id")
	checkRead(t, s, a, aEntries, "the project session with the same id is not owner A's")
	checkRead(t, s, p, pEntries, "owner A's session with the same id is not the project's")
	if got := listAll(t, s, b.Namespace(), 0); len(got) != 0 {
		t.Errorf("owner B's List shows %v: other owners' and the project's sessions are invisible to B", infoIDs(got))
	}
	for k, entries := range map[store.Key][]transcript.Entry{a: aEntries, p: pEntries} {
		info, n := find(listAll(t, s, k.Namespace(), 0), id)
		if n != 1 {
			t.Errorf("List of %s shows session %s %d times, want once", k.Namespace(), id, n)
		} else if d := diffInfo(info, storekit.Info(k, entries)); d != "" {
			t.Errorf("List of %s must show its own session %s, not another namespace's with the same id: %s", k.Namespace(), id, d)
		}
	}
	if st, ok := s.(store.Stater); ok {
		if _, err := st.Stat(t.Context(), b); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("owner B's Stat of an id only owner A and the project have must fail with ErrNotFound; got %v", err)
		}
	}
	expectConflict(t, s, b, NewEntry(Head(aEntries), start.Add(time.Minute), transcript.TypeUserMessage, nil),
		"owner B appends a child of owner A's last entry (B has no such session)")
	if err := s.Delete(t.Context(), b); err != nil {
		t.Errorf("owner B's Delete of an id B does not have: %v", err)
	}
	checkRead(t, s, a, aEntries, "owner B's Delete of the same id leaves owner A's session alone")
	checkRead(t, s, p, pEntries, "owner B's Delete of the same id leaves the project's session alone")

	bEntries := seed(t, s, b, start.Add(time.Minute), 1)
	checkRead(t, s, b, bEntries, "owner B's own session with the same id starts empty")
	checkRead(t, s, a, aEntries, "owner B's new session with the same id leaves owner A's alone")
	if err := s.Delete(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	checkRead(t, s, a, aEntries, "deleting the project session leaves owner A's session with the same id")
	checkRead(t, s, b, bEntries, "deleting the project session leaves owner B's session with the same id")
}

func testAgentIsolation(t *testing.T, s store.Store) {
	owner, id := name("owner"), name("sess")
	for _, o := range []string{"", owner} {
		one := store.Key{Agent: name("one"), Owner: o, ID: id}
		two := store.Key{Agent: name("two"), Owner: o, ID: id}
		seed(t, s, one, base(), 2)
		checkRead(t, s, two, nil, "another agent's session with the same id and owner is invisible")
		if got := listAll(t, s, two.Namespace(), 0); len(got) != 0 {
			t.Errorf("List of agent %s shows another agent's sessions %v", two.Agent, infoIDs(got))
		}
		twoEntries := seed(t, s, two, base().Add(time.Second), 3)
		if err := s.Delete(t.Context(), one); err != nil {
			t.Fatal(err)
		}
		checkRead(t, s, two, twoEntries, "deleting one agent's session leaves the other agent's with the same id")
		checkRead(t, s, one, nil, "the deleted session reads empty")
	}
}
