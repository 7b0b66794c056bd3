package chain

import (
	"sync"
	"sync/atomic"
)

// chunksPerWorker is how many pieces forEachChunk cuts each worker's share
// into. One piece each left a worker idle for a fifth of a verify's commit
// checks, the newest commits (larger trees) costing more than the oldest;
// a few pieces each balance that, and are still long runs of neighbouring
// items, so a worker's caches stay warm.
const chunksPerWorker = 8

// ForEachChunk splits n items into contiguous chunks, runs do on them from
// workers goroutines, each taking the next chunk in order as it finishes
// one (w says which worker), and returns the first error; after one, no
// worker starts another chunk. Contiguous
// chunks keep a worker's caches warm: verify's workers walk neighbouring
// commits, whose trees they share.
func ForEachChunk(workers, n int, do func(w, lo, hi int) error) error {
	workers = max(1, min(workers, n))
	size := max(1, (n+workers*chunksPerWorker-1)/(workers*chunksPerWorker))
	var next atomic.Int64
	var failed atomic.Bool
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for !failed.Load() {
				lo := int(next.Add(int64(size))) - size
				if lo >= n {
					return
				}
				if errs[w] = do(w, lo, min(lo+size, n)); errs[w] != nil {
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
