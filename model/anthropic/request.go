package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/spool-go/spool/model"
)

// params maps a request onto Messages API parameters. Errors name the
// offending message or tool by position and never quote content.
func (m *Model) params(req *model.Request) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{Model: m.name, MaxTokens: m.maxTokens}
	if req == nil {
		return p, fmt.Errorf("anthropic: nil request")
	}
	if req.MaxOutputTokens > 0 {
		p.MaxTokens = req.MaxOutputTokens
	}
	var b builder
	for i, msg := range req.Messages {
		switch msg.Role {
		case model.RoleSystem:
			if !blank(msg.Content) {
				p.System = append(p.System, sdk.TextBlockParam{Text: msg.Content})
			}
		case model.RoleUser:
			b.add(user, text(msg.Content)...)
		case model.RoleAssistant:
			blocks := text(msg.Content)
			for _, c := range msg.ToolCalls {
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, input(c.Arguments), c.Name))
			}
			b.add(assistant, blocks...)
		case model.RoleTool:
			if msg.ToolCallID == "" {
				return p, fmt.Errorf("anthropic: message %d: tool message without a tool call id", i)
			}
			r := sdk.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
			if !blank(msg.Content) {
				r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: msg.Content}}}
			}
			b.add(user, sdk.ContentBlockParamUnion{OfToolResult: &r})
		default:
			return p, fmt.Errorf("anthropic: message %d: unknown role %q", i, msg.Role)
		}
	}
	p.Messages = b.messages()
	for i, t := range req.Tools {
		tp, err := tool(t)
		if err != nil {
			return p, fmt.Errorf("anthropic: tool %d (%s): %w", i, t.Name, err)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &tp})
	}
	return p, nil
}

type role int

const (
	user role = iota
	assistant
)

// builder collects content blocks into alternating messages.
type builder struct {
	roles  []role
	blocks [][]sdk.ContentBlockParamUnion
}

func (b *builder) add(r role, blocks ...sdk.ContentBlockParamUnion) {
	if len(blocks) == 0 {
		return
	}
	n := len(b.roles)
	if n == 0 || b.roles[n-1] != r {
		b.roles = append(b.roles, r)
		b.blocks = append(b.blocks, nil)
		n++
	}
	last := b.blocks[n-1]
	// The API wants a user message's tool results before its text.
	if r == user && blocks[0].OfToolResult != nil {
		at := 0
		for at < len(last) && last[at].OfToolResult != nil {
			at++
		}
		merged := make([]sdk.ContentBlockParamUnion, 0, len(last)+len(blocks))
		merged = append(merged, last[:at]...)
		merged = append(merged, blocks...)
		last = append(merged, last[at:]...)
	} else {
		last = append(last, blocks...)
	}
	b.blocks[n-1] = last
}

func (b *builder) messages() []sdk.MessageParam {
	out := make([]sdk.MessageParam, len(b.roles))
	for i, r := range b.roles {
		if r == user {
			out[i] = sdk.NewUserMessage(b.blocks[i]...)
		} else {
			out[i] = sdk.NewAssistantMessage(b.blocks[i]...)
		}
	}
	return out
}

// text returns a text block for s, or none for blank text, which the API
// refuses ("text content blocks must contain non-whitespace text"): an
// answer that was only a newline would otherwise fail every later turn
// of its session.
func text(s string) []sdk.ContentBlockParamUnion {
	if blank(s) {
		return nil
	}
	return []sdk.ContentBlockParamUnion{sdk.NewTextBlock(s)}
}

// blank reports whether s is empty or only white space.
func blank(s string) bool { return strings.TrimSpace(s) == "" }

// input returns tool call arguments as tool_use input, which must be an
// object.
func input(args json.RawMessage) json.RawMessage {
	args = model.ToolArguments(string(args))
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) == nil && obj != nil {
		return args
	}
	wrapped, _ := json.Marshal(map[string]json.RawMessage{"value": args})
	return wrapped
}

func tool(t model.ToolSpec) (sdk.ToolParam, error) {
	if t.Name == "" {
		return sdk.ToolParam{}, fmt.Errorf("tool without a name")
	}
	tp := sdk.ToolParam{Name: t.Name}
	if t.Description != "" {
		tp.Description = param.NewOpt(t.Description)
	}
	var schema map[string]any
	if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			return sdk.ToolParam{}, fmt.Errorf("parameters are not a JSON schema object: %w", err)
		}
	}
	// input_schema's type is always "object"; everything else in the
	// schema is passed on as it is.
	s := sdk.ToolInputSchemaParam{Properties: map[string]any{}}
	for k, v := range schema {
		switch k {
		case "type":
		case "properties":
			s.Properties = v
		case "required":
			req, ok := v.([]any)
			if !ok {
				return sdk.ToolParam{}, fmt.Errorf("schema field required is not a list")
			}
			for _, r := range req {
				name, ok := r.(string)
				if !ok {
					return sdk.ToolParam{}, fmt.Errorf("schema field required holds a non-string")
				}
				s.Required = append(s.Required, name)
			}
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	tp.InputSchema = s
	return tp, nil
}
