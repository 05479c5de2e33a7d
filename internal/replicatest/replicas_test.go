package replicatest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/pgstore"
	"github.com/spool-go/spool/transcript"
)

// request is one turn a client sends to a replica.
type request struct {
	replica *replica
	route   string // "invoke", or "chat" (Server-Sent Events)
	session string
	prompt  string

	answer answer
	err    error
}

// Two replicas on one database, all requests for the same ten sessions in
// flight at once, half to each replica, by /invoke and by /chat as SSE,
// half of them turns with a tool call (five entries instead of three).
// Every request must be answered ok, and every transcript must be one
// chain of whole turns holding every request's prompt once, in the turn
// its client was answered with.
func TestTwoReplicasSameSessions(t *testing.T) {
	const (
		sessions   = 10
		perReplica = 10 // requests per session per replica
	)
	d := newDeployment(t)
	replicas := []*replica{d.startReplica(t, "A"), d.startReplica(t, "B")}

	var reqs []*request
	for s := range sessions {
		sid := fmt.Sprintf("shared-%02d", s)
		for _, r := range replicas {
			for i := range perReplica {
				route := [...]string{"invoke", "chat"}[i%2]
				// The last line names the replica: see sender.
				prompt := fmt.Sprintf("%s-%s-%s-%d", r.name, route, sid, i)
				if i%4 >= 2 {
					prompt = "/call get_time {}\n" + prompt
				}
				reqs = append(reqs, &request{replica: r, route: route, session: sid, prompt: prompt})
			}
		}
	}

	c := newClient()
	defer c.close()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	stopWatch := d.watchLocks(t)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, rq := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if rq.route == "invoke" {
				rq.answer, rq.err = c.invoke(ctx, rq.replica.URL, rq.session, rq.prompt)
			} else {
				rq.answer, rq.err = c.chat(ctx, rq.replica.URL, rq.session, rq.prompt)
			}
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(began)
	waits := stopWatch()

	failed := 0
	for _, rq := range reqs {
		switch {
		case rq.err != nil:
			failed++
			if failed <= 10 {
				t.Errorf("%s /%s session %s prompt %q: %v", rq.replica.name, rq.route, rq.session, rq.prompt, rq.err)
			}
		case rq.answer.Status != "ok" || rq.answer.SessionID != rq.session:
			t.Errorf("%s /%s prompt %q: answered %+v", rq.replica.name, rq.route, rq.prompt, rq.answer)
		}
	}
	if failed > 10 {
		t.Errorf("… %d requests failed in all", failed)
	}

	st, err := pgstore.Open(context.Background(), d.storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	want := map[string]map[string]expect{}
	for _, rq := range reqs {
		if want[rq.session] == nil {
			want[rq.session] = map[string]expect{}
		}
		e := expect{status: transcript.StatusOK}
		if rq.err == nil {
			e.turnID, e.text, e.answer = rq.answer.TurnID, rq.answer.Text, true
		}
		want[rq.session][rq.prompt] = e
	}
	total := 0
	for sid, w := range want {
		key := store.Key{Agent: "default", ID: sid}
		entries, err := st.Read(context.Background(), key)
		if err != nil {
			t.Fatalf("reading session %s: %v", sid, err)
		}
		turns, problems := checkSession(entries, w)
		for _, p := range problems {
			t.Errorf("session %s: %s", sid, p)
		}
		info, err := st.Stat(context.Background(), key)
		if err != nil || info.Entries != len(entries) {
			t.Errorf("session %s: Stat says %d entries (%v), Read gave %d", sid, info.Entries, err, len(entries))
		}
		total += handoffs(turns)
	}
	page, err := st.List(context.Background(), store.Namespace{Agent: "default"}, store.ListOptions{Limit: 100})
	if err != nil || len(page.Sessions) != sessions {
		t.Errorf("listing: %d sessions (%v), want %d", len(page.Sessions), err, sessions)
	}

	t.Logf("%d requests (%d sessions, %d per replica each) answered in %s; %d answers were 409 session_busy and retried; "+
		"consecutive turns of a session from different replicas: %d; replicas seen waiting for a session lock in %d of %d samples (at most %d at once)",
		len(reqs), sessions, perReplica, elapsed.Round(time.Millisecond), c.busy.Load(), total, waits.samples, waits.polls, waits.most)
	if waits.most > sessions {
		// Each replica queues a session's requests itself and asks the
		// database for the session's lock for the first of them only, so
		// at most one connection per session waits (the other replica's).
		t.Errorf("%d connections waited for session locks at once, more than the %d sessions", waits.most, sessions)
	}
	if total == 0 {
		// Then the replicas never worked on a session at the same time,
		// and this test showed nothing about them doing so.
		t.Errorf("no session has consecutive turns from different replicas: the requests did not overlap")
	}
}

// lockWaits is what watchLocks saw: of polls, how many found a replica
// connection waiting for an advisory lock, and the most at once.
type lockWaits struct{ polls, samples, most int }

// watchLocks polls pg_stat_activity every few milliseconds for replica
// connections waiting for an advisory lock (a session lock held by
// another replica, or by another turn of the same one) until the
// returned function is called, which returns what it saw.
func (d *deployment) watchLocks(t *testing.T) func() lockWaits {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan lockWaits)
	go func() {
		var w lockWaits
		defer func() { done <- w }()
		for ctx.Err() == nil {
			_, waiting, err := d.conns(ctx)
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("watching locks: %v", err)
				}
				return
			}
			w.polls++
			if waiting > 0 {
				w.samples++
				w.most = max(w.most, waiting)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return func() lockWaits {
		cancel()
		return <-done
	}
}

// A replica killed in the middle of a turn: while it lives, its turn
// holds the session's lock and the other replica's request for the same
// session waits; once it is gone, the database releases the lock with
// its connection, and the other replica closes the dead turn as cancelled
// ("interrupted") before running its own.
func TestReplicaKilledMidTurn(t *testing.T) {
	d := newDeployment(t)
	prov := hangingProvider(t)
	a := d.startReplica(t, "A", "--model", "openai:hang", "--base-url", prov.url+"/v1", "--model-key", "test")
	b := d.startReplica(t, "B")
	const sid = "crash"
	c := newClient()
	defer c.close()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()

	// A's turn: its user message is stored and the model is answering
	// (the provider has the request) when A dies.
	aDone := make(chan error, 1)
	go func() {
		_, err := c.chat(ctx, a.URL, sid, "A-crash")
		aDone <- err
	}()
	select {
	case <-prov.started:
	case err := <-aDone:
		t.Fatalf("A's turn ended before the model was asked: %v", err)
	case <-ctx.Done():
		t.Fatal("the model was never asked")
	}

	bDone := make(chan struct{})
	var bAnswer answer
	var bErr error
	go func() {
		defer close(bDone)
		bAnswer, bErr = c.invoke(ctx, b.URL, sid, "B-after")
	}()
	// B's request must wait for the lock A holds, not run beside A's turn.
	for {
		_, waiting, err := d.conns(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case <-bDone:
			t.Fatalf("B answered while A's turn was running (%+v, %v): the session lock did not exclude it", bAnswer, bErr)
		case <-time.After(10 * time.Millisecond):
		}
	}

	a.Kill()
	select {
	case <-bDone:
	case <-ctx.Done():
		t.Fatal("B's request never got the session after A died")
	}
	if bErr != nil || bAnswer.Status != "ok" {
		t.Fatalf("B after A died: %+v, %v", bAnswer, bErr)
	}
	if err := <-aDone; err == nil {
		t.Errorf("A's client was answered although A was killed mid-turn")
	}

	st, err := pgstore.Open(context.Background(), d.storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	entries, err := st.Read(context.Background(), store.Key{Agent: "default", ID: sid})
	if err != nil {
		t.Fatal(err)
	}
	turns, problems := checkSession(entries, map[string]expect{
		"A-crash": {status: transcript.StatusCancelled},
		"B-after": {status: transcript.StatusOK, turnID: bAnswer.TurnID, text: bAnswer.Text, answer: true},
	})
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) == 0 {
		if turns[0].prompt != "A-crash" {
			t.Fatalf("turns in the order %q, %q", turns[0].prompt, turns[1].prompt)
		}
		// The dead turn is its user message and the end B wrote for it.
		end := entries[1]
		var te transcript.TurnEnd
		if err := end.DecodeData(&te); err != nil || end.Type != transcript.TypeTurnEnd || te.Error == nil || te.Error.Code != "interrupted" {
			t.Errorf("the dead turn's second entry is %s %s (%v), want its end with the error code interrupted", end.Type, end.Data, err)
		}
	}
	if t.Failed() {
		var b strings.Builder
		for _, e := range entries {
			fmt.Fprintf(&b, "%s %s turn %s %s %s\n", e.ID, e.Type, e.TurnID, e.Status, e.Data)
		}
		t.Logf("transcript:\n%s", b.String())
	}
}
