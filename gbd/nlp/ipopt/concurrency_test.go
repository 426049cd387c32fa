package ipopt

import (
	"fmt"
	"math"
	"sync"
	"testing"
)

// stressJob is one solve of the concurrency test; jobs differ in problem and data so that
// crosstalk between concurrent solves would show up as a wrong answer.
type stressJob struct {
	name string
	p    func() *Problem
	x0   []float64
}

func stressJobs() []stressJob {
	var jobs []stressJob
	for k := range 32 {
		var y [5]float64
		for i := range 5 {
			y[i] = float64(k >> i & 1)
		}
		jobs = append(jobs, stressJob{fmt.Sprintf("synthesis y=%v", y),
			func() *Problem { return newSynthesis(y).problem() }, synthesisX0})
	}
	for _, c := range knownCases {
		jobs = append(jobs, stressJob{c.name, c.p, c.x0})
	}
	jobs = append(jobs,
		stressJob{"infeasible", infeasibleDisk, []float64{0, 0}},
		stressJob{"rosenbrock", func() *Problem { return rosenbrock(6, 0) }, rosenStart(6)},
	)
	return jobs
}

func sameResult(a, b Result) error {
	if a.Status != b.Status || a.Iterations != b.Iterations {
		return fmt.Errorf("status/iterations %v/%d vs %v/%d", a.Status, a.Iterations, b.Status, b.Iterations)
	}
	// Identical inputs through a deterministic solver must give bit-identical output; any
	// difference means state leaked between solves.
	eq := func(x, y []float64) bool {
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
				return false
			}
		}
		return len(x) == len(y)
	}
	if math.Float64bits(a.Obj) != math.Float64bits(b.Obj) || !eq(a.X, b.X) || !eq(a.G, b.G) ||
		!eq(a.MultG, b.MultG) || !eq(a.MultXL, b.MultXL) || !eq(a.MultXU, b.MultXU) {
		return fmt.Errorf("values differ: obj %.17g vs %.17g, x %v vs %v", a.Obj, b.Obj, a.X, b.X)
	}
	return nil
}

// TestConcurrentSolves runs many solves from several goroutines and compares each with the
// sequential result of the same job. Run it with -race: the Go side (handles, per-solve state)
// must be race-free, and the C side is serialised by ipoptMu (see doc.go).
func TestConcurrentSolves(t *testing.T) {
	jobs := stressJobs()
	want := make([]Result, len(jobs))
	for i, j := range jobs {
		r, err := Solve(j.p(), j.x0, nil, Options{})
		if err != nil {
			t.Fatalf("%s: %v", j.name, err)
		}
		want[i] = r
	}
	workers, rounds := 6, 2 // 6·2·len(jobs) ≈ 500 solves
	if testing.Short() {
		workers, rounds = 4, 1
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				for k := range jobs {
					i := (k + w*7 + r*3) % len(jobs) // different interleavings per worker
					got, err := Solve(jobs[i].p(), jobs[i].x0, nil, Options{})
					if err == nil {
						err = sameResult(got, want[i])
					}
					if err != nil {
						errs <- fmt.Errorf("worker %d, %s: %w", w, jobs[i].name, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
