package transcript

// Compaction is the data of a TypeCompaction entry: a summary that stands,
// in what the model is sent (history rule 10), for the turns from
// FirstTurn to LastTurn, both included, that are on the active branch when
// it is written. The turns it covers stay in the transcript as they were:
// readers that show a conversation still show every one of them, and a
// program that does not know the type sends them as before.
//
// A compaction names its turns by id; like a session.branch marker it
// belongs to no turn, whatever its turnId. A later compaction may cover
// an earlier one's turns again (a rolling summary, whose Summary is the
// earlier summary with the newly covered turns folded in, and Previous
// the earlier entry's id): the newest compaction that applies wins, so
// nothing is ever removed to replace a summary.
type Compaction struct {
	Summary   string `json:"summary"`            // what the covered turns said, as the summarizer wrote it
	FirstTurn string `json:"firstTurn"`          // the turn id of the first turn covered
	LastTurn  string `json:"lastTurn"`           // the turn id of the last turn covered
	Turns     int    `json:"turns"`              // how many turns it covers
	Previous  string `json:"previous,omitempty"` // the compaction entry whose summary this one extends
	Model     string `json:"model,omitempty"`    // the model that wrote the summary
	Usage     *Usage `json:"usage,omitempty"`    // what writing it used
}
