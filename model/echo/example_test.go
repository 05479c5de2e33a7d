package echo_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
)

// The echo model echoes prompts, calls tools on "/call" lines, and answers
// tool results with a summary of them.
func Example() {
	m := echo.New()
	ctx := context.Background()
	tools := []model.ToolSpec{{
		Name:       "weather",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`),
	}}
	show := func(req *model.Request) []model.Message {
		var answer model.Message
		answer.Role = model.RoleAssistant
		for ev, err := range m.Stream(ctx, req) {
			if err != nil {
				fmt.Println("error:", err)
				return nil
			}
			switch ev.Kind {
			case model.EventText:
				fmt.Printf("text %q\n", ev.Text)
				answer.Content += ev.Text
			case model.EventToolCall:
				fmt.Printf("call %s %s\n", ev.ToolCall.Name, ev.ToolCall.Arguments)
				answer.ToolCalls = append(answer.ToolCalls, ev.ToolCall)
			case model.EventUsage:
				fmt.Printf("usage in=%d out=%d\n", ev.Usage.InputTokens, ev.Usage.OutputTokens)
			}
		}
		return append(req.Messages, answer)
	}

	msgs := show(&model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hello there"}}})

	msgs = append(msgs, model.Message{Role: model.RoleUser, Content: `/call weather {"city":"Oslo"}`})
	msgs = show(&model.Request{Messages: msgs, Tools: tools})

	call := msgs[len(msgs)-1].ToolCalls[0]
	msgs = append(msgs, model.Message{Role: model.RoleTool, ToolCallID: call.ID, Content: "sunny, 21°C"})
	show(&model.Request{Messages: msgs, Tools: tools})

	// Output:
	// text "echo: "
	// text "hello "
	// text "there"
	// usage in=3 out=5
	// call weather {"city":"Oslo"}
	// usage in=15 out=4
	// text "tool "
	// text "weather "
	// text "returned: "
	// text "sunny, "
	// text "21°C"
	// usage in=21 out=9
}
