package filestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// Read returns every entry of the session, in append order, under a shared
// lock (so never half of an append in progress). A line that does not
// decode, or an entry whose ParentID is not the entry before it (a line
// removed or moved; see storekit.CheckChain), fails the call with a
// *store.CorruptError naming the file and line;
// a sealed line in a store without a protector fails with ErrEncrypted, and
// one sealed with another key with an error matching seal.ErrWrongKey.
//
// A transcript of up to wholeRead bytes is read in one read and its lines
// decoded by several goroutines at once (see readWhole); a longer one is
// streamed a line at a time, so memory follows the entries returned.
func (s *Store) Read(ctx context.Context, key store.Key) ([]transcript.Entry, error) {
	sf, _, err := s.openRead(ctx, key)
	if err != nil || sf == nil {
		return nil, err
	}
	defer sf.close()
	if sf.size <= wholeRead {
		return s.readWhole(ctx, key, sf)
	}
	var entries []transcript.Entry
	var p transcript.Parser
	lr := newLineReader(sf.f, 0, sf.size)
	no := 0
	where := func() string { return sf.path + ":" + strconv.Itoa(no) }
	for pos := 0; ; {
		if pos%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		line, err := lr.next()
		no = lr.no
		switch {
		case errors.Is(err, io.EOF):
			return entries, nil
		case errors.Is(err, errLongLine):
			return nil, &store.CorruptError{Key: key, Position: pos, Where: where(), Err: err}
		case err != nil:
			return nil, fmt.Errorf("filestore: reading %s: %w", sf.path, err)
		}
		if blank(line) {
			continue
		}
		e, err := s.parseLine(&p, line, key, pos, where)
		if err != nil {
			return nil, err
		}
		prev := ""
		if pos > 0 {
			prev = entries[pos-1].ID
		}
		entries = append(entries, e)
		if err := checkChain(key, pos, prev, entries[pos:], where); err != nil {
			return nil, err
		}
		pos++
	}
}

// wholeRead is the longest transcript Read reads in one piece (a
// variable for tests); readPart the least a goroutine of readWhole
// decodes.
var wholeRead int64 = 64 << 20

const readPart = 256 << 10

// readWhole is Read of a transcript read in one read: it finds the lines
// that hold entries, decodes them into their places from up to GOMAXPROCS
// goroutines, each a run of lines, and checks the chain once they are
// decoded. The first failure by position is the one reported, as a line
// by line read would.
func (s *Store) readWhole(ctx context.Context, key store.Key, sf *sfile) ([]transcript.Entry, error) {
	buf := make([]byte, sf.size)
	if n, err := sf.f.ReadAt(buf, 0); n < len(buf) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // the file shrank under the lock
		}
		return nil, fmt.Errorf("filestore: reading %s: %w", sf.path, err)
	}
	// The lines that hold entries, as start offsets with their line
	// numbers; the file ends in a newline (openSession saw to it).
	starts := make([]lineAt, 0, bytes.Count(buf, []byte{'\n'}))
	for at, no := 0, 1; at < len(buf); no++ {
		i := bytes.IndexByte(buf[at:], '\n')
		if i < 0 {
			return nil, fmt.Errorf("filestore: reading %s: %w", sf.path, io.ErrUnexpectedEOF)
		}
		line := buf[at : at+i]
		if len(line)+1 > transcript.MaxLineSize {
			return nil, &store.CorruptError{Key: key, Position: len(starts), Where: sf.path + ":" + strconv.Itoa(no), Err: errLongLine}
		}
		if !blank(line) {
			starts = append(starts, lineAt{start: at, end: at + i, no: no})
		}
		at += i + 1
	}
	entries := make([]transcript.Entry, len(starts))
	parts := min(runtime.GOMAXPROCS(0), len(buf)/readPart+1, len(starts))
	errs := make([]error, parts)
	failedAt := make([]int, parts) // the position of errs[part]
	decode := func(part int) {
		from, to := part*len(starts)/parts, (part+1)*len(starts)/parts
		var p transcript.Parser
		for pos := from; pos < to; pos++ {
			if (pos-from)%256 == 0 {
				if err := ctx.Err(); err != nil {
					errs[part], failedAt[part] = err, pos
					return
				}
			}
			l := starts[pos]
			e, err := s.parseLine(&p, buf[l.start:l.end], key, pos, func() string { return sf.path + ":" + strconv.Itoa(l.no) })
			if err != nil {
				errs[part], failedAt[part] = err, pos
				return
			}
			entries[pos] = e
		}
	}
	if parts > 1 {
		var wg sync.WaitGroup
		for part := 1; part < parts; part++ {
			wg.Go(func() { decode(part) })
		}
		decode(0)
		wg.Wait()
	} else if parts == 1 {
		decode(0)
	}
	for part, err := range errs {
		if err != nil {
			// Every entry before the first failure decoded: a broken
			// link among them comes first, as in a read line by line.
			if cerr := s.checkRead(key, sf, entries[:failedAt[part]], starts); cerr != nil {
				return nil, cerr
			}
			return nil, err
		}
	}
	if err := s.checkRead(key, sf, entries, starts); err != nil {
		return nil, err
	}
	return entries, nil
}

// lineAt is where a line of a transcript read whole is: its bytes
// [start, end) and its 1-based line number.
type lineAt struct{ start, end, no int }

// checkRead checks the chain of entries, the first at position 0, naming
// the line of a broken link.
func (s *Store) checkRead(key store.Key, sf *sfile, entries []transcript.Entry, starts []lineAt) error {
	err := storekit.CheckChain(key, 0, "", entries)
	var ce *store.CorruptError
	if errors.As(err, &ce) && ce.Where == "" {
		ce.Where = sf.path + ":" + strconv.Itoa(starts[ce.Position].no)
	}
	return err
}

// openRead opens the session's transcript for reading, or returns nil for
// a session the store does not have.
func (s *Store) openRead(ctx context.Context, key store.Key) (*sfile, *index, error) {
	if err := checkKey(key); err != nil {
		return nil, nil, err
	}
	ix, err := s.index(ctx, key.Namespace(), false)
	if err != nil || ix == nil {
		return nil, nil, err
	}
	if err := ix.checkCase(key.ID); err != nil {
		return nil, nil, err
	}
	sf, _, err := s.openSession(ctx, ix, key.ID, false, false, nil, nil)
	return sf, ix, err
}

// ReadTail returns the newest n entries and the number of entries in the
// session. It reads the file backwards from its end, so its cost follows n,
// not the length of the transcript. Like Read it fails with a
// *store.CorruptError on a broken link between the entries it returns (and
// on a first entry with a parent, when it returns the whole transcript).
func (s *Store) ReadTail(ctx context.Context, key store.Key, n int) ([]transcript.Entry, int, error) {
	sf, ix, err := s.openRead(ctx, key)
	if err != nil || sf == nil {
		return nil, 0, err
	}
	defer sf.close()
	cur, err := s.current(ix, key, sf)
	if err != nil || cur == nil {
		return nil, 0, err
	}
	total := cur.info.Entries
	n = min(n, total)
	if n <= 0 {
		return nil, total, nil
	}
	lines, err := tailLines(sf, n)
	if err != nil {
		return nil, 0, err
	}
	if len(lines) != n {
		return nil, 0, fmt.Errorf("filestore: %s has fewer entries than its index says", sf.path)
	}
	entries := make([]transcript.Entry, n)
	var p transcript.Parser
	for i, line := range lines {
		pos := total - n + i
		e, err := s.parseLine(&p, line, key, pos, func() string { return sf.path })
		if err != nil {
			return nil, 0, err
		}
		entries[i] = e
	}
	if err := checkChain(key, total-n, "", entries, func() string { return sf.path }); err != nil {
		return nil, 0, err
	}
	return entries, total, nil
}

// checkChain is storekit.CheckChain on entries read from a transcript, the
// first at position start, after prev (empty when unknown); where says
// where they are for the error.
func checkChain(key store.Key, start int, prev string, entries []transcript.Entry, where func() string) error {
	err := storekit.CheckChain(key, start, prev, entries)
	var ce *store.CorruptError
	if errors.As(err, &ce) && ce.Where == "" {
		ce.Where = where()
	}
	return err
}

// tailLines returns the last n lines that hold entries, oldest first,
// reading backwards in growing chunks. The first chunk is sized for n
// lines of about a KiB (at least 4 KiB, at most 64): the runtime reads a
// session's newest entry at the start of every turn, and a 64 KiB read
// for one line of a few hundred bytes was most of what a file turn
// allocated.
func tailLines(sf *sfile, n int) ([][]byte, error) {
	var lines [][]byte
	chunk := min(max(int64(n)<<10, 4<<10), 64<<10)
	var buf []byte // the bytes of [at, end), end being the last newline read
	end := sf.size - 1
	for at := end; at > 0 && len(lines) < n; {
		start := max(at-chunk, 0)
		more := make([]byte, at-start, int(at-start)+len(buf))
		if _, err := sf.f.ReadAt(more, start); err != nil {
			return nil, fmt.Errorf("filestore: %w", err)
		}
		buf = append(more, buf...)
		at = start
		// Take whole lines from the end of buf; keep the partial first one.
		for len(lines) < n {
			i := bytes.LastIndexByte(buf, '\n')
			if i < 0 {
				if at > 0 {
					break
				}
				i = -1 // the file's first line
			}
			line := buf[i+1:]
			if !blank(line) {
				lines = append(lines, line)
			}
			if i < 0 {
				buf = buf[:0]
				break
			}
			buf = buf[:i]
		}
		chunk = min(chunk*2, 8<<20)
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	return lines, nil
}

// ReadRange returns the entries at positions [start, end) and the number of
// entries in the session. It starts reading at the nearest offset the
// sparse offset index holds at or before start, or reads backwards for a
// range near the end (see the package documentation). Like ReadTail it
// checks the links between the entries it returns.
func (s *Store) ReadRange(ctx context.Context, key store.Key, start, end int) ([]transcript.Entry, int, error) {
	sf, ix, err := s.openRead(ctx, key)
	if err != nil || sf == nil {
		return nil, 0, err
	}
	defer sf.close()
	cur, err := s.current(ix, key, sf)
	if err != nil || cur == nil {
		return nil, 0, err
	}
	total := cur.info.Entries
	start = min(max(start, 0), total)
	end = min(max(end, start), total)
	if start == end {
		return nil, total, nil
	}
	if total-start <= offsetEvery {
		// Near the end: reading backwards needs no offsets.
		lines, err := tailLines(sf, total-start)
		if err != nil {
			return nil, 0, err
		}
		if len(lines) != total-start {
			return nil, 0, fmt.Errorf("filestore: %s has fewer entries than its index says", sf.path)
		}
		return s.decodeRange(sf, key, lines[:end-start], start, total)
	}
	k := start / offsetEvery
	off, err := s.offsetOf(sf, k)
	if err != nil {
		return nil, 0, err
	}
	lr := newLineReader(sf.f, off, sf.size)
	lines := make([][]byte, 0, end-start)
	for pos := k * offsetEvery; pos < end; {
		line, err := lr.next()
		switch {
		case errors.Is(err, errLongLine):
			if pos >= start {
				return nil, 0, &store.CorruptError{Key: key, Position: pos, Where: sf.path, Err: err}
			}
			pos++
			continue
		case errors.Is(err, io.EOF):
			return nil, 0, fmt.Errorf("filestore: reading %s: fewer entries than the index says", sf.path)
		case err != nil:
			return nil, 0, fmt.Errorf("filestore: reading %s: %w", sf.path, err)
		}
		if blank(line) {
			continue
		}
		if pos >= start {
			lines = append(lines, bytes.Clone(line))
		}
		pos++
	}
	return s.decodeRange(sf, key, lines, start, total)
}

func (s *Store) decodeRange(sf *sfile, key store.Key, lines [][]byte, start, total int) ([]transcript.Entry, int, error) {
	if len(lines) == 0 {
		return nil, total, nil
	}
	entries := make([]transcript.Entry, len(lines))
	var p transcript.Parser
	for i, line := range lines {
		pos := start + i
		e, err := s.parseLine(&p, line, key, pos, func() string { return sf.path })
		if err != nil {
			return nil, 0, err
		}
		entries[i] = e
	}
	// A range that starts mid-transcript does not know the entry before
	// it: only the links within the range are checked.
	if err := checkChain(key, start, "", entries, func() string { return sf.path }); err != nil {
		return nil, 0, err
	}
	return entries, total, nil
}
