package gbd_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/gbd/gbdtest"
)

// TestPolisherAgainstBruteForce: from every admissible assignment of a 20-binary staged set that
// the feasibility cuts allow (a sample of them), the polished assignment is admissible, allowed,
// no worse than the start by μ_B, and a local optimum: brute force over every setting of every
// stage, the others held, finds nothing better.
func TestPolisherAgainstBruteForce(t *testing.T) {
	ny := 20
	ypb := gbdtest.PumpSet(t, 4, 5, true)
	rng := rand.New(rand.NewPCG(3, 17))
	var pol gbd.Polisher
	y, z := make([]float64, ny), make([]float64, ny)
	checked, moved := 0, 0
	for run := range 4 {
		var cuts []gbd.Cut
		for k := range 30 {
			cuts = append(cuts, gbdtest.RandomCut(rng, ny, k%15 == 14, 0.2))
		}
		for j := 0; j < ypb.Count(); j += 1 + rng.IntN(max(1, ypb.Count()/200)) {
			ypb.Float(j, y)
			if !gbd.SatisfiesFeasibilityCuts(cuts, y) {
				continue
			}
			start := gbd.MaxOptimality(cuts, y)
			mu, moves := pol.Polish(ypb, cuts, y)
			checked++
			if moves > 0 {
				moved++
			}
			if !admits(ypb.Rows, y) || !gbd.SatisfiesFeasibilityCuts(cuts, y) {
				t.Fatalf("run %d, start %d: polished %v is not admissible and allowed", run, j, y)
			}
			if got := gbd.MaxOptimality(cuts, y); math.Abs(got-mu) > 1e-9 || mu > start+1e-12 {
				t.Fatalf("run %d, start %d: μ_B %v (reported %v), start %v", run, j, got, mu, start)
			}
			for _, st := range ypb.Stages {
				copy(z, y)
				for s := range 1 << len(st) {
					for b, i := range st {
						z[i] = float64(s >> b & 1)
					}
					if admits(ypb.Rows, z) && gbd.SatisfiesFeasibilityCuts(cuts, z) && gbd.MaxOptimality(cuts, z) < mu-1e-9*math.Max(1, math.Abs(mu)) {
						t.Fatalf("run %d, start %d: stage %v setting %b improves μ_B to %v from %v", run, j, st, s, gbd.MaxOptimality(cuts, z), mu)
					}
				}
			}
		}
	}
	if checked < 100 || moved < checked/4 {
		t.Fatalf("%d starts checked, %d moved: the test exercises too little", checked, moved)
	}
	t.Logf("%d starts, %d improved", checked, moved)

	// What it must leave alone: a start the feasibility cuts exclude, a set without stages.
	cuts := []gbd.Cut{gbdtest.RandomCut(rng, ny, false, 0.2), {Kind: gbd.FeasibilityCut, Coef: make([]float64, ny), Const: 1}}
	ypb.Float(0, y)
	before := slices.Clone(y)
	if _, moves := pol.Polish(ypb, cuts, y); moves != 0 || !slices.Equal(y, before) {
		t.Errorf("polished an assignment the feasibility cuts exclude")
	}
	flat := gbdtest.PumpSet(t, 4, 5, true)
	flat.Stages = nil
	if _, moves := pol.Polish(flat, cuts[:1], y); moves != 0 || !slices.Equal(y, before) {
		t.Errorf("polished over a set without stages")
	}
}

// admits reports whether y keeps every pure row.
func admits(rows []gbd.PureRow, y []float64) bool {
	for _, r := range rows {
		s := 0.0
		for t, i := range r.Idx {
			s += r.Coef[t] * y[i]
		}
		if s > r.RHS+1e-9 {
			return false
		}
	}
	return true
}

// BenchmarkPolish40 polishes the all-off assignment of a 40-binary station (5 pumps, 8 blocks, at
// most 2 running) against 400 optimality cuts, the size of a late master of a 40-binary day.
func BenchmarkPolish40(b *testing.B) {
	ypb := gbdtest.PumpSet(b, 5, 8, false)
	rng := rand.New(rand.NewPCG(1, 40))
	cuts := make([]gbd.Cut, 400)
	for k := range cuts {
		cuts[k] = gbdtest.RandomCut(rng, 40, false, 0)
	}
	var pol gbd.Polisher
	y := make([]float64, 40)
	moves := 0
	b.ReportAllocs()
	for b.Loop() {
		clear(y)
		_, m := pol.Polish(ypb, cuts, y)
		moves += m
	}
	b.ReportMetric(float64(moves)/float64(b.N), "moves/op")
}
