package echo_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
)

// Whatever the prompt, Reply ends with usage, calls only offered tools with
// JSON arguments and distinct ids, and otherwise answers "echo: <prompt>".
func FuzzReply(f *testing.F) {
	for _, s := range []string{"hello", "/call weather {\"city\":\"Oslo\"}", "/call weather\n/call time x", "/call", " /call  weather  {} ", "/call\tweather", "\n\n", "é /call"} {
		f.Add(s)
	}
	tools := []model.ToolSpec{{Name: "weather"}, {Name: "time"}}
	f.Fuzz(func(t *testing.T, prompt string) {
		events := echo.Reply(&model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: prompt}}, Tools: tools})
		if len(events) == 0 || events[len(events)-1].Kind != model.EventUsage {
			t.Fatalf("no usage at the end: %+v", events)
		}
		ids := map[string]bool{}
		var text strings.Builder
		for _, ev := range events[:len(events)-1] {
			switch ev.Kind {
			case model.EventText:
				text.WriteString(ev.Text)
			case model.EventToolCall:
				c := ev.ToolCall
				if c.Name != "weather" && c.Name != "time" || !json.Valid(c.Arguments) || c.ID == "" || ids[c.ID] {
					t.Fatalf("bad call %+v", c)
				}
				ids[c.ID] = true
			default:
				t.Fatalf("unexpected event %+v", ev)
			}
		}
		if len(ids) == 0 && !strings.Contains(prompt, "/call") && text.String() != "echo: "+prompt {
			t.Fatalf("text %q for prompt %q", text.String(), prompt)
		}
		if len(ids) > 0 && text.Len() > 0 {
			t.Fatalf("calls and text together: %q", text.String())
		}
	})
}
