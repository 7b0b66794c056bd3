package evidence

import "sync"

// forEachChunk splits n items into one contiguous chunk per worker, runs
// do on the chunks concurrently and returns the first error. Contiguous
// chunks keep a worker's caches warm: verify's workers walk neighbouring
// commits, whose trees they share.
func forEachChunk(workers, n int, do func(w, lo, hi int) error) error {
	workers = max(1, min(workers, n))
	chunk := (n + workers - 1) / workers
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, n)
		if lo < hi {
			wg.Go(func() { errs[w] = do(w, lo, hi) })
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
