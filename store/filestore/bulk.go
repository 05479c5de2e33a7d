package filestore

import (
	"context"
	"sync"

	"github.com/spool-go/spool/store"
)

// bulkWriters bounds the sessions AppendBulk writes at once.
const bulkWriters = 8

// AppendBulk appends every batch (store.BulkAppender), several sessions at
// a time so that their syncs overlap (each session is its own file, and
// the disk completes concurrent flushes together), each session's batches
// in order. It returns once every batch is on disk, or the first error;
// batches of other sessions may have been appended then.
func (s *Store) AppendBulk(ctx context.Context, batches []store.Batch) error {
	var order []store.Key
	bySession := map[store.Key][]store.Batch{}
	for _, b := range batches {
		if _, ok := bySession[b.Key]; !ok {
			order = append(order, b.Key)
		}
		bySession[b.Key] = append(bySession[b.Key], b)
	}
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
		next  = make(chan store.Key)
	)
	for range min(bulkWriters, len(order)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for key := range next {
				for _, b := range bySession[key] {
					if err := s.AppendBatch(ctx, key, b.Entries); err != nil {
						mu.Lock()
						if first == nil {
							first = err
						}
						mu.Unlock()
						break
					}
				}
			}
		}()
	}
	for _, key := range order {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			break
		}
		next <- key
	}
	close(next)
	wg.Wait()
	return first
}
