package model

import "crypto/rand"

// NewCallID returns an id for a tool call that came without one: some
// OpenAI-compatible servers stream none, and a Model of the caller's may
// give none. A call's result must name it in the next request, which every
// provider API refuses without an id; it is random, so that the calls of
// one answer, and of a session, stay apart. It has the form OpenAI's ids
// have: "call_" and 26 base32 characters.
func NewCallID() string { return "call_" + rand.Text() }
