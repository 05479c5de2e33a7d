package main

import (
	"context"
	"iter"
	"os"
	"strings"
	"testing"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
)

// lateCtrlC is the echo model whose summaries are written while a Ctrl-C
// is pressed: the summarizer finishes all the same.
type lateCtrlC struct {
	model.Model
	sig chan os.Signal
}

func (m lateCtrlC) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	if _, _, summary := model.ReadSummaryRequest(req); summary {
		m.sig <- os.Interrupt
		<-ctx.Done()
		return m.Model.Stream(context.WithoutCancel(ctx), req)
	}
	return m.Model.Stream(ctx, req)
}

// A Ctrl-C pressed as the summary is done (the summarizer had finished,
// and the compaction is recorded) does not make /compact say that nothing
// was compacted: it says what it compacted, which /history then shows.
func TestChatCompactCtrlCAfterTheSummary(t *testing.T) {
	c := newCLI(t, map[string]string{"SPOOL_STORE": "memory:"})
	c.model = lateCtrlC{Model: echo.New(), sig: c.sig}
	code, out, errs := c.run("one\ntwo\nthree\n/compact 1\n/history\n", "chat")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "Summary of the earlier part") {
		t.Fatalf("the compaction is not in the history:\n%s\n%s", out, errs)
	}
	if strings.Contains(errs, "nothing compacted") || !strings.Contains(out, "compacted 2 turns") {
		t.Fatalf("/compact does not say what it compacted:\nstdout:\n%s\nstderr:\n%s", out, errs)
	}
}
