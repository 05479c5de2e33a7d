package redisstore

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

var fuzzKey = store.Key{Agent: "a", Owner: "u", ID: "s"}

// FuzzParseLines decodes list elements of arbitrary bytes (a Redis any
// client can write to) between two elements the store wrote: parseLines
// never panics; it returns what transcript.Parse makes of each element or,
// for the first one that does not decode, a *store.CorruptError giving its
// position in the list; the elements the store writes (storekit.CheckEntry)
// read back as their entries.
func FuzzParseLines(f *testing.F) {
	entries := storetest.Chain("", time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), 3)
	var written []string
	for _, e := range entries {
		line, err := storekit.CheckEntry(fuzzKey, e)
		if err != nil {
			f.Fatal(err)
		}
		written = append(written, string(line))
	}
	f.Add(written[1], 0)
	f.Add(written[1][:len(written[1])-3], 7)
	f.Add("", 0)
	f.Add("{}", -1)
	f.Add("!AAAA", 1<<40)
	f.Add(`{"id":"x"}`+"\n"+`{"id":"y"}`, 3)
	f.Add("\x00\xff", 2)
	f.Fuzz(func(t *testing.T, line string, first int) {
		lines := []string{written[0], line, written[2]}
		got, err := parseLines(fuzzKey, "log", first, lines)
		want := make([]transcript.Entry, len(lines))
		bad := -1
		for i, l := range lines {
			e, perr := transcript.Parse([]byte(l))
			if perr != nil {
				bad = i
				break
			}
			want[i] = e
		}
		if bad >= 0 {
			var ce *store.CorruptError
			if !errors.As(err, &ce) || ce.Position != first+bad || ce.Key != fuzzKey || !strings.Contains(ce.Where, strconv.Itoa(first+bad)) {
				t.Fatalf("element %d does not decode; parseLines: %v", bad, err)
			}
			if got != nil {
				t.Fatalf("entries beside the error %v", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("parseLines: %v, each element decoding", err)
		}
		for i := range want {
			if !got[i].Equal(want[i]) {
				t.Fatalf("element %d: got %+v, want %+v", i, got[i], want[i])
			}
		}
		if line == written[1] && !got[1].Equal(entries[1]) {
			t.Fatalf("the store's element reads back as %+v, want %+v", got[1], entries[1])
		}
	})
}

// infoFields are the hash fields parseInfo reads as integers.
var infoFields = []string{"started", "last", "msgs", "pending", "compactions", "n"}

// FuzzParseInfo parses session hashes of arbitrary field values (and with
// or without the compactions field, which older sessions lack): parseInfo
// never panics; it fails, with a *store.CorruptError naming every bad
// field, exactly when a field it needs is not an int64; otherwise it
// returns the values, and what the append script writes (decimal
// integers, the times in unix nanoseconds) round-trips.
func FuzzParseInfo(f *testing.F) {
	now := strconv.FormatInt(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC).UnixNano(), 10)
	f.Add(now, now, "3", "0", "1", "7", "a title", true)
	f.Add(now, now, "3", "0", "", "7", "", false)
	f.Add("", now, "many", "0", "x", "7", "t", true)
	f.Add("-9223372036854775808", "9223372036854775807", "9223372036854775807", "-1", "0", "0", "", true)
	f.Add("9223372036854775808", " 1", "+1", "0x10", "1e3", "07", "\x00", true)
	f.Fuzz(func(t *testing.T, started, last, msgs, pending, compactions, n, title string, hasCompactions bool) {
		h := map[string]string{"started": started, "last": last, "msgs": msgs, "pending": pending, "n": n, "title": title}
		if hasCompactions {
			h["compactions"] = compactions
		}
		info, err := parseInfo(fuzzKey, "info", h)
		var bad []string
		vals := map[string]int64{}
		for _, field := range infoFields {
			v, ok := h[field]
			if field == "compactions" && !ok {
				continue
			}
			x, perr := strconv.ParseInt(v, 10, 64)
			if perr != nil {
				bad = append(bad, field)
			}
			vals[field] = x
		}
		if len(bad) > 0 {
			var ce *store.CorruptError
			if !errors.As(err, &ce) || ce.Key != fuzzKey {
				t.Fatalf("bad fields %v; parseInfo: %v", bad, err)
			}
			for _, field := range bad {
				if !strings.Contains(err.Error(), field) {
					t.Fatalf("bad fields %v; the error does not name %s: %v", bad, field, err)
				}
			}
			return
		}
		if err != nil {
			t.Fatalf("parseInfo: %v, every field an integer", err)
		}
		want := store.SessionInfo{
			ID: fuzzKey.ID, Agent: fuzzKey.Agent, Owner: fuzzKey.Owner, Title: title,
			Started:          time.Unix(0, vals["started"]).UTC(),
			LastActivity:     time.Unix(0, vals["last"]).UTC(),
			MessageCount:     int(vals["msgs"]),
			PendingApprovals: int(vals["pending"]),
			Compactions:      int(vals["compactions"]),
			Entries:          int(vals["n"]),
		}
		if info != want {
			t.Fatalf("parseInfo = %+v, want %+v", info, want)
		}
		// The script's own values come back as they went in.
		if started == now && !info.Started.Equal(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)) {
			t.Fatalf("started %q reads as %v", started, info.Started)
		}
	})
}
