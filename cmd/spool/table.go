package main

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/rivo/uniseg"

	"github.com/spool-go/spool/store"
)

// tableWidth is the widest a table is printed: it fits a 100-column
// terminal.
const tableWidth = 100

// column is one column of a table: a header and a cell per row, and
// whether it takes what width is left (the title).
type column struct {
	header string
	cells  []string
	flex   bool
	right  bool // numbers
}

// writeTable prints columns aligned by display width, not bytes, so that
// CJK and emoji titles keep the columns straight; the flexible column is
// cut (with …) so that a row fits tableWidth.
func writeTable(w io.Writer, cols []column) {
	const gap = 2
	widths := make([]int, len(cols))
	fixed, flex := 0, -1
	for i, c := range cols {
		widths[i] = uniseg.StringWidth(c.header)
		for _, cell := range c.cells {
			widths[i] = max(widths[i], uniseg.StringWidth(cell))
		}
		if c.flex {
			flex = i
			continue
		}
		fixed += widths[i]
	}
	if flex >= 0 {
		room := tableWidth - fixed - gap*(len(cols)-1)
		widths[flex] = max(min(widths[flex], room), uniseg.StringWidth(cols[flex].header), 10)
	}
	row := func(cell func(c column) string) {
		var b strings.Builder
		for i, c := range cols {
			s := clipWidth(cell(c), widths[i])
			pad := strings.Repeat(" ", widths[i]-uniseg.StringWidth(s))
			if i == len(cols)-1 && !c.right {
				pad = "" // no trailing blanks
			}
			if c.right {
				b.WriteString(pad + s)
			} else {
				b.WriteString(s + pad)
			}
			if i < len(cols)-1 {
				b.WriteString(strings.Repeat(" ", gap))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	row(func(c column) string { return c.header })
	for r := range cols[0].cells {
		row(func(c column) string { return c.cells[r] })
	}
}

// clipWidth cuts s to at most width columns, ending it with … when cut.
func clipWidth(s string, width int) string {
	if uniseg.StringWidth(s) <= width {
		return s
	}
	var b strings.Builder
	used := 0
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		w := g.Width()
		if used+w > width-1 {
			break
		}
		b.WriteString(g.Str())
		used += w
	}
	return b.String() + "…"
}

// oneLine is text for one cell: printable, its white space folded.
func oneLine(s string) string {
	return strings.Join(strings.Fields(printable(s)), " ")
}

// when formats a time for a table: relative ("3m ago") for a person at a
// terminal, RFC 3339 in UTC for a program reading a pipe.
func when(t time.Time, relative bool, now time.Time) string {
	if !relative {
		return t.UTC().Format(time.RFC3339)
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	case d < 30*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
	return t.Local().Format("2006-01-02")
}

// sessionTable prints sessions, newest activity first.
func sessionTable(w io.Writer, sessions []store.SessionInfo, relative bool) {
	now := time.Now()
	cols := []column{{header: "ID"}, {header: "TITLE", flex: true}, {header: "LAST ACTIVITY"}, {header: "MESSAGES", right: true}, {header: "PENDING", right: true}}
	for _, s := range sessions {
		cols[0].cells = append(cols[0].cells, s.ID)
		cols[1].cells = append(cols[1].cells, oneLine(s.Title))
		cols[2].cells = append(cols[2].cells, when(s.LastActivity, relative, now))
		cols[3].cells = append(cols[3].cells, fmt.Sprint(s.MessageCount))
		cols[4].cells = append(cols[4].cells, fmt.Sprint(s.PendingApprovals))
	}
	writeTable(w, cols)
}

// again returns the flags of this command line that were given, as
// arguments to repeat (for the next page), leaving out those named in
// skip. A store URL's password is not repeated.
func again(fs *flag.FlagSet, skip ...string) string {
	var parts []string
	fs.Visit(func(f *flag.Flag) {
		for _, s := range skip {
			if f.Name == s {
				return
			}
		}
		v := f.Value.String()
		if f.Name == "store" {
			v = redactURL(v)
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			if v == "true" {
				parts = append(parts, "--"+f.Name)
			}
			return
		}
		parts = append(parts, "--"+f.Name, shellQuote(v))
	})
	return strings.Join(parts, " ")
}

// shellSafe is compiled on first use, not at the start of every command.
var shellSafe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_./:@=,+%-]+$`) })

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if shellSafe().MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
