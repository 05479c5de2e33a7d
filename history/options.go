package history

import "github.com/spool-go/spool/model"

// DefaultMaxMessages is the window Build uses when Options.MaxMessages is 0.
const DefaultMaxMessages = 200

// NoLimit as Options.MaxMessages asks for no cap on the message count (any
// negative value does).
const NoLimit = -1

// Options says how Build shapes a history.
type Options struct {
	// Instructions, when not empty, are sent in front as a system message.
	// They are never part of the transcript.
	Instructions string

	// MaxMessages caps the number of messages after the system message
	// (rule 6). 0 means DefaultMaxMessages; NoLimit (any negative value)
	// means no cap.
	MaxMessages int

	// Budget caps the history's size in tokens, the system message
	// included (rule 7). 0 or less means no budget.
	Budget int

	// Counter counts the tokens of one message for Budget. Nil means
	// ApproxTokens. It is called only when Budget is set.
	Counter Counter
}

// Counter returns the number of tokens a message takes in a model request.
// It must be safe for concurrent use if Build is; a negative count is read
// as 0.
type Counter func(m model.Message) int

// ApproxTokens is the default Counter: a model-independent estimate of one
// token per 4 bytes of the message's text (its content, and the ids, names
// and arguments of its tool calls), rounded up, plus 4 tokens for the
// message's framing. It errs on the high side for English prose and is
// close for code and JSON.
func ApproxTokens(m model.Message) int {
	n := len(m.Content) + len(m.ToolCallID)
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	return (n+3)/4 + 4
}

// maxMessages is the cap o asks for, with -1 for none.
func (o *Options) maxMessages() int {
	switch {
	case o.MaxMessages == 0:
		return DefaultMaxMessages
	case o.MaxMessages < 0:
		return -1
	}
	return o.MaxMessages
}

func (o *Options) count(m model.Message) int {
	n := 0
	if o.Counter != nil {
		n = o.Counter(m)
	} else {
		n = ApproxTokens(m)
	}
	return max(n, 0)
}
