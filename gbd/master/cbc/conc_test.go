package cbc

import (
	"math"
	"math/rand"
	"sync"
	"testing"
)

// TestConcurrentMatchesSequential solves the same masters sequentially and
// from several goroutines at once; results must agree. Run with -race: the
// Go side shares nothing mutable between solves, and the CBC side is
// serialised (doc.go explains why it has to be).
func TestConcurrentMatchesSequential(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	var ps []*Problem
	var opts []Options
	for i := 0; i < 48; i++ {
		ps = append(ps, randomMaster(rng, 5+rng.Intn(8), 1+rng.Intn(30), rng.Intn(2)).problem())
		o := Options{}
		switch i % 4 {
		case 1:
			o.MaxNodes = 3 // stopped path, includes the LP-bound solve
		case 2:
			o.Preset = PresetCBC
		case 3:
			o.Start = make([]float64, ps[i].NumCols)
		}
		opts = append(opts, o)
	}
	seq := make([]Result, len(ps))
	for i, p := range ps {
		r, err := Solve(p, opts[i])
		if err != nil {
			t.Fatal(err)
		}
		seq[i] = r
	}
	const workers = 6
	par := make([][]Result, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		par[w] = make([]Result, len(ps))
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for k := range ps {
				i := (k + w*7) % len(ps) // different order per worker
				r, err := Solve(ps[i], opts[i])
				if err != nil {
					t.Error(err)
					return
				}
				par[w][i] = r
			}
		}(w)
	}
	wg.Wait()
	for w := range par {
		for i, r := range par[w] {
			s := seq[i]
			if r.Status != s.Status || !sameFloat(r.Obj, s.Obj) || !sameFloat(r.BestBound, s.BestBound) || r.Nodes != s.Nodes {
				t.Errorf("worker %d problem %d: %v obj %g bound %g nodes %d; sequential %v obj %g bound %g nodes %d",
					w, i, r.Status, r.Obj, r.BestBound, r.Nodes, s.Status, s.Obj, s.BestBound, s.Nodes)
			}
		}
	}
}

func sameFloat(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*(1+math.Abs(b))
}
