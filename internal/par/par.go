// Package par runs independent jobs on a fixed number of goroutines.
package par

import (
	"context"
	"sync"
)

// Each runs job(i) for i in [0, n) on up to workers goroutines (at least one), each made by
// newWorker so that it can own its state (a solver, a buffer), and returns when all have finished
// or ctx ended (then the jobs not yet started never start, and ctx's error is returned). Jobs
// write their results to their own slots; nothing is ordered between them.
func Each(ctx context.Context, n, workers int, newWorker func() func(i int)) error {
	workers = max(1, min(workers, n))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			job := newWorker()
			for i := range next {
				job(i)
			}
		}()
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return ctx.Err()
}
