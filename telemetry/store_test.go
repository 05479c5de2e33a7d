package telemetry

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

// alwaysOn are the capabilities every wrapper has (see InstrumentStore):
// those package store's functions fall back from, and two whose absence
// means what the wrapper's fallback does.
var alwaysOn = []reflect.Type{
	reflect.TypeFor[store.BatchAppender](), reflect.TypeFor[store.BulkAppender](),
	reflect.TypeFor[store.RangeReader](), reflect.TypeFor[store.TailReader](),
	reflect.TypeFor[store.Stater](), reflect.TypeFor[store.Pruner](), reflect.TypeFor[store.Searcher](),
	reflect.TypeFor[store.Notifier](), reflect.TypeFor[store.FuncListener](), reflect.TypeFor[store.ListenerCounter](),
	reflect.TypeFor[store.Expiring](), reflect.TypeFor[io.Closer](),
}

// Every capability package store declares is kept by the wrapper: a
// capability added there and not to gen_storecaps.go fails here.
func TestEveryCapabilityIsKept(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("../store/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, sp := range gd.Specs {
				ts := sp.(*ast.TypeSpec)
				if _, ok := ts.Type.(*ast.InterfaceType); ok && ts.Name.IsExported() && ts.Name.Name != "Store" {
					declared = append(declared, "store."+ts.Name.Name)
				}
			}
		}
	}
	var kept []string
	for _, ty := range append(slices.Clone(capabilityTypes), alwaysOn...) {
		kept = append(kept, ty.String())
	}
	sort.Strings(declared)
	for _, d := range declared {
		if !slices.Contains(kept, d) {
			t.Errorf("package store declares the capability %s, which InstrumentStore's wrappers do not keep: if a caller acts on its presence, add it to gen_storecaps.go and its mixin to store.go, then go generate ./telemetry; if package store has a function of the same name that falls back from it, give the wrapper a method calling that function and list it in alwaysOn", d)
		}
	}
	if len(declared) < 10 {
		t.Fatalf("found only %v in package store: is the path right?", declared)
	}
}

// For every combination of capabilities, the wrapper has exactly those
// (and the two every wrapper has).
func TestWrapperHasExactlyTheCapabilities(t *testing.T) {
	for bits := uint(0); bits < 1<<len(capabilityTypes); bits++ {
		w := reflect.TypeOf(wrapperFor(&instrumented{}, bits))
		for i, ty := range capabilityTypes {
			if want := bits&(1<<i) != 0; w.Implements(ty) != want {
				t.Fatalf("bits %b: %s implements %s: %v, want %v", bits, w, ty, !want, want)
			}
		}
		for _, ty := range alwaysOn {
			if !w.Implements(ty) {
				t.Fatalf("bits %b: %s is not a %s", bits, w, ty)
			}
		}
	}
}

// The real stores, wrapped, keep what they can do, and every operation is
// measured under its name.
func TestInstrumentedStores(t *testing.T) {
	for _, name := range teststores.Names {
		t.Run(name, func(t *testing.T) {
			inner := teststores.All()[name](t)
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			s, err := InstrumentStore(inner, name, mp)
			if err != nil {
				t.Fatal(err)
			}
			for _, ty := range capabilityTypes {
				if reflect.TypeOf(inner).Implements(ty) != reflect.TypeOf(s).Implements(ty) {
					t.Errorf("%s: the wrapper changes %s", name, ty)
				}
			}
			for _, ty := range alwaysOn {
				if !reflect.TypeOf(s).Implements(ty) {
					t.Errorf("%s: the wrapper is not a %s", name, ty)
				}
			}
			if e, ok := inner.(store.Expiring); ok && s.(store.Expiring).TTL() != e.TTL() {
				t.Errorf("TTL %v, want %v", s.(store.Expiring).TTL(), e.TTL())
			}

			ctx := context.Background()
			key := store.Key{Agent: "a", ID: "s1"}
			e, err := transcript.New(time.Now(), transcript.TypeUserMessage, "t1", transcript.UserMessage{Text: "zebra-secret"})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Append(ctx, key, e); err != nil {
				t.Fatal(err)
			}
			if err := s.Append(ctx, key, e); err == nil { // not a child of the last entry
				t.Fatal("second append with the same parent accepted")
			}
			if _, err := s.Read(ctx, key); err != nil {
				t.Fatal(err)
			}
			if _, err := s.List(ctx, key.Namespace(), store.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := store.ReadTail(ctx, s, key, 5); err != nil {
				t.Fatal(err)
			}
			if err := store.Ping(ctx, s, key.Namespace()); err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{"append": true, "read": true, "list": true, "append conflict": true}
			if _, ok := inner.(store.TailReader); ok {
				want["read_tail"] = true
			}
			if _, ok := inner.(store.Pinger); ok {
				want["ping"] = true
			}
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(ctx, &rm); err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name != "spool.store.operation.duration" {
						continue
					}
					for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
						st, _ := dp.Attributes.Value(attrStore)
						op, _ := dp.Attributes.Value(attrStoreOp)
						if st.AsString() != name {
							t.Errorf("store attribute %q", st.AsString())
						}
						k := op.AsString()
						if et, ok := dp.Attributes.Value(attrErrorType); ok {
							if et.AsString() != "conflict" {
								t.Errorf("error.type %q", et.AsString())
							}
							k += " conflict"
						}
						got[k] = true
						for _, kv := range dp.Attributes.ToSlice() {
							if strings.Contains(kv.Value.String(), "zebra") || strings.Contains(kv.Value.String(), "s1") {
								t.Errorf("attribute %s = %q holds a key or content", kv.Key, kv.Value.String())
							}
						}
					}
				}
			}
			for op := range want {
				if !got[op] {
					t.Errorf("no measurement of %s (got %v)", op, got)
				}
			}
			if err := store.Close(s); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// tailStore is a memstore with its own ReadTail, counting its calls.
type tailStore struct {
	store.Store
	calls int
}

func (s *tailStore) ReadTail(ctx context.Context, key store.Key, n int) ([]transcript.Entry, int, error) {
	s.calls++
	return store.ReadTail(ctx, s.Store, key, n)
}

// plainStore has the four required methods only.
type plainStore struct{ store.Store }

// A capability every wrapper has reaches the inner store's own method when
// it has one, and gives the package function's fallback when it has not:
// the same results either way.
func TestAlwaysOnCapabilitiesForward(t *testing.T) {
	ctx := context.Background()
	key := store.Key{Agent: "a", ID: "s"}
	e1, _ := transcript.New(time.Now(), transcript.TypeUserMessage, "t1", transcript.UserMessage{Text: "one"})
	e2, _ := transcript.New(time.Now(), transcript.TypeUserMessage, "t1", transcript.UserMessage{Text: "two"})
	e2.ParentID = e1.ID
	native := &tailStore{Store: memstore.New()}
	plain := plainStore{memstore.New()}
	for _, inner := range []store.Store{native, plain} {
		s, err := InstrumentStore(inner, "memory", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.AppendBatch(ctx, s, key, []transcript.Entry{e1, e2}); err != nil {
			t.Fatal(err)
		}
		tail, total, err := s.(store.TailReader).ReadTail(ctx, key, 1)
		if err != nil || total != 2 || len(tail) != 1 || tail[0].ID != e2.ID {
			t.Fatalf("%T: tail %v %d %v", inner, tail, total, err)
		}
		if info, err := store.Stat(ctx, s, key); err != nil || info.Entries != 2 {
			t.Fatalf("%T: stat %+v %v", inner, info, err)
		}
		if _, ok := s.(store.Locker); ok {
			t.Fatalf("%T: the wrapper claims a lock the store does not have", inner)
		}
	}
	if native.calls != 1 {
		t.Fatalf("the store's own ReadTail was called %d times, want 1", native.calls)
	}
}
