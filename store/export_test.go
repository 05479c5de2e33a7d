package store

// TopHitsForTest exposes the search fallback's bounded heap to tests.
type TopHitsForTest struct{ t *topHits }

func NewTopHitsForTest(limit int) TopHitsForTest { return TopHitsForTest{newTopHits(limit)} }
func (x TopHitsForTest) Add(h SearchHit)         { x.t.add(h) }
func (x TopHitsForTest) Sorted() []SearchHit     { return x.t.sorted() }
