package history_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/transcript"
)

func turns(t *testing.T, n int) []transcript.Entry {
	t.Helper()
	var out []transcript.Entry
	now := time.Now()
	for i := range n {
		turn := transcript.NewID(now)
		for _, s := range []struct {
			typ    transcript.Type
			status transcript.Status
			data   any
		}{
			{transcript.TypeUserMessage, "", transcript.UserMessage{Text: fmt.Sprint("q", i)}},
			{transcript.TypeAssistantMessage, "", transcript.AssistantMessage{Text: fmt.Sprint("a", i)}},
			{transcript.TypeTurnEnd, transcript.StatusOK, transcript.TurnEnd{}},
		} {
			e, err := transcript.New(now, s.typ, turn, s.data)
			if err != nil {
				t.Fatal(err)
			}
			e.Status = s.status
			out = append(out, e)
		}
	}
	return out
}

func TestWindowReportsWhetherOlderEntriesMatter(t *testing.T) {
	all := turns(t, 10)
	for _, c := range []struct {
		opt  history.Options
		full bool
	}{
		{history.Options{MaxMessages: 4}, true},
		{history.Options{MaxMessages: 20}, false},
		{history.Options{MaxMessages: 21}, false},
		{history.Options{MaxMessages: history.NoLimit}, false},
		{history.Options{MaxMessages: history.NoLimit, Budget: 10}, true},
	} {
		msgs, full := history.Window(all, c.opt)
		if full != c.full {
			t.Errorf("%+v: full = %v, want %v", c.opt, full, c.full)
		}
		// When full, a suffix that holds the window gives the same result.
		if full {
			suffix, _ := history.Window(all[len(all)-len(msgs)*3/2-3:], c.opt)
			if fmt.Sprint(suffix) != fmt.Sprint(msgs) {
				t.Errorf("%+v: suffix gives %v, whole gives %v", c.opt, suffix, msgs)
			}
		}
	}
}
