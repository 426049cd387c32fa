// Package gbdtest holds the fixtures the tests of gbd and of its masters share: Y_pb shaped like a
// pump station's (pumps × blocks, the blocks as stages) and random cuts over it.
package gbdtest

import (
	"math"
	"math/rand/v2"
	"testing"

	"gbdmpc/gbd"
)

// PumpRows are the pump station's pure rows for np pumps and nb blocks (y[p,b] at p·nb + b): at
// most two pumps per block, and the minimum up-time rule; stages are the blocks.
func PumpRows(np, nb int) (rows []gbd.PureRow, stages [][]int) {
	stages = make([][]int, nb)
	for bl := range nb {
		r := gbd.PureRow{RHS: 2}
		for p := range np {
			r.Idx, r.Coef = append(r.Idx, p*nb+bl), append(r.Coef, 1)
			stages[bl] = append(stages[bl], p*nb+bl)
		}
		rows = append(rows, r)
	}
	for p := range np {
		for bl := 1; bl+1 < nb; bl++ {
			rows = append(rows, gbd.PureRow{Idx: []int{p*nb + bl, p*nb + bl - 1, p*nb + bl + 1}, Coef: []float64{1, -1, -1}})
		}
	}
	return rows, stages
}

// PumpSet is PumpRows' Y_pb with its stages: enumerated, or implicit (kept as its rows).
func PumpSet(tb testing.TB, np, nb int, enumerate bool) *gbd.Admissible {
	tb.Helper()
	rows, stages := PumpRows(np, nb)
	var a *gbd.Admissible
	var err error
	if enumerate {
		a, err = gbd.EnumerateAdmissible(np*nb, rows, 1<<20)
	} else {
		a, err = gbd.ImplicitAdmissible(np*nb, rows)
	}
	if err != nil {
		tb.Fatal(err)
	}
	a.Stages = stages
	return a
}

// RandomCut is a random optimality cut over ny binaries, or a feasibility cut φ_f(y) = Σ a_i y_i − q
// ≤ 0, a_i in [0,1), that keeps the lighter assignments (q a share of Σ a_i from lo to lo + 0.2).
func RandomCut(rng *rand.Rand, ny int, feasibility bool, lo float64) gbd.Cut {
	c := gbd.Cut{Kind: gbd.OptimalityCut, Const: 5 * rng.NormFloat64(), Coef: make([]float64, ny)}
	if !feasibility {
		for i := range c.Coef {
			c.Coef[i] = 3 * rng.NormFloat64()
		}
		return c
	}
	c.Kind = gbd.FeasibilityCut
	sum := 0.0
	for i := range c.Coef {
		c.Coef[i] = rng.Float64()
		sum += c.Coef[i]
	}
	c.Const = -sum * (lo + 0.2*rng.Float64())
	return c
}

// BruteMaster solves the master problem by checking every assignment of an enumerated ypb: the
// index of the best one the feasibility cuts allow (−1 when they allow none) and its μ_B.
func BruteMaster(ypb *gbd.Admissible, cuts []gbd.Cut) (best int, mu float64) {
	best, mu = -1, math.Inf(1)
	y := make([]float64, ypb.NY)
	for j := range ypb.Count() {
		ypb.Float(j, y)
		if !gbd.SatisfiesFeasibilityCuts(cuts, y) {
			continue
		}
		if v := gbd.MaxOptimality(cuts, y); best < 0 || v < mu {
			best, mu = j, v
		}
	}
	return best, mu
}
