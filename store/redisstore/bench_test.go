package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/redisstore"
	"github.com/spool-go/spool/transcript"
)

// Benchmarks share big data sets across the runs the testing package makes
// of each benchmark; they are loaded once per process and removed by
// TestMain.
var datasets struct {
	sync.Mutex
	m map[string]*redisstore.Store
}

func TestMain(m *testing.M) {
	code := m.Run()
	for name, s := range datasets.m {
		if err := unlinkPrefix(s.Client(), s.Prefix()); err != nil {
			fmt.Fprintf(os.Stderr, "cleanup of benchmark data set %s: %v\n", name, err)
			code = 1
		}
		s.Close()
	}
	os.Exit(code)
}

// dataset returns the store holding data set name, loading it with load
// the first time.
func dataset(b *testing.B, name string, load func(s *redisstore.Store) error) *redisstore.Store {
	b.Helper()
	datasets.Lock()
	defer datasets.Unlock()
	if s, ok := datasets.m[name]; ok {
		return s
	}
	s, err := redisstore.Open(context.Background(), redisURL(b), redisstore.WithPrefix(randomPrefix()))
	if err != nil {
		b.Fatal(err)
	}
	if datasets.m == nil {
		datasets.m = map[string]*redisstore.Store{}
	}
	datasets.m[name] = s
	start := time.Now()
	if err := load(s); err != nil {
		b.Fatalf("loading %s: %v", name, err)
	}
	b.Logf("loaded data set %s in %v", name, time.Since(start).Round(time.Millisecond))
	return s
}

// words are common English words; texts draw from them with a Zipf
// distribution, as prose does.
var words = strings.Fields(`
the of and to a in is it you that he was for on are with as his they be at one have this from
or had by hot word but what some we can out other were all there when up use your how said an
each she which do their time if will way about many then them write would like so these her long
make thing see him two has look more day could go come did number sound no most people my over
know water than call first who may down side been now find any new work part take get place made
live where after back little only round man year came show every good me give our under name very
through just form sentence great think say help low line differ turn cause much mean before move
right boy old too same tell does set three want air well also play small end put home read hand
port large spell add even land here must big high such follow act why ask men change went light
kind off need house picture try us again animal point mother world near build self earth father
head stand own page should country found answer school grow study still learn plant cover food sun
four between state keep eye never last let thought city tree cross farm hard start might story saw
far sea draw left late run while press close night real life few north open seem together next white
children begin got walk example ease paper group always music those both mark often letter until
mile river car feet care second book carry took science eat room friend began idea fish mountain
stop once base hear horse cut sure watch color face wood main enough plain girl usual young ready
above ever red list though feel talk bird soon body dog family direct pose leave song measure door
product black short numeral class wind question happen complete ship area half rock order fire south
problem piece told knew pass since top whole king space heard best hour better true during hundred
five remember step early hold west ground interest reach fast verb sing listen six table travel less
morning ten simple several vowel toward war lay against pattern slow center love person money serve
appear road map rain rule govern pull cold notice voice unit power town fine certain fly fall lead
cry dark machine note wait plan figure star box noun field rest correct able pound done beauty drive
stood contain front teach week final gave green oh quick develop ocean warm free minute strong
special mind behind clear tail produce fact street inch multiply nothing course stay wheel full
force blue object decide surface deep moon island foot system busy test record boat common gold
possible plane stead dry wonder laugh thousand ago ran check game shape equate miss brought heat
snow tire bring yes distant fill east paint language among grand ball yet wave drop heart present
heavy dance engine position arm wide sail material size vary settle speak weight general ice matter
circle pair include divide syllable felt perhaps pick sudden count square reason length represent
art subject region energy hunt probable bed brother egg ride cell believe fraction forest sit race
window store summer train sleep prove lone leg exercise wall catch mount wish sky board joy winter
sat written wild instrument kept glass grass cow job edge sign visit past soft fun bright gas
weather month million bear finish happy hope flower clothe strange gone jump baby eight village
meet root buy raise solve metal whether push seven paragraph third shall held hair describe cook
floor either result burn hill safe cat century consider type law bit coast copy phrase silent tall
sand soil roll temperature finger industry value fight lie beat excite natural view sense ear else
quite broke case middle kill son lake moment scale loud spring observe child straight consonant
nation dictionary milk speed method organ pay age section dress cloud surprise quiet stone tiny
climb cool design poor lot experiment bottom key iron single stick flat twenty skin smile crease hole
trade melody trip office receive row mouth exact symbol die least trouble shout except wrote seed
tone join suggest clean break lady yard rise bad blow oil blood touch grew cent mix team wire cost
lost brown wear garden equal sent choose fell fit flow fair bank collect save control decimal gentle
woman captain practice separate difficult doctor please protect noon whose locate ring character
insect caught period indicate radio spoke atom human history effect electric expect crop modern
element hit student corner party supply bone rail imagine provide agree thus capital chair danger
fruit rich thick soldier process operate guess necessary sharp wing create neighbor wash bat rather
crowd corn compare poem string bell depend meat rub tube famous dollar stream fear sight thin
triangle planet hurry chief colony clock mine tie enter major fresh search send yellow gun allow
print dead spot desert suit current lift rose continue block chart hat sell success company subtract
event particular deal swim term opposite wife shoe shoulder spread arrange camp invent cotton born
determine quart nine truck noise level chance gather shop stretch throw shine property column
molecule select wrong gray repeat require broad prepare salt nose plural anger claim continent
oxygen sugar death pretty skill women season solution magnet silver thank branch match suffix
especially fig afraid huge sister steel discuss forward similar guide experience score apple bought
led pitch coat mass card band rope slip win dream evening condition feed tool total basic smell
valley nor double seat arrive master track parent shore division sheet substance favor connect post
spend chord fat glad original share station dad bread charge proper bar offer segment slave duck
instant market degree populate chick dear enemy reply drink occur support speech nature range steam
motion path liquid log meant quotient teeth shell neck`)

// texts writes English-like text from words.
type texts struct {
	r    *rand.Rand
	zipf *rand.Zipf
}

func newTexts(seed uint64) *texts {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &texts{r: r, zipf: rand.NewZipf(r, 1.1, 8, uint64(len(words)-1))}
}

// text returns exactly n bytes of words.
func (t *texts) text(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[t.zipf.Uint64()])
	}
	s := b.String()[:n]
	if strings.HasSuffix(s, " ") {
		s = s[:n-1] + "."
	}
	return s
}

// lineSize is the length of each entry's wire line in the benchmarks.
const lineSize = 300

// entry returns the next entry of a session after parent at time at: a
// user message or an assistant answer, whose wire line is lineSize bytes.
func (t *texts) entry(parent string, at time.Time, user bool) transcript.Entry {
	typ := transcript.TypeAssistantMessage
	if user {
		typ = transcript.TypeUserMessage
	}
	e, err := transcript.New(at, typ, transcript.NewID(at), map[string]string{"text": ""})
	if err != nil {
		panic(err)
	}
	e.ParentID = parent
	line, _ := transcript.AppendJSON(nil, e)
	// The words need no escaping, so the text adds its own length.
	e.Data = fmt.Appendf(nil, `{"text":%q}`, t.text(lineSize-len(line)))
	return e
}

// session returns n chained entries starting at start, a millisecond apart.
func (t *texts) session(start time.Time, n int) []transcript.Entry {
	out := make([]transcript.Entry, n)
	parent := ""
	for i := range out {
		out[i] = t.entry(parent, start.Add(time.Duration(i)*time.Millisecond), i%2 == 0)
		parent = out[i].ID
	}
	return out
}

func keyed(key store.Key, entries []transcript.Entry) []redisstore.Keyed {
	out := make([]redisstore.Keyed, len(entries))
	for i, e := range entries {
		out[i] = redisstore.Keyed{Key: key, Entry: e}
	}
	return out
}

func TestBenchEntryShape(t *testing.T) {
	tx := newTexts(1)
	for _, e := range tx.session(time.Now(), 50) {
		line, err := transcript.AppendJSON(nil, e)
		if err != nil {
			t.Fatal(err)
		}
		if len(line) != lineSize {
			t.Fatalf("benchmark entry of %d bytes, want %d: %s", len(line), lineSize, line)
		}
		if _, ok := store.SearchText(e); !ok {
			t.Fatalf("benchmark entry without search text: %s", line)
		}
	}
}

// serverTime returns the microseconds Redis has spent in commands so far,
// from INFO commandstats: Redis measures them as wall time, so on a busy
// machine they include the time its process waited for a CPU. Other
// clients' commands count too; the benchmarks run alone or close to it.
func serverTime(b *testing.B, s *redisstore.Store) float64 {
	b.Helper()
	info, err := s.Client().Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for line := range strings.Lines(info) {
		_, stats, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		for f := range strings.SplitSeq(strings.TrimSpace(stats), ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				var n float64
				fmt.Sscan(v, &n)
				total += n
			}
		}
	}
	return total
}

// reportServer reports Redis's time per operation since start.
func reportServer(b *testing.B, s *redisstore.Store, start float64) {
	b.ReportMetric((serverTime(b, s)-start)/float64(b.N), "redis-µs/op")
}

// BenchmarkAppend measures one Append of a 300-byte entry: one writer on
// one session (latency, with percentiles), and 16 writers on sessions of
// their own (throughput).
func BenchmarkAppend(b *testing.B) {
	b.Run("latency", func(b *testing.B) {
		s := newStore(b)
		key := store.Key{Agent: "bench", ID: "append"}
		entries := newTexts(2).session(time.Now().UTC(), b.N)
		lat := make([]time.Duration, b.N)
		ctx := context.Background()
		b.SetBytes(lineSize)
		srv := serverTime(b, s)
		b.ResetTimer()
		for i, e := range entries {
			t0 := time.Now()
			if err := s.Append(ctx, key, e); err != nil {
				b.Fatal(err)
			}
			lat[i] = time.Since(t0)
		}
		b.StopTimer()
		reportServer(b, s, srv)
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	})
	b.Run("throughput", func(b *testing.B) {
		s := newStore(b)
		var n atomic.Int64
		b.SetParallelism(8) // 8 × GOMAXPROCS writers: the work is mostly waiting on Redis
		b.SetBytes(lineSize)
		srv := serverTime(b, s)
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			w := n.Add(1)
			tx := newTexts(uint64(w))
			key := store.Key{Agent: "bench", ID: fmt.Sprint("writer-", w)}
			parent := ""
			at := time.Now().UTC()
			for i := 0; pb.Next(); i++ {
				e := tx.entry(parent, at.Add(time.Duration(i)*time.Millisecond), i%2 == 0)
				if err := s.Append(context.Background(), key, e); err != nil {
					b.Error(err)
					return
				}
				parent = e.ID
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "appends/s")
		reportServer(b, s, srv)
	})
}

// BenchmarkReadTail measures reading the newest 50 entries of a 100,000-
// entry session, and of a 1,000-entry one for comparison.
func BenchmarkReadTail(b *testing.B) {
	s := dataset(b, "tail", func(s *redisstore.Store) error {
		tx := newTexts(3)
		start := time.Now().UTC().Add(-48 * time.Hour)
		for _, n := range []int{1000, 100000} {
			key := store.Key{Agent: "bench", ID: fmt.Sprint("entries-", n)}
			if err := redisstore.BulkAppend(context.Background(), s, keyed(key, tx.session(start, n))); err != nil {
				return err
			}
		}
		return nil
	})
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprint("entries=", n), func(b *testing.B) {
			key := store.Key{Agent: "bench", ID: fmt.Sprint("entries-", n)}
			srv := serverTime(b, s)
			for b.Loop() {
				got, total, err := s.ReadTail(context.Background(), key, 50)
				if err != nil || len(got) != 50 || total != n {
					b.Fatalf("ReadTail: %d entries of %d, %v", len(got), total, err)
				}
			}
			reportServer(b, s, srv)
		})
	}
}

// BenchmarkListFirstPage measures the first page (50) of a scope with
// 10,000 sessions.
func BenchmarkListFirstPage(b *testing.B) {
	scope := store.Scope{Agent: "bench", Owner: "lister"}
	s := dataset(b, "list", func(s *redisstore.Store) error {
		tx := newTexts(4)
		start := time.Now().UTC().Add(-48 * time.Hour)
		var items []redisstore.Keyed
		for i := range 10000 {
			key := scope.Key(fmt.Sprintf("session-%05d", i))
			items = append(items, keyed(key, tx.session(start.Add(time.Duration(i)*time.Second), 2))...)
		}
		return redisstore.BulkAppend(context.Background(), s, items)
	})
	srv := serverTime(b, s)
	for b.Loop() {
		page, err := s.List(context.Background(), scope, store.ListOptions{Limit: 50})
		if err != nil || len(page.Sessions) != 50 || page.Sessions[0].ID != "session-09999" {
			b.Fatalf("List: %d sessions, %v", len(page.Sessions), err)
		}
	}
	reportServer(b, s, srv)
}

// BenchmarkSearchScan measures store.Search, the scan fallback the runtime
// uses for this store, over sessions of 1,000 entries: 100,000 and
// 1,000,000 entries in all. The query is two words of middling frequency.
func BenchmarkSearchScan(b *testing.B) {
	scope := store.Scope{Agent: "bench", Owner: "searcher"}
	for _, total := range []int{100000, 1000000} {
		b.Run(fmt.Sprint("entries=", total), func(b *testing.B) {
			s := dataset(b, fmt.Sprint("search-", total), func(s *redisstore.Store) error {
				tx := newTexts(5)
				start := time.Now().UTC().Add(-48 * time.Hour)
				for i := range total / 1000 {
					key := scope.Key(fmt.Sprintf("session-%04d", i))
					if err := redisstore.BulkAppend(context.Background(), s, keyed(key, tx.session(start.Add(time.Duration(i)*time.Minute), 1000))); err != nil {
						return err
					}
				}
				return nil
			})
			q := store.SearchQuery{Text: "river " + words[60], Limit: 50}
			var hits int
			srv := serverTime(b, s)
			for b.Loop() {
				h, err := store.Search(context.Background(), s, scope, q)
				if err != nil {
					b.Fatal(err)
				}
				hits = len(h)
			}
			b.ReportMetric(float64(total)/b.Elapsed().Seconds()*float64(b.N), "entries/s")
			b.ReportMetric(float64(hits), "hits")
			reportServer(b, s, srv)
		})
	}
}

// BenchmarkRoundTrip is one PING: the floor under every figure above on
// the machine it runs on.
func BenchmarkRoundTrip(b *testing.B) {
	s := newStore(b)
	srv := serverTime(b, s)
	for b.Loop() {
		if err := s.Client().Ping(context.Background()).Err(); err != nil {
			b.Fatal(err)
		}
	}
	reportServer(b, s, srv)
}
