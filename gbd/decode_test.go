package gbd

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The structured decoder, following a solve's views cut by cut (and a view that starts again),
// returns the best-scored admissible assignment the feasibility cuts allow, and the master's
// optimum, as brute force over the enumerated set finds them.
func TestStagedDecoderAgainstBruteForce(t *testing.T) {
	ny := 20
	ypb, imp := pumpSet(t, 4, 5, true), pumpSet(t, 4, 5, false)
	rng := rand.New(rand.NewPCG(7, 11))
	var dec StagedDecoder
	y, yo, ys, z := make([]float64, ny), make([]float64, ny), make([]float64, ny), make([]float64, ny)
	const nc = 6
	score := make([]float64, ny)
	checked := 0
	for run := range 3 {
		var cuts []Cut
		for k := range 25 {
			c := stagedTestCut(rng, ny, k%4 == 3, 0.2)
			c.Iter, c.Carried = k, run == 2 && k < 5
			cuts = append(cuts, c)
			for i := range score {
				score[i] = rng.NormFloat64()
			}
			v := &MasterView{Cuts: cuts, Prev: z, Ypb: imp}
			ok, okOpt := found(t, dec.Best(v, score, y)), found(t, dec.Optimum(v, yo))
			okS := found(t, dec.Screened(v, score, nc, ys))
			// Brute force.
			bestS, bestMu, any := math.Inf(-1), math.Inf(1), false
			type cand struct{ s, mu float64 }
			var all []cand
			for j := range ypb.Count() {
				ypb.Float(j, z)
				if !SatisfiesFeasibilityCuts(cuts, z) {
					continue
				}
				any = true
				s := 0.0
				for i := range z {
					s += score[i] * z[i]
				}
				bestS = math.Max(bestS, s)
				bestMu = math.Min(bestMu, MaxOptimality(cuts, z))
				all = append(all, cand{s, MaxOptimality(cuts, z)})
			}
			// Screened: the least μ among the k best-scored.
			slices.SortFunc(all, func(a, b cand) int { return cmp.Compare(b.s, a.s) })
			screenMu := math.Inf(1)
			for _, c := range all[:min(nc, len(all))] {
				screenMu = math.Min(screenMu, c.mu)
			}
			clear(z)
			if ok != any || okOpt != any || okS != any {
				t.Fatalf("run %d cut %d: decoder found an assignment %v/%v, brute force %v", run, k, ok, okOpt, any)
			}
			if !any {
				break
			}
			s := 0.0
			for i := range y {
				s += score[i] * y[i]
			}
			if !imp.Contains(y) || !SatisfiesFeasibilityCuts(cuts, y) || math.Abs(s-bestS) > 1e-9 {
				t.Fatalf("run %d cut %d: Best %v scores %v, brute force %v", run, k, y, s, bestS)
			}
			if mu := MaxOptimality(cuts, yo); !imp.Contains(yo) || !SatisfiesFeasibilityCuts(cuts, yo) || math.Abs(mu-bestMu) > 1e-9*(1+math.Abs(bestMu)) {
				t.Fatalf("run %d cut %d: Optimum %v has μ %v, brute force %v", run, k, yo, mu, bestMu)
			}
			sc := 0.0
			for i := range ys {
				sc += score[i] * ys[i]
			}
			if mu := MaxOptimality(cuts, ys); !imp.Contains(ys) || !SatisfiesFeasibilityCuts(cuts, ys) ||
				math.Abs(mu-screenMu) > 1e-9*(1+math.Abs(screenMu)) || sc < all[min(nc, len(all))-1].s-1e-9 {
				t.Fatalf("run %d cut %d: Screened(%d) %v has μ %v and score %v, brute force μ %v over the %d best-scored",
					run, k, nc, ys, mu, sc, screenMu, min(nc, len(all)))
			}
			checked++
		}
	}
	if checked < 30 {
		t.Fatalf("only %d views checked", checked)
	}
}

// found is whether a decoder call found an assignment: nil, or ErrNoAdmissible for none; any other
// error fails the test.
func found(t *testing.T, err error) bool {
	t.Helper()
	if err != nil && !errors.Is(err, ErrNoAdmissible) {
		t.Fatal(err)
	}
	return err == nil
}

// A view whose cuts are not a continuation of the last one's (another solve) is decoded over its
// own cuts, not the previous solve's.
func TestStagedDecoderStartsAgainOnANewSolve(t *testing.T) {
	imp := pumpSet(t, 3, 4, false)
	// Solve 1 forbids pump 0 in block 0; solve 2 does not.
	forbid := Cut{Kind: FeasibilityCut, Coef: make([]float64, 12), Const: -0.5}
	forbid.Coef[0] = 1
	score := make([]float64, 12)
	score[0] = 1
	y := make([]float64, 12)
	var dec StagedDecoder
	if err := dec.Best(&MasterView{Cuts: []Cut{forbid}, Ypb: imp}, score, y); err != nil || y[0] != 0 {
		t.Fatalf("solve 1: y[0] = %v (%v), want 0", y[0], err)
	}
	other := Cut{Kind: OptimalityCut, Coef: make([]float64, 12), Const: 3}
	if err := dec.Best(&MasterView{Cuts: []Cut{other}, Ypb: imp}, score, y); err != nil || y[0] != 1 {
		t.Fatalf("solve 2: y[0] = %v (%v), want 1: the first solve's cut was kept", y[0], err)
	}
}

// TestPolisherAgainstBruteForce: from every admissible assignment of a 20-binary staged set that
// the feasibility cuts allow (a sample of them), the polished assignment is admissible, allowed,
// no worse than the start by μ_B, and a local optimum: brute force over every setting of every
// stage, the others held, finds nothing better.
func TestPolisherAgainstBruteForce(t *testing.T) {
	ny := 20
	ypb := pumpSet(t, 4, 5, true)
	rng := rand.New(rand.NewPCG(3, 17))
	var pol Polisher
	y, z := make([]float64, ny), make([]float64, ny)
	checked, moved := 0, 0
	for run := range 4 {
		var cuts []Cut
		for k := range 30 {
			cuts = append(cuts, stagedTestCut(rng, ny, k%15 == 14, 0.2))
		}
		for j := 0; j < ypb.Count(); j += 1 + rng.IntN(max(1, ypb.Count()/200)) {
			ypb.Float(j, y)
			if !SatisfiesFeasibilityCuts(cuts, y) {
				continue
			}
			start := MaxOptimality(cuts, y)
			mu, moves := pol.Polish(ypb, cuts, y)
			checked++
			if moves > 0 {
				moved++
			}
			if !admits(ypb.Rows, y) || !SatisfiesFeasibilityCuts(cuts, y) {
				t.Fatalf("run %d, start %d: polished %v is not admissible and allowed", run, j, y)
			}
			if got := MaxOptimality(cuts, y); math.Abs(got-mu) > 1e-9 || mu > start+1e-12 {
				t.Fatalf("run %d, start %d: μ_B %v (reported %v), start %v", run, j, got, mu, start)
			}
			for _, st := range ypb.Stages {
				copy(z, y)
				for s := range 1 << len(st) {
					for b, i := range st {
						z[i] = float64(s >> b & 1)
					}
					if admits(ypb.Rows, z) && SatisfiesFeasibilityCuts(cuts, z) && MaxOptimality(cuts, z) < mu-1e-9*math.Max(1, math.Abs(mu)) {
						t.Fatalf("run %d, start %d: stage %v setting %b improves μ_B to %v from %v", run, j, st, s, MaxOptimality(cuts, z), mu)
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
	cuts := []Cut{stagedTestCut(rng, ny, false, 0.2), {Kind: FeasibilityCut, Coef: make([]float64, ny), Const: 1}}
	ypb.Float(0, y)
	before := slices.Clone(y)
	if _, moves := pol.Polish(ypb, cuts, y); moves != 0 || !slices.Equal(y, before) {
		t.Errorf("polished an assignment the feasibility cuts exclude")
	}
	flat := pumpSet(t, 4, 5, true)
	flat.Stages = nil
	if _, moves := pol.Polish(flat, cuts[:1], y); moves != 0 || !slices.Equal(y, before) {
		t.Errorf("polished over a set without stages")
	}
}

// admits reports whether y keeps every pure row.
func admits(rows []PureRow, y []float64) bool {
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
	ypb := pumpSet(b, 5, 8, false)
	rng := rand.New(rand.NewPCG(1, 40))
	cuts := make([]Cut, 400)
	for k := range cuts {
		cuts[k] = stagedTestCut(rng, 40, false, 0)
	}
	var pol Polisher
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
