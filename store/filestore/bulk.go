package filestore

import (
	"context"
	"fmt"
	"sync"

	"github.com/spool-go/spool/internal/durable"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// bulkWriters bounds the sessions AppendBulk writes at once.
const bulkWriters = 8

// dirSyncs collects the folders a bulk made transcripts in, each synced
// once at the end of the bulk rather than once a transcript.
type dirSyncs struct {
	mu   sync.Mutex
	dirs map[string]bool
}

func (d *dirSyncs) add(dir string) {
	d.mu.Lock()
	d.dirs[dir] = true
	d.mu.Unlock()
}

// AppendBulk appends every batch (store.BulkAppender), several sessions at
// a time so that their syncs overlap (each session is its own file, and
// the disk completes concurrent flushes together), each session's batches
// in order, and syncs each folder it made transcripts in once, at the end,
// rather than once a transcript. It returns once every batch is on disk,
// names included, or the first error; batches of other sessions may have
// been appended then (and, before the folders' sync, a crash may lose the
// new transcripts of the bulk whole: none of them was acknowledged).
func (s *Store) AppendBulk(ctx context.Context, batches []store.Batch) error {
	dirs := &dirSyncs{dirs: map[string]bool{}}
	var order []store.Key
	bySession := map[store.Key][]store.Batch{}
	creates := map[store.Namespace]bool{}
	for _, b := range batches {
		if _, ok := bySession[b.Key]; !ok {
			order = append(order, b.Key)
		}
		bySession[b.Key] = append(bySession[b.Key], b)
		if checkKey(b.Key) == nil { // a bad one fails as it comes, below
			creates[b.Key.Namespace()] = creates[b.Key.Namespace()] || len(b.Entries) > 0 && b.Entries[0].ParentID == ""
		}
	}
	// Each namespace is loaded first (its folder proved or compared once),
	// so that the transcripts the bulk makes are this process's changes
	// to a folder it knows, recorded as they are made (dirchange.go),
	// however many of them are made at once.
	for ns, create := range creates {
		ix, err := s.index(ctx, ns, create)
		if err == nil && ix != nil {
			err = s.ensureLoaded(ctx, ix)
		}
		if err != nil {
			return err
		}
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
					if err := s.appendBulkBatch(ctx, key, b.Entries, dirs); err != nil {
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
	for dir := range dirs.dirs {
		if err := durable.SyncDir(dir); err != nil && first == nil {
			first = fmt.Errorf("filestore: %w", err)
		}
	}
	return first
}

// appendBulkBatch is AppendBatch leaving the folder's sync to dirs.
func (s *Store) appendBulkBatch(ctx context.Context, key store.Key, entries []transcript.Entry, dirs *dirSyncs) error {
	if err := checkKey(key); err != nil {
		return err
	}
	plains, err := storekit.CheckBatch(key, entries)
	if err != nil || len(entries) == 0 {
		return err
	}
	return s.appendAll(ctx, key, entries, plains, dirs)
}
