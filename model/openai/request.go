package openai

import (
	"cmp"
	"encoding/json"
	"fmt"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/spool-go/spool/model"
)

// params maps a request onto chat completion parameters. Errors name the
// offending message or tool by position and never quote content.
func (m *Model) params(req *model.Request) (oa.ChatCompletionNewParams, error) {
	p := oa.ChatCompletionNewParams{
		Model:         m.name,
		StreamOptions: oa.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	if req == nil {
		return p, fmt.Errorf("openai: nil request")
	}
	for i, msg := range req.Messages {
		mp, err := message(msg)
		if err != nil {
			return p, fmt.Errorf("openai: message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	for i, t := range req.Tools {
		tp, err := tool(t)
		if err != nil {
			return p, fmt.Errorf("openai: tool %d (%s): %w", i, t.Name, err)
		}
		p.Tools = append(p.Tools, tp)
	}
	if n := cmp.Or(req.MaxOutputTokens, m.maxTokens); n > 0 {
		if m.maxTokensOld {
			p.MaxTokens = param.NewOpt(n)
		} else {
			p.MaxCompletionTokens = param.NewOpt(n)
		}
	}
	return p, nil
}

func message(msg model.Message) (oa.ChatCompletionMessageParamUnion, error) {
	switch msg.Role {
	case model.RoleSystem:
		return oa.SystemMessage(msg.Content), nil
	case model.RoleUser:
		return oa.UserMessage(msg.Content), nil
	case model.RoleTool:
		if msg.ToolCallID == "" {
			return oa.ChatCompletionMessageParamUnion{}, fmt.Errorf("tool message without a tool call id")
		}
		return oa.ToolMessage(msg.Content, msg.ToolCallID), nil
	case model.RoleAssistant:
		a := oa.ChatCompletionAssistantMessageParam{}
		// The API wants content unless there are tool calls; an assistant
		// step that only called tools sends none.
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			a.Content.OfString = param.NewOpt(msg.Content)
		}
		for _, c := range msg.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, oa.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &oa.ChatCompletionMessageFunctionToolCallParam{
					ID: c.ID,
					Function: oa.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      c.Name,
						Arguments: string(model.ToolArguments(string(c.Arguments))),
					},
				},
			})
		}
		return oa.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	default:
		return oa.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", msg.Role)
	}
}

func tool(t model.ToolSpec) (oa.ChatCompletionToolUnionParam, error) {
	if t.Name == "" {
		return oa.ChatCompletionToolUnionParam{}, fmt.Errorf("tool without a name")
	}
	fn := oa.FunctionDefinitionParam{Name: t.Name}
	if t.Description != "" {
		fn.Description = param.NewOpt(t.Description)
	}
	schema := oa.FunctionParameters{}
	if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			return oa.ChatCompletionToolUnionParam{}, fmt.Errorf("parameters are not a JSON schema object: %w", err)
		}
	}
	// The API refuses parameters that do not say they are an object, and
	// an object schema without properties ("object schema missing
	// properties"): a tool without a schema, or with {} or
	// {"type":"object"} (a tool without arguments), is given both.
	if _, ok := schema["type"]; !ok {
		schema["type"] = "object"
	}
	if _, ok := schema["properties"]; !ok && schema["type"] == "object" {
		schema["properties"] = map[string]any{}
	}
	fn.Parameters = schema
	return oa.ChatCompletionFunctionTool(fn), nil
}
