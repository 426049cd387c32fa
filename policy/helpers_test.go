package policy

import (
	"math"
	"math/rand/v2"
	"testing"

	"gbdmpc/gbd"
)

// synthesisYpb is the case study's action space: y1 + y2 = 1 (E14) and y4 + y5 ≤ 1 (E15) leave 12 of
// the 32 assignments of five binaries.
func synthesisYpb(t testing.TB) *gbd.Admissible {
	t.Helper()
	rows := []gbd.PureRow{
		{Idx: []int{0, 1}, Coef: []float64{1, 1}, RHS: 1},
		{Idx: []int{0, 1}, Coef: []float64{-1, -1}, RHS: -1},
		{Idx: []int{3, 4}, Coef: []float64{1, 1}, RHS: 1},
	}
	a, err := gbd.EnumerateAdmissible(5, rows, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.Count() != 12 {
		t.Fatalf("|Y_pb| = %d, want 12", a.Count())
	}
	return a
}

// randomMaster draws ncuts cuts over ny binaries with some zero coefficients, roughly a third of them
// feasibility cuts, and a binary previous iterate.
func randomMaster(rng *rand.Rand, ny, ncuts int) ([]gbd.Cut, []float64) {
	cuts := make([]gbd.Cut, ncuts)
	for k := range cuts {
		c := gbd.Cut{Coef: make([]float64, ny), Const: 10 * rng.NormFloat64(), Iter: k}
		if rng.IntN(3) == 0 {
			c.Kind = gbd.FeasibilityCut
			c.Const = rng.NormFloat64()
		}
		for i := range c.Coef {
			if rng.IntN(4) != 0 {
				c.Coef[i] = 5 * rng.NormFloat64()
			}
		}
		cuts[k] = c
	}
	prev := make([]float64, ny)
	for i := range prev {
		prev[i] = float64(rng.IntN(2))
	}
	return cuts, prev
}

func randVec(rng *rand.Rand, n int, scale float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = scale * rng.NormFloat64()
	}
	return v
}

// gradTol is the finite-difference acceptance: relative error 1e-5, with the denominator floored at
// 1e-2 so that gradients near zero are judged on an absolute 1e-7 (central differences with step 1e-5
// carry about 1e-10 of rounding and truncation error).
const (
	fdStep  = 1e-5
	gradTol = 1e-5
)

// checkGrad compares analytic[i] with the central difference of f in x[i] for every i. kink, when not
// nil, reports whether the ReLU activation pattern of the current x differs from the unperturbed one;
// such coordinates straddle a kink where the derivative does not exist and are skipped (and counted).
func checkGrad(t *testing.T, name string, x, analytic []float64, f func() float64, kink func() bool) {
	t.Helper()
	skipped := 0
	worst := 0.0
	for i := range x {
		orig := x[i]
		x[i] = orig + fdStep
		fp := f()
		kp := kink != nil && kink()
		x[i] = orig - fdStep
		fm := f()
		km := kink != nil && kink()
		x[i] = orig
		if kp || km {
			skipped++
			continue
		}
		num := (fp - fm) / (2 * fdStep)
		den := math.Max(math.Max(math.Abs(num), math.Abs(analytic[i])), 1e-2)
		rel := math.Abs(num-analytic[i]) / den
		worst = math.Max(worst, rel)
		if rel > gradTol {
			t.Errorf("%s[%d]: analytic %.10g, finite difference %.10g (relative error %.2g)", name, i, analytic[i], num, rel)
		}
	}
	if skipped > len(x)/10 {
		t.Errorf("%s: %d of %d coordinates straddle a ReLU kink; the test checks too little", name, skipped, len(x))
	}
	t.Logf("%s: %d coordinates, worst relative error %.2g, %d skipped at kinks", name, len(x), worst, skipped)
}

func signPattern(dst []bool, zs ...[]float64) []bool {
	dst = dst[:0]
	for _, z := range zs {
		for _, v := range z {
			dst = append(dst, v > 0)
		}
	}
	return dst
}

func samePattern(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// synthTask generates the learning task. Each parameter set draws a hidden cost vector γ; each of its
// master problems holds a few optimality cuts that are noisy affine functions around γ·y, and, on about
// half of them, feasibility cuts φ_f(y) = a(1 − y_i) − b that forbid y_i = 0. The label is the exact
// master optimum: argmin over Y_pb of max_k φ_o^(k)(y) subject to every feasibility cut, found by
// enumeration. As in the case study, where the cost ranges of the binaries differ, each binary's γ_i is
// centred on its own value: with the paper's node features the network can tell binaries apart only by
// the coefficients on their edges.
func synthTask(rng *rand.Rand, ypb *gbd.Admissible, sets, perSet int) *Dataset {
	ds := &Dataset{Family: "synthetic", Ypb: ypb}
	ny := ypb.NY
	y := make([]float64, ny)
	for s := 0; s < sets; s++ {
		gamma := make([]float64, ny)
		for i := range gamma {
			gamma[i] = -8 + 20*float64(i)/float64(max(ny-1, 1)) + 4*rng.NormFloat64()
		}
		base := 100 + 20*rng.NormFloat64()
		for p := 0; p < perSet; p++ {
			var cuts []gbd.Cut
			nopt := 1 + rng.IntN(5)
			for k := 0; k < nopt; k++ {
				c := gbd.Cut{Kind: gbd.OptimalityCut, Coef: make([]float64, ny), Const: base - 10*rng.Float64(), Iter: k}
				for i := range c.Coef {
					c.Coef[i] = gamma[i] + 4*rng.NormFloat64()
				}
				cuts = append(cuts, c)
			}
			if rng.IntN(2) == 0 {
				nf := 1 + rng.IntN(2)
				for k := 0; k < nf; k++ {
					i := rng.IntN(ny)
					a := 1 + 3*rng.Float64()
					c := gbd.Cut{Kind: gbd.FeasibilityCut, Coef: make([]float64, ny), Const: a - 0.5*rng.Float64(), Iter: nopt + k}
					c.Coef[i] = -a
					cuts = append(cuts, c)
				}
			}
			label := -1
			best := math.Inf(1)
			for j := 0; j < ypb.Count(); j++ {
				ypb.Float(j, y)
				if !gbd.SatisfiesFeasibilityCuts(cuts, y) {
					continue
				}
				v := gbd.MaxOptimality(cuts, y)
				if v < best {
					best, label = v, j
				}
			}
			if label < 0 {
				continue // the feasibility cuts excluded all of Y_pb; GBD would stop as infeasible
			}
			prev := make([]float64, ny)
			ypb.Float(rng.IntN(ypb.Count()), prev)
			ds.Samples = append(ds.Samples, Sample{Cuts: cuts, Prev: prev, Label: label, Set: s})
		}
	}
	return ds
}
