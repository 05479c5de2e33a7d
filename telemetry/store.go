package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

//go:generate go run gen_storecaps.go

// InstrumentStore returns s measured: every call records its latency in
// the histogram spool.store.operation.duration (seconds), with the
// attributes spool.store (name: "postgres", "redis", "file", …),
// spool.store.operation ("append", "append_batch", "append_bulk", "read",
// "read_range", "read_tail", "list", "stat", "delete", "prune", "search",
// "lock", "namespaces", "ping", "notify", "listen") and, when the call failed, error.type
// ("conflict", "not_found", "invalid_key", "corrupt", "expired",
// "cancelled", "deadline_exceeded", or "_OTHER"). Nothing of a key or an
// entry is recorded. mp nil is the global MeterProvider.
//
// The wrapper hides no capability of s, so nothing takes a slower path for
// it (the runtime finds capabilities by type assertion):
//
//   - store.Locker, store.NamespaceLister and store.Pinger, whose presence
//     changes what a caller does, it has exactly when s has them (a type
//     generated for each combination, storecaps.go);
//   - the capabilities that package store's functions of the same names
//     fall back from (store.BatchAppender, BulkAppender, RangeReader,
//     TailReader, Stater, Pruner, Searcher, Notifier, FuncListener, ListenerCounter) it always has, each calling
//     that function on s: s's own method when it has one, else the same
//     fallback a caller of the function on s would get;
//   - store.Expiring and io.Closer it always has too, answering as a store
//     without them would when s lacks them (no TTL; closing nothing).
func InstrumentStore(s store.Store, name string, mp metric.MeterProvider) (store.Store, error) {
	if mp == nil {
		mp = globalMeterProvider()
	}
	h, err := mp.Meter(instrumentation).Float64Histogram("spool.store.operation.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of store operations"),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	if err != nil {
		return nil, err
	}
	in := &instrumented{inner: s, duration: h, store: attrStore.String(name)}
	return wrapperFor(in, capabilitiesOf(s)), nil
}

var (
	attrStore   = attribute.Key("spool.store")
	attrStoreOp = attribute.Key("spool.store.operation")
)

// instrumented is the measured store; the mixins below are the same
// value seen as each optional capability, combined by storecaps.go.
type instrumented struct {
	inner    store.Store
	duration metric.Float64Histogram
	store    attribute.KeyValue
}

// record measures one operation that started at start.
func (s *instrumented) record(ctx context.Context, op string, start time.Time, err error) {
	d := time.Since(start).Seconds()
	if err == nil {
		s.duration.Record(context.WithoutCancel(ctx), d, metric.WithAttributes(s.store, attrStoreOp.String(op)))
		return
	}
	s.duration.Record(context.WithoutCancel(ctx), d, metric.WithAttributes(s.store, attrStoreOp.String(op), attrErrorType.String(storeErrorType(err))))
}

// storeErrorType is the error.type of a store error: a fixed word, never
// the error's text.
func storeErrorType(err error) string {
	var expired *store.ExpiredError
	switch {
	case errors.Is(err, store.ErrConflict):
		return "conflict"
	case errors.Is(err, store.ErrNotFound):
		return "not_found"
	case errors.Is(err, store.ErrInvalidKey), errors.Is(err, store.ErrInvalidEntry), errors.Is(err, store.ErrInvalidCursor):
		return "invalid_key"
	case errors.Is(err, store.ErrCorrupt):
		return "corrupt"
	case errors.Is(err, store.ErrSessionExpired), errors.As(err, &expired):
		return "expired"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	}
	return "_OTHER"
}

func (s *instrumented) Append(ctx context.Context, key store.Key, e transcript.Entry) error {
	start := time.Now()
	err := s.inner.Append(ctx, key, e)
	s.record(ctx, "append", start, err)
	return err
}

func (s *instrumented) Read(ctx context.Context, key store.Key) ([]transcript.Entry, error) {
	start := time.Now()
	entries, err := s.inner.Read(ctx, key)
	s.record(ctx, "read", start, err)
	return entries, err
}

func (s *instrumented) List(ctx context.Context, ns store.Namespace, opt store.ListOptions) (store.SessionPage, error) {
	start := time.Now()
	page, err := s.inner.List(ctx, ns, opt)
	s.record(ctx, "list", start, err)
	return page, err
}

func (s *instrumented) Delete(ctx context.Context, key store.Key) error {
	start := time.Now()
	err := s.inner.Delete(ctx, key)
	s.record(ctx, "delete", start, err)
	return err
}

func (s *instrumented) AppendBatch(ctx context.Context, key store.Key, entries []transcript.Entry) error {
	start := time.Now()
	err := store.AppendBatch(ctx, s.inner, key, entries)
	s.record(ctx, "append_batch", start, err)
	return err
}

func (s *instrumented) AppendBulk(ctx context.Context, batches []store.Batch) error {
	start := time.Now()
	err := store.AppendBulk(ctx, s.inner, batches)
	s.record(ctx, "append_bulk", start, err)
	return err
}

func (s *instrumented) ReadRange(ctx context.Context, key store.Key, from, to int) ([]transcript.Entry, int, error) {
	start := time.Now()
	entries, total, err := store.ReadRange(ctx, s.inner, key, from, to)
	s.record(ctx, "read_range", start, err)
	return entries, total, err
}

func (s *instrumented) ReadTail(ctx context.Context, key store.Key, n int) ([]transcript.Entry, int, error) {
	start := time.Now()
	entries, total, err := store.ReadTail(ctx, s.inner, key, n)
	s.record(ctx, "read_tail", start, err)
	return entries, total, err
}

func (s *instrumented) Stat(ctx context.Context, key store.Key) (store.SessionInfo, error) {
	start := time.Now()
	info, err := store.Stat(ctx, s.inner, key)
	s.record(ctx, "stat", start, err)
	return info, err
}

func (s *instrumented) Prune(ctx context.Context, ns store.Namespace, r store.Retention, now time.Time) (int, error) {
	start := time.Now()
	n, err := store.Prune(ctx, s.inner, ns, r, now)
	s.record(ctx, "prune", start, err)
	return n, err
}

func (s *instrumented) Search(ctx context.Context, ns store.Namespace, q store.SearchQuery) ([]store.SearchHit, error) {
	start := time.Now()
	hits, err := store.Search(ctx, s.inner, ns, q)
	s.record(ctx, "search", start, err)
	return hits, err
}

func (s *instrumented) Notify(ctx context.Context, key store.Key, msg []byte) error {
	start := time.Now()
	err := store.Notify(ctx, s.inner, key, msg)
	if !errors.Is(err, errors.ErrUnsupported) {
		s.record(ctx, "notify", start, err)
	}
	return err
}

// Listen measures the time to begin listening.
func (s *instrumented) Listen(ctx context.Context, key store.Key) (<-chan []byte, error) {
	start := time.Now()
	ch, err := store.Listen(ctx, s.inner, key)
	if !errors.Is(err, errors.ErrUnsupported) {
		s.record(ctx, "listen", start, err)
	}
	return ch, err
}

// ListenFunc implements store.FuncListener, measuring the time to begin
// listening as Listen does.
func (s *instrumented) ListenFunc(key store.Key, fn func(msg []byte)) (func(), error) {
	start := time.Now()
	stop, err := store.ListenFunc(s.inner, key, fn)
	if !errors.Is(err, errors.ErrUnsupported) {
		s.record(context.Background(), "listen", start, err)
	}
	return stop, err
}

// Listeners implements store.ListenerCounter: the inner store's count,
// when it knows one. It is not measured: it is no operation of the
// store's.
func (s *instrumented) Listeners(key store.Key) (int, bool) { return store.Listeners(s.inner, key) }

// TTL implements store.Expiring: the inner store's TTL, or zero (never)
// when it has none, which is what a store without the capability means.
func (s *instrumented) TTL() time.Duration {
	if e, ok := s.inner.(store.Expiring); ok {
		return e.TTL()
	}
	return 0
}

// Close implements io.Closer: it closes the inner store when that holds
// resources (store.Close), and does nothing otherwise, which is what a
// store without Close means.
func (s *instrumented) Close() error { return store.Close(s.inner) }

// The mixins: the instrumented store as each capability whose presence
// matters, which its inner store is known to have (storecaps.go combines
// them).
type (
	locker          instrumented
	namespaceLister instrumented
	pinger          instrumented
)

// Lock measures the wait for the lock, not how long it is held.
func (m *locker) Lock(ctx context.Context, key store.Key) (func(), error) {
	s := (*instrumented)(m)
	t := time.Now()
	unlock, err := s.inner.(store.Locker).Lock(ctx, key)
	s.record(ctx, "lock", t, err)
	return unlock, err
}

func (m *namespaceLister) Namespaces(ctx context.Context) ([]store.Namespace, error) {
	s := (*instrumented)(m)
	t := time.Now()
	nss, err := s.inner.(store.NamespaceLister).Namespaces(ctx)
	s.record(ctx, "namespaces", t, err)
	return nss, err
}

func (m *pinger) Ping(ctx context.Context) error {
	s := (*instrumented)(m)
	t := time.Now()
	err := s.inner.(store.Pinger).Ping(ctx)
	s.record(ctx, "ping", t, err)
	return err
}
