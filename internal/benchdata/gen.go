package benchdata

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/spool-go/spool/transcript"
)

// EntrySize is the length of every generated entry as transcript.AppendJSON
// encodes it.
const EntrySize = 300

// Marker is the rare word of the search set; no word of Vocabulary
// contains it.
const Marker = "zanzibar"

// Vocabulary is ordered by how often the Zipf draw picks a word: the first
// is the most common.
var Vocabulary = strings.Fields(`
the to and a of you i is it for your that in this can be order with on have
please we my will not are what as if at me from do help thanks so but all
refund there an account how would just get was out up they check need ok
about here which when time one could like know invoice more has any see
some let number payment did should them make shipping now our delivery back
also email sure product sorry issue new date update into only then
been after his service other these want address return than two card first
its way may well use day customer because over order's phone
days still week price support best cancel package tracking item items
received sent change information today open question call store working
problem tomorrow available right hours team request details status receipt
charge charged billing subscription plan upgrade downgrade password login
reset error message screen app website browser download install version
device settings notification profile shipped arrived damaged missing
replacement exchange warranty policy credit debit bank transfer confirmed
pending approved declined processing estimate weekend morning evening
manager colleague feedback survey rating review complaint escalate urgent
quickly sincerely regards hello goodbye welcome appreciate understand
explain confirm verify apologize inconvenience resolve solution options
`)

// zipfCDF is the cumulative distribution the words are drawn from: word k
// has a weight proportional to (4 + k)^-1.1, the distribution math/rand's
// Zipf(s=1.1, v=4) draws from, as a table, since a draw from the table
// costs a tenth of one from rand.Zipf and a million entries need fifty
// million draws.
var zipfCDF = func() []float64 {
	cdf := make([]float64, len(Vocabulary))
	sum := 0.0
	for k := range cdf {
		sum += math.Pow(4+float64(k), -1.1)
		cdf[k] = sum
	}
	return cdf
}()

// Gen makes the entries of one session, in order, deterministically from
// its seed. It is not safe for concurrent use; give each writer its own.
type Gen struct {
	rng   *rand.Rand
	ids   *rand.ChaCha8 // the random part of the ULIDs
	head  string        // the id of the last entry made
	turn  string        // the turn of the last user message
	n     int           // entries made
	text  []byte        // scratch
	probe []byte        // scratch
}

// NewGen returns a generator whose entries depend only on seed.
func NewGen(seed uint64) *Gen { return newGen(seed, seed^0x9e3779b97f4a7c15) }

func newGen(s1, s2 uint64) *Gen {
	rng := rand.New(rand.NewPCG(s1, s2))
	var key [32]byte
	for i := range 4 {
		binary.LittleEndian.PutUint64(key[8*i:], rng.Uint64())
	}
	return &Gen{rng: rng, ids: rand.NewChaCha8(key)}
}

// word draws a word.
func (g *Gen) word() string {
	k, _ := slices.BinarySearch(zipfCDF, g.rng.Float64()*zipfCDF[len(zipfCDF)-1])
	return Vocabulary[min(k, len(Vocabulary)-1)]
}

var emptyText = []byte(`{"text":""}`)

// Next returns the session's next entry, at time at (to the millisecond),
// chained to the entry before: a user.message at even positions, the
// assistant.message answering it, in the same turn, at odd ones. A marked
// entry's text starts with Marker.
func (g *Gen) Next(at time.Time, marked bool) transcript.Entry {
	at = at.UTC().Truncate(time.Millisecond)
	id := ulid.MustNew(ulid.Timestamp(at), g.ids).String()
	typ := transcript.TypeAssistantMessage
	if g.n%2 == 0 {
		typ, g.turn = transcript.TypeUserMessage, id
	}
	e := transcript.Entry{ID: id, ParentID: g.head, Timestamp: at, Type: typ, TurnID: g.turn, Data: emptyText}
	var err error
	if g.probe, err = transcript.AppendJSON(g.probe[:0], e); err != nil {
		panic(err) // a generated entry always encodes
	}
	n := EntrySize - len(g.probe)
	t := g.text[:0]
	if marked {
		t = append(t, Marker+" "...)
	}
	for len(t) < n {
		t = append(append(t, g.word()...), ' ')
	}
	// Cut to length; a cut that ends in blanks ends in periods instead.
	// No word needs escaping in JSON.
	t = t[:n]
	for i := len(t) - 1; i >= 0 && t[i] == ' '; i-- {
		t[i] = '.'
	}
	g.text = t
	e.Data = append(append(append(make([]byte, 0, len(emptyText)+n), `{"text":"`...), t...), `"}`...)
	g.head = e.ID
	g.n++
	return e
}
