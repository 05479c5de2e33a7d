//go:build js && wasm

package idbstore

import (
	"errors"
	"fmt"
	"math"
	"syscall/js"
	"time"
	"unicode/utf8"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// recordVersion is the shape of the session records this code writes.
const recordVersion = 1

// record is a session's list record: its SessionInfo and its last entry's
// id, kept up to date by every append so that List, Stat and the
// conditional append never read the transcript.
type record struct {
	info store.SessionInfo
	head string
}

// Timestamps are stored as Unix seconds and nanoseconds, two numbers that
// a JavaScript number holds exactly for every year Go and the wire format
// allow (Unix nanoseconds in one number would not be exact). The activity
// index orders them as the listing does.

// value returns the record as the object stored in the sessions store.
func (r record) value() js.Value {
	i := r.info
	return js.ValueOf(map[string]any{
		"v":        recordVersion,
		"agent":    i.Agent,
		"owner":    i.Owner,
		"id":       i.ID,
		"startS":   i.Started.Unix(),
		"startN":   i.Started.Nanosecond(),
		"actS":     i.LastActivity.Unix(),
		"actN":     i.LastActivity.Nanosecond(),
		"title":    i.Title,
		"messages": i.MessageCount,
		"pending":  i.PendingApprovals,
		"entries":  i.Entries,
		"head":     r.head,
		// compactions came after version 1 records: one without it reads 0.
		"compactions": i.Compactions,
	})
}

// decodeRecord reads a stored record of session key, or of any session of
// key's namespace when key.ID is empty (a listing). A record that does not have the shape
// value writes is a *store.CorruptError.
func decodeRecord(v js.Value, key store.Key) (record, error) {
	corrupt := func(format string, args ...any) (record, error) {
		return record{}, &store.CorruptError{Key: key, Position: -1, Where: "sessions record", Err: fmt.Errorf(format, args...)}
	}
	if v.Type() != js.TypeObject {
		return corrupt("a %s, not an object", v.Type())
	}
	d := fields{v: v}
	var r record
	i := &r.info
	i.Agent, i.Owner, i.ID = d.str("agent"), d.str("owner"), d.str("id")
	if key.ID == "" && d.err == nil && store.ValidID(i.ID) {
		key.ID = i.ID // a listing: the namespace must match
	}
	if d.err == nil && i.Key() != key {
		return corrupt("it belongs to session %s", i.Key())
	}
	if ver := d.int("v"); d.err == nil && ver != recordVersion {
		return corrupt("record version %d; this idbstore reads version %d", ver, recordVersion)
	}
	i.Started = d.time("startS", "startN")
	i.LastActivity = d.time("actS", "actN")
	i.Title = d.str("title")
	i.MessageCount = d.int("messages")
	i.PendingApprovals = d.int("pending")
	if d.err == nil && !d.v.Get("compactions").IsUndefined() {
		i.Compactions = d.int("compactions") // absent from records written before it
	}
	i.Entries = d.int("entries")
	r.head = d.str("head")
	switch {
	case d.err != nil:
		return corrupt("%v", d.err)
	case i.Entries < 1 || i.MessageCount < 0 || i.PendingApprovals < 0 || i.Compactions < 0:
		return corrupt("counts out of range (%d entries, %d messages, %d pending, %d compactions)", i.Entries, i.MessageCount, i.PendingApprovals, i.Compactions)
	case r.head == "":
		return corrupt("no last entry id")
	}
	return r, nil
}

// fields reads typed fields of a JavaScript object, keeping the first
// error.
type fields struct {
	v   js.Value
	err error
}

func (d *fields) get(name string, want js.Type) (js.Value, bool) {
	if d.err != nil {
		return js.Value{}, false
	}
	f := d.v.Get(name)
	if f.Type() != want {
		d.err = fmt.Errorf("field %q is %s, want %s", name, f.Type(), want)
		return js.Value{}, false
	}
	return f, true
}

func (d *fields) str(name string) string {
	f, ok := d.get(name, js.TypeString)
	if !ok {
		return ""
	}
	return f.String()
}

// maxExact is the largest integer a JavaScript number holds exactly.
const maxExact = 1 << 53

func (d *fields) int(name string) int {
	f, ok := d.get(name, js.TypeNumber)
	if !ok {
		return 0
	}
	x := f.Float()
	if x != math.Trunc(x) || math.Abs(x) > maxExact {
		d.err = fmt.Errorf("field %q is %v, not an integer", name, x)
		return 0
	}
	return int(x)
}

func (d *fields) time(secs, nanos string) time.Time {
	s, n := d.int(secs), d.int(nanos)
	if d.err == nil && (n < 0 || n >= 1e9) {
		d.err = fmt.Errorf("field %q is %d, not nanoseconds", nanos, n)
	}
	return time.Unix(int64(s), int64(n)).UTC()
}

// entryValue returns what the entries store keeps for an entry: its wire
// JSON as a string, or, when line is not valid UTF-8 (data a caller built
// by hand may hold such strings), its bytes, which a JavaScript string
// could not carry unchanged.
func entryValue(line []byte) js.Value {
	if utf8.Valid(line) {
		return js.ValueOf(string(line))
	}
	a := js.Global().Get("Uint8Array").New(len(line))
	js.CopyBytesToJS(a, line)
	return a
}

var uint8Array = js.Global().Get("Uint8Array")

// parseEntry decodes a stored entry value.
func parseEntry(v js.Value) (transcript.Entry, error) {
	var line []byte
	switch {
	case v.Type() == js.TypeString:
		line = []byte(v.String())
	case v.InstanceOf(uint8Array):
		line = make([]byte, v.Length())
		js.CopyBytesToGo(line, v)
	default:
		return transcript.Entry{}, errors.New("a " + v.Type().String() + ", not an entry")
	}
	return transcript.Parse(line)
}

// Keys. Sessions are [agent, owner, id]; entries [agent, owner, id, seq]
// with seq the 0-based position; the activity index [agent, owner, actS,
// actN, id]. An empty array sorts after every number and string, so
// [a, o, []] bounds everything that begins with [a, o].

func sessionKey(k store.Key) js.Value {
	return js.ValueOf([]any{k.Agent, k.Owner, k.ID})
}

func entryKey(k store.Key, seq int) js.Value {
	return js.ValueOf([]any{k.Agent, k.Owner, k.ID, seq})
}

var keyRange = js.Global().Get("IDBKeyRange")

func bound(lower, upper []any, upperOpen bool) js.Value {
	return keyRange.Call("bound", lower, upper, false, upperOpen)
}

// entryRange is the positions [start, end) of session k; start < end.
func entryRange(k store.Key, start, end int) js.Value {
	return bound([]any{k.Agent, k.Owner, k.ID, start}, []any{k.Agent, k.Owner, k.ID, end}, true)
}

// namespaceRange is every session of namespace s, by primary key or on the
// activity index.
func namespaceRange(s store.Namespace) js.Value {
	return bound([]any{s.Agent, s.Owner}, []any{s.Agent, s.Owner, []any{}}, false)
}

// activityBefore is the sessions of namespace s that come after position p in
// listing order: activity index keys below [agent, owner, p].
func activityBefore(s store.Namespace, p storekit.ListPosition) js.Value {
	return bound([]any{s.Agent, s.Owner},
		[]any{s.Agent, s.Owner, p.LastActivity.Unix(), p.LastActivity.Nanosecond(), p.ID}, true)
}

// activitySince is the sessions of namespace s active at t or later.
func activitySince(s store.Namespace, t time.Time) js.Value {
	return bound([]any{s.Agent, s.Owner, t.Unix(), t.Nanosecond()}, []any{s.Agent, s.Owner, []any{}}, false)
}
