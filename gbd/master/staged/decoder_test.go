package staged

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/gbd/gbdtest"
)

// The structured decoder, following a solve's views cut by cut (and a view that starts again),
// returns the best-scored admissible assignment the feasibility cuts allow, and the master's
// optimum, as brute force over the enumerated set finds them, with the cuts' hinges too.
func TestDecoderAgainstBruteForce(t *testing.T) {
	ny := 20
	ypb, imp := gbdtest.PumpSet(t, 4, 5, true), gbdtest.PumpSet(t, 4, 5, false)
	rng := rand.New(rand.NewPCG(7, 11))
	var dec Decoder
	y, yo, ys, z := make([]float64, ny), make([]float64, ny), make([]float64, ny), make([]float64, ny)
	const nc = 6
	score := make([]float64, ny)
	checked := 0
	// Start costs between consecutive blocks as hinges (gbd.Hinges), which the last run's
	// optimality cuts carry.
	hs := &gbd.Hinges{}
	for s := 1; s < len(imp.Stages); s++ {
		for j := range imp.Stages[s] {
			hs.Terms = append(hs.Terms, gbd.Hinge{Weight: 2 * rng.Float64(),
				Idx: []int{imp.Stages[s][j], imp.Stages[s-1][j]}, Coef: []float64{1, -1}})
		}
	}
	for run := range 4 {
		var cuts []gbd.Cut
		for k := range 25 {
			c := gbdtest.RandomCut(rng, ny, k%4 == 3, 0.2)
			c.Iter, c.Carried = k, run == 2 && k < 5
			if run == 3 && c.Kind == gbd.OptimalityCut {
				c.Hinges = hs
			}
			cuts = append(cuts, c)
			for i := range score {
				score[i] = rng.NormFloat64()
			}
			v := &gbd.MasterView{Cuts: cuts, Prev: z, Ypb: imp}
			ok, okOpt := found(t, dec.Best(v, score, y)), found(t, dec.Optimum(v, yo))
			okS := found(t, dec.Screened(v, score, nc, ys))
			// Brute force.
			bestS, bestMu, any := math.Inf(-1), math.Inf(1), false
			type cand struct{ s, mu float64 }
			var all []cand
			for j := range ypb.Count() {
				ypb.Float(j, z)
				if !gbd.SatisfiesFeasibilityCuts(cuts, z) {
					continue
				}
				any = true
				s := 0.0
				for i := range z {
					s += score[i] * z[i]
				}
				bestS = math.Max(bestS, s)
				bestMu = math.Min(bestMu, gbd.MaxOptimality(cuts, z))
				all = append(all, cand{s, gbd.MaxOptimality(cuts, z)})
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
			if !imp.Contains(y) || !gbd.SatisfiesFeasibilityCuts(cuts, y) || math.Abs(s-bestS) > 1e-9 {
				t.Fatalf("run %d cut %d: Best %v scores %v, brute force %v", run, k, y, s, bestS)
			}
			if mu := gbd.MaxOptimality(cuts, yo); !imp.Contains(yo) || !gbd.SatisfiesFeasibilityCuts(cuts, yo) || math.Abs(mu-bestMu) > 1e-9*(1+math.Abs(bestMu)) {
				t.Fatalf("run %d cut %d: Optimum %v has μ %v, brute force %v", run, k, yo, mu, bestMu)
			}
			sc := 0.0
			for i := range ys {
				sc += score[i] * ys[i]
			}
			if mu := gbd.MaxOptimality(cuts, ys); !imp.Contains(ys) || !gbd.SatisfiesFeasibilityCuts(cuts, ys) ||
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
func TestDecoderStartsAgainOnANewSolve(t *testing.T) {
	imp := gbdtest.PumpSet(t, 3, 4, false)
	// Solve 1 forbids pump 0 in block 0; solve 2 does not.
	forbid := gbd.Cut{Kind: gbd.FeasibilityCut, Coef: make([]float64, 12), Const: -0.5}
	forbid.Coef[0] = 1
	score := make([]float64, 12)
	score[0] = 1
	y := make([]float64, 12)
	var dec Decoder
	if err := dec.Best(&gbd.MasterView{Cuts: []gbd.Cut{forbid}, Ypb: imp}, score, y); err != nil || y[0] != 0 {
		t.Fatalf("solve 1: y[0] = %v (%v), want 0", y[0], err)
	}
	other := gbd.Cut{Kind: gbd.OptimalityCut, Coef: make([]float64, 12), Const: 3}
	if err := dec.Best(&gbd.MasterView{Cuts: []gbd.Cut{other}, Ypb: imp}, score, y); err != nil || y[0] != 1 {
		t.Fatalf("solve 2: y[0] = %v (%v), want 1: the first solve's cut was kept", y[0], err)
	}
}
