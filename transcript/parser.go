package transcript

import "strings"

// A Parser parses many entries, as a store's read does: what the entries
// keep (their ids, unknown types and data) is copied into blocks the
// Parser allocates and shares among them, so a read of ten thousand
// entries costs a few dozen allocations instead of several an entry. An
// entry's ParentID that is the id of the entry parsed before it, and a
// TurnID that is its own id or the turn of the entry before, share that
// text; known types and statuses are the package's constants.
//
// An entry it returns is the same as Parse returns for the same input.
// Entries of one Parser may share a block: a block lives as long as any
// of its entries, so keeping one entry of a read keeps at most a block
// (at most 64 KiB) of the others', and each entry's Data has no spare
// capacity, so appending to it never writes into another's. A Parser is
// not safe for concurrent use; a zero Parser is ready to use.
type Parser struct {
	strs   *strings.Builder // the current block of text; a string of it never changes
	data   []byte           // the current block of data: entries' Data are full slices of it
	next   int              // the size of the next block
	oneOff bool             // a Parser of one entry (the package's Parse): exact allocations, no blocks
	// The id and turn of the last entry parsed, which the next one
	// names as its parent and often as its turn.
	lastID, lastTurn string
}

// Block sizes: the first block is small, so that a Parser that parses a
// few entries allocates little, and each next one twice the last, up to
// maxBlock. An entry's data of more than a quarter of a block gets a slice
// of its own.
const (
	firstBlock = 2 << 10
	maxBlock   = 64 << 10
)

// Parse decodes one entry as the package's Parse does. It does not keep
// b or any part of it.
func (p *Parser) Parse(b []byte) (Entry, error) {
	if e, ok := parseFast(p, b); ok {
		return e, nil
	}
	e, err := parseSlow(b)
	if err == nil {
		p.lastID, p.lastTurn = e.ID, e.TurnID
	}
	return e, err
}

// build makes the entry scan found in b, or reports false for a data
// object that does not compact.
func (p *Parser) build(b []byte, l *line) (Entry, bool) {
	e := Entry{Timestamp: l.ts, Status: statusOf(l.value(b, fieldStatus))}
	switch {
	case !l.seen[fieldData]:
		e.Data = emptyObject
	case l.compact:
		e.Data = p.bytes(l.value(b, fieldData))
	default:
		// Space to take out: json.Compact writes a copy of its own.
		// scan did not validate the object; compactSlow does, and on
		// failure Parse takes the general path, which reports it.
		d, err := compactSlow(l.value(b, fieldData))
		if err != nil {
			return Entry{}, false
		}
		e.Data = d[:len(d):len(d)]
	}
	// The text to copy: the id, and the others unless they repeat it,
	// the entry before or a constant.
	var src [4][]byte
	var dst [4]*string
	n := 0
	copyText := func(v []byte, to *string) {
		src[n], dst[n] = v, to
		n++
	}
	copyText(l.value(b, fieldID), &e.ID)
	typ := l.value(b, fieldType)
	var typText string
	if e.Type = knownType(typ); e.Type == "" {
		copyText(typ, &typText)
	}
	parent := l.value(b, fieldParentID)
	switch {
	case len(parent) == 0:
	case string(parent) == p.lastID:
		e.ParentID = p.lastID
	default:
		copyText(parent, &e.ParentID)
	}
	turn := l.value(b, fieldTurnID)
	turnIsID := string(turn) == string(l.value(b, fieldID))
	switch {
	case len(turn) == 0 || turnIsID:
	case string(turn) == p.lastTurn:
		e.TurnID = p.lastTurn
	default:
		copyText(turn, &e.TurnID)
	}
	p.texts(src[:n], dst[:n])
	if typText != "" {
		e.Type = Type(typText)
	}
	if turnIsID {
		e.TurnID = e.ID
	}
	p.lastID, p.lastTurn = e.ID, e.TurnID
	return e, true
}

// texts sets *dst[i] to a copy of src[i]: in a one-off parse, all of them
// in one new string; otherwise in the current text block, or a new one
// when it is short of room.
func (p *Parser) texts(src [][]byte, dst []*string) {
	need := 0
	for _, v := range src {
		need += len(v)
	}
	if p.oneOff {
		var tmp [256]byte
		buf := tmp[:0]
		for _, v := range src {
			buf = append(buf, v...)
		}
		all := string(buf)
		at := 0
		for i, v := range src {
			*dst[i] = all[at : at+len(v)]
			at += len(v)
		}
		return
	}
	if p.strs == nil || p.strs.Cap()-p.strs.Len() < need {
		p.strs = new(strings.Builder)
		p.strs.Grow(max(need, p.block()))
	}
	for i, v := range src {
		start := p.strs.Len()
		p.strs.Write(v)
		*dst[i] = p.strs.String()[start:]
	}
}

// bytes returns a copy of v with no spare capacity.
func (p *Parser) bytes(v []byte) []byte {
	n := len(v)
	if p.oneOff || n > maxBlock/4 {
		return append(make([]byte, 0, n), v...)
	}
	if cap(p.data)-len(p.data) < n {
		p.data = make([]byte, 0, max(n, p.block()))
	}
	start := len(p.data)
	p.data = append(p.data, v...)
	return p.data[start:len(p.data):len(p.data)]
}

// block returns the size of a new block, and doubles the next one's.
func (p *Parser) block() int {
	n := p.next
	if n == 0 {
		n = firstBlock
	}
	p.next = min(2*n, maxBlock)
	return n
}
