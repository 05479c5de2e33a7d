package transcript

// TypeSessionTitle records a title a person gave the session (a rename).
// The newest one is the session's title from then on, in every store's
// list records; before the first, the title is the beginning of the first
// user message. It belongs to no turn of the conversation: its turnId is
// its own, and history ignores it.
const TypeSessionTitle Type = "session.title"

// SessionTitle is the data of a TypeSessionTitle entry.
type SessionTitle struct {
	Title string `json:"title"`
}
