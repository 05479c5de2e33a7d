// Package history builds what the next model request carries from a
// session's transcript: Build turns entries into model.Messages by the history
// rules of the design, a Builder does the same for a transcript that grows
// (given each entry as it is appended, it answers at any point exactly what
// Build answers for the whole), and PendingApprovals lists the approval
// requests that still wait on a person.
//
// History is derived, never stored: Build reads its entries and nothing
// else, keeps no state between calls, and never changes the transcript. It
// is safe to call from several goroutines at once. Build is a Builder given
// every entry, so each rule is written once, in the Builder.
//
// # The rules
//
//  1. Entries are grouped into turns by turnId, in transcript order (a turn
//     is placed where its first entry is, even if its entries are not all
//     next to each other).
//  2. A turn whose assistant.turn_end has status prompt_blocked, error or
//     cancelled is left out entirely. So is a turn that has no turn_end and
//     is not the current one: its process stopped before it finished.
//  3. Of a response_blocked turn only the user's question stays.
//  4. An ok turn gives its user message, each assistant step with its tool
//     calls, each call's result right after the step that made it (in the
//     order of the calls), and the final answer.
//  5. Consecutive user messages are merged into one, joined by a blank line
//     ("\n\n"). This happens before the window is chosen, so a merged
//     message counts once.
//  6. Window: at most Options.MaxMessages messages (default 200). The window
//     is cut only between turns, so it starts on a user message and never
//     separates a tool call from its result; the newest turn is always sent
//     whole, however long.
//  7. Budget: when the history is larger than Options.Budget tokens, the
//     oldest turns are left out. The newest turn is always sent.
//  8. A turn waiting on an approval is always in the window.
//  9. Options.Instructions go in front as a system message.
//  10. Compaction: a session.compaction entry replaces the turns it covers
//     with its summary, sent as two messages in their place (see
//     Compaction); it never covers a turn that had not ended when it was
//     written, so never a turn with an unanswered tool call or one waiting
//     on an approval, and rule 8 still holds. The newest compaction that
//     applies wins. The window and the budget then apply to the result.
//  11. Branches: a turn superseded by a regenerate or an edit marker
//     (a session.branch entry) is left out, and so is everything in it:
//     the history follows the active branch. Nothing is rewritten or
//     deleted to get there.
//
// # Details the rules leave open
//
// A turn's status is the Status of its assistant.turn_end entry (the last
// one, should there be several); a turn_end without a known status counts
// as a failed turn. A turn with no turn_end is open. The open turn that is
// current (the newest turn on the active branch that has a message, or the
// turn of the final entry on it) is sent with whatever it holds so far, and
// so is an open turn waiting on an approval: one with an approval.request
// that has no approval.decision with the same approvalId in a turn on the
// active branch. Any other open turn is left out, like a cancelled one.
//
// A turn is sent only if its first message entry is its user.message. This
// is what lets Build take a suffix of a long transcript (the newest N
// entries): a leading turn whose question is not in the slice is dropped,
// never sent as an answer without its question. A suffix must therefore
// start at or before the current turn's user.message.
//
// Tool results (tool.execution_complete) become tool messages whose
// ToolCallID is the result's callId. A result that failed (isError) is sent
// as "error: " followed by the result, so the model knows the call failed.
// A result whose callId matches no call of its turn is dropped, since
// providers reject a tool message without its call. A call that was denied
// (an approval.decision deny for its callId) and has no result gets the
// result "error: the user denied this call", followed by ": " and the
// reason when there is one. A call of an ended turn with neither result nor
// denial gets "error: no result was recorded for this call", so a finished
// turn never leaves a call unanswered. In an open turn such a call is
// left without a result while it may still run or wait on a person: it
// is in the turn's newest step, and no approval decision came after
// that step, or it waits on its own approval, or it was allowed and
// runs. Any other (a crash cut it while another call of its step
// waited on a person, who then decided, and the turn went on) gets
// "error: no result was recorded for this call" too: providers refuse
// a request with a call that has no result, so the turn could not go on.
//
// A call recorded without an id (an OpenAI-compatible server that
// streamed none, before the openai package and then the runtime gave such
// calls one of their own; a transcript another program wrote) is sent
// with an id made from its assistant message's entry id and its place
// among that message's calls ("call_" and 16 hex digits), the same at
// every request, and so is its tool message: providers refuse a
// tool message without an id, so the session could not be continued.
// Results without a callId answer such calls in order, each call taking
// the first one left that names its tool or none: a call that waited on
// an approval is answered after the message's calls that ran at once.
// An approval request without a callId is for the first call without an
// id of its tool, in the assistant message before it, that no request
// is for yet (the agent asks in the order of the calls); the result
// recorded right after the decision on it (or, without one, a deny)
// answers that call, so that calls decided out of order each get their
// own.
// CallID gives the id, so that other views of a transcript (the server's
// GET /api/chat/{id}) name such a call, and pair its approval and result
// with it, as the history does.
//
// approval.request, approval.decision, session.mode, session.fork,
// session.branch, session.compaction, governance.notice and assistant.turn_end entries are not
// messages, and entry types Build does not know are ignored. Entry data that does not decode is read as far as it
// goes: a user.message whose text is not a string is an empty message.
//
// # Branches
//
// A session.branch entry (transcript.Branch) names turns by id: those in
// its supersedes list leave the active branch, those in its restores list
// come back to it (a switch to a version made before), restores read
// after supersedes. The newest marker that names a turn decides. A marker
// names only turns that began before it: an id of a turn that has not
// begun, or never does, names nothing. A turn no marker names is on the
// active branch.
//
// A marker belongs to no turn, whatever its turnId: it neither places a
// turn (rule 1) nor is part of one, and sends nothing. A superseded turn is
// as if it were not in the transcript at all: its messages, its approval
// decisions and its being the newest or the final turn (the open-turn rule
// below) count for nothing, so the history of a transcript with markers is
// exactly the history of the linear transcript of its active branch, the
// same entries without the markers and without the superseded turns'
// entries (TestBranchesAreLinear). Every other rule then applies to that
// branch as to any transcript: a stopped answer's question merges into the
// next question on the branch, a turn of the branch waiting on an approval
// is always sent, the window and the budget count the branch.
//
// The markers the runtime writes: a regenerate supersedes the newest turn,
// an edit the edited turn and every later turn of the branch, each followed
// by the new turn (the marker carries its turn id); a switch supersedes the
// branch from the version being left and restores the one being returned
// to, with everything that followed it when it was left. Branches reads the
// same markers for the readers that show a conversation, with the versions
// of each turn ("2 / 3").
//
// # Compaction
//
// A session.compaction entry (transcript.Compaction) names a first and a
// last turn by id and carries a summary. Like a marker it belongs to no
// turn, whatever its turnId, and names only turns that began before it.
// The turns it covers are the turns from the first to the last, in the
// order of rule 1, that were on the active branch when it was written. It
// can cover them only if both named turns were on the active branch then,
// the first not after the last, and every turn it covers that had a
// message had ended (had an assistant.turn_end): a compaction that names anything else covers
// nothing, ever. The runtime writes compactions only of that kind, and
// also never covers the newest turns (spool.CompactOptions.KeepTurns, at
// least one), so the newest turn is always sent as itself.
//
// The summary takes the place of the covered turns: where the last of
// them was, the history sends two messages, a user message SummaryRequest
// and an assistant message SummaryPrefix followed by the summary
// (SummaryMessages). As a question and its answer they are a turn like any
// other to the later rules: a stopped answer's question before them merges
// into the request (rule 5), the window and the budget take or leave the
// pair whole (rules 6 and 7), and what every provider requires of a
// conversation still holds: OpenAI, Anthropic and Ollama all take a
// history that starts with a user message, alternates user and assistant
// messages (Anthropic refuses two user messages in a row) and answers
// every tool call; a user message alone (as other SDKs send summaries)
// would merge into the next question, and a system message in the middle
// is refused by Anthropic. Refused, failed and cancelled turns among the
// covered are left out as before: the summary stands for the ok and
// response_blocked turns of the range. The covered turns' approval
// decisions still decide, and the summary counts as the newest turn with
// a message for the open-turn rule, so that the history is exactly that
// of the transcript with the covered turns replaced by the summary's turn
// (TestCompactionIsReplacement).
//
// Compactions are never undone by removing them: a later compaction
// covering the same turns and more (a rolling summary, whose summary
// folds the earlier one in) takes an earlier one's place by being newer.
// Of the compactions that apply, only the newest is used; the others are
// ignored, whatever turns they cover.
//
// # Branches and compaction
//
// The active branch is decided first (rule 11). A compaction applies only
// while the turns between its first and its last on the active branch
// are still exactly the turns it covers: an edit or a regenerate that
// supersedes a covered turn makes it inapplicable (a later compaction may
// cover the new branch), a switch back makes it apply again, and a switch
// that brings back into its range a turn it did not cover makes it
// inapplicable too. An edit of a turn after its range leaves it applying.
// Among the compactions that apply, the newest wins; so a fork (which
// copies the active branch) copies the compaction that applies at its
// turn, and its history is the source's.
//
// # Window and budget
//
// The window is chosen on whole turns, newest first: the turns that are
// always sent (the newest turn and any turn waiting on an approval) are
// counted first, and older turns are added while the count stays within
// MaxMessages and the tokens within Budget. The first older turn that does
// not fit ends the window. The history sent is therefore at most
// MaxMessages messages and Budget tokens, unless the turns that are always
// sent alone exceed that, and then it is exactly those turns.
//
// The system message does not count toward MaxMessages, and counts toward
// Budget, since it is sent on every request.
//
// Build decodes entry data only for the turns it sends (and at most one
// turn more, the first that does not fit), and approval entries only while
// an open turn holds an approval request. Its cost for a long session is
// one cheap pass over the entries plus the decoding of the window.
//
// # Incremental history
//
// A Builder keeps, between calls, the turns it has grouped, the data it has
// decoded (never decoding an entry twice) and each window unit's messages
// and tokens, and redoes a unit only when an entry changed one of the turns
// it is made of: a turn's end, a decision on its approval, an entry of a
// turn resumed after another began, a marker that supersedes or restores
// it, a compaction that starts or stops applying. The turns a summary
// covers are stepped over at once, never looked at. A model request on a long session
// then costs the entries added since the last one, plus copying the window
// out. Builder.Forget drops the entries its window can no longer need, so a
// Builder kept for a long session holds about a window; it then reports,
// through Window's full, when it cannot tell without the entries it
// dropped. TestBuilderMatchesBuild and FuzzBuilder hold a Builder fed one
// entry at a time to Build after every append. Forget keeps every
// compaction and every turn from the first one a compaction covers: a
// marker may yet make an older compaction the one that applies.
package history
