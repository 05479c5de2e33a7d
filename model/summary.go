package model

import (
	"strings"
)

// SummaryInstructions is the default system message of a summary request
// (NewSummaryRequest): what spool asks a model when it compacts a session.
// It asks for a summary that a later request can stand on instead of the
// turns it replaces.
const SummaryInstructions = `You maintain the running summary of a long conversation between a user and an AI assistant. The summary replaces the conversation's earlier turns in what the assistant sees from now on, so anything it leaves out is forgotten.

You are given the summary so far (possibly empty) and the turns that follow it. Write the new summary: the summary so far with the new turns folded in, as one text. Keep every fact the user stated, every decision made, every open question or unfinished task, names, numbers, dates, identifiers and amounts exactly as written, and the results of tool calls that later turns depend on. Drop greetings, repetition and wording. Write in the conversation's language, in the third person ("the user", "the assistant"), as short plain-text lines. Answer with the summary only.`

// Headers of the summary request's user message. ReadSummaryRequest
// parses what NewSummaryRequest writes.
const (
	summaryHeader      = "Summary so far:\n"
	conversationHeader = "\n\nTurns to fold into it:\n"
	noSummary          = "(none)"
)

// NewSummaryRequest returns the request that asks a model to fold msgs,
// the messages of the turns being compacted, into previous, the summary
// so far ("" for none). instructions is the system message; ""
// means SummaryInstructions. The turns go as text in one user message, a
// line per message ("user: ", "assistant: ", "assistant called
// NAME(ARGS)", "tool result: "), continuation lines indented by two
// spaces, so that every provider accepts the request whatever the turns
// held: no tool definitions are needed for calls made in them.
func NewSummaryRequest(instructions, previous string, msgs []Message) *Request {
	if instructions == "" {
		instructions = SummaryInstructions
	}
	var b strings.Builder
	b.WriteString(summaryHeader)
	if strings.TrimSpace(previous) == "" {
		previous = noSummary
	}
	b.WriteString(previous)
	b.WriteString(conversationHeader)
	for _, m := range msgs {
		switch m.Role {
		case RoleUser:
			line(&b, "user: ", m.Content)
		case RoleAssistant:
			if m.Content != "" {
				line(&b, "assistant: ", m.Content)
			}
			for _, c := range m.ToolCalls {
				line(&b, "assistant called ", c.Name+"("+string(c.Arguments)+")")
			}
		case RoleTool:
			line(&b, "tool result: ", m.Content)
		}
	}
	return &Request{Messages: []Message{
		{Role: RoleSystem, Content: instructions},
		{Role: RoleUser, Content: strings.TrimRight(b.String(), "\n")},
	}}
}

func line(b *strings.Builder, prefix, text string) {
	b.WriteString(prefix)
	b.WriteString(strings.ReplaceAll(strings.TrimSpace(text), "\n", "\n  "))
	b.WriteByte('\n')
}

// ReadSummaryRequest returns what a request made by NewSummaryRequest with
// the default instructions asks to summarize: the summary so far ("" for
// none) and the text of each user message of the turns. ok is false for
// any other request. The echo model answers such requests with
// deterministic summaries.
func ReadSummaryRequest(req *Request) (previous string, users []string, ok bool) {
	if req == nil || len(req.Messages) != 2 || req.Messages[0].Role != RoleSystem ||
		req.Messages[0].Content != SummaryInstructions || req.Messages[1].Role != RoleUser {
		return "", nil, false
	}
	text, found := strings.CutPrefix(req.Messages[1].Content, summaryHeader)
	if !found {
		return "", nil, false
	}
	previous, turns, found := strings.Cut(text, conversationHeader)
	if !found {
		return "", nil, false
	}
	if previous == noSummary {
		previous = ""
	}
	cur := -1
	for l := range strings.SplitSeq(turns, "\n") {
		switch {
		case strings.HasPrefix(l, "user: "):
			users = append(users, strings.TrimPrefix(l, "user: "))
			cur = len(users) - 1
		case strings.HasPrefix(l, "  ") && cur >= 0:
			users[cur] += "\n" + l[2:]
		default:
			cur = -1
		}
	}
	return previous, users, true
}
