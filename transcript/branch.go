package transcript

// BranchKind says what made a TypeBranch entry.
type BranchKind string

// Branch kinds.
const (
	// BranchRegenerate: the newest turn is answered again; the entry is
	// the first of the new turn, which asks the same question.
	BranchRegenerate BranchKind = "regenerate"
	// BranchEdit: an earlier question is asked differently; the entry is
	// the first of the new turn, which asks the edited question.
	BranchEdit BranchKind = "edit"
	// BranchSwitch: an alternative made before becomes active again; no
	// turn follows.
	BranchSwitch BranchKind = "switch"
)

// Branch is the data of a TypeBranch entry, a marker that turns a
// transcript into a tree without rewriting it: the turns it names in
// Supersedes leave the active branch (history rule 11 leaves them out of
// what the model is sent), and those in Restores come back to it. The
// newest marker that names a turn decides whether the turn is on the
// active branch; a turn no marker names is.
//
// A regenerate or edit marker has the turn id of the new turn that follows
// it, which takes the place of Supersedes[0]; the other superseded turns
// are the ones that came after that turn on the branch. A switch marker
// has a turn id of its own. Alternatives lists, oldest first, the turns
// that are versions of one another at the place the marker changes (the
// same question asked again, or asked differently), the new turn included,
// so that the newest marker of a place says all its versions: a reader
// going backwards from the end of a transcript learns "2 / 3" without
// reading further back.
type Branch struct {
	Kind         BranchKind `json:"kind"`
	Supersedes   []string   `json:"supersedes"`
	Restores     []string   `json:"restores,omitempty"`
	Alternatives []string   `json:"alternatives"`
}

// Fork is the data of a TypeFork entry, the first entry of a session made
// as a copy of another one up to one of its turns: the copied turns follow
// it. It names where the copy came from, and carries the tool mode and the
// tools approved for the session as they were at that turn, which the
// runtime restores from it as it would from the entries that set them.
type Fork struct {
	Source        string   `json:"source"`                  // the session id it was copied from
	TurnID        string   `json:"turnId"`                  // the source's turn it was copied up to, included
	ToolMode      ToolMode `json:"toolMode,omitempty"`      // "" when the source had set none
	ApprovedTools []string `json:"approvedTools,omitempty"` // tools approved for the session
}
