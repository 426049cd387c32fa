package gbd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bruteMin1D minimizes a convex φ over a finite [lo, hi] by a grid scan followed by golden-section
// search around the best grid point (exact for convex functions up to rounding), and returns the
// least value seen, an upper bound on the minimum. It uses values only, no derivatives.
func bruteMin1D(f *fn1, lo, hi float64) float64 {
	_, v := goldenMin(func(x float64) float64 {
		v, _, _ := f.eval(x)
		return v
	}, lo, hi, 2000, 400)
	return v
}

// goldenMin is the brute-force minimizer of the tests: a scan of val over grid+1 points of
// [lo, hi], then iters golden-section steps around the best of them. It returns the best point
// seen and its value; NaN counts as +Inf.
func goldenMin(val func(float64) float64, lo, hi float64, grid, iters int) (x, v float64) {
	f := func(t float64) float64 {
		if v := val(t); !math.IsNaN(v) {
			return v
		}
		return math.Inf(1)
	}
	at := func(k int) float64 { return math.Min(hi, lo+(hi-lo)*float64(k)/float64(grid)) }
	best, kb := math.Inf(1), 0
	for k := 0; k <= grid; k++ {
		if v := f(at(k)); v < best {
			best, kb = v, k
		}
	}
	a, b := at(max(kb-1, 0)), at(min(kb+1, grid))
	xb := at(kb)
	const g = 0.6180339887498949
	c, e := b-g*(b-a), a+g*(b-a)
	fc, fe := f(c), f(e)
	for range iters {
		if fc <= fe {
			b, e, fe = e, c, fc
			c = b - g*(b-a)
			fc = f(c)
		} else {
			a, c, fc = c, e, fe
			e = a + g*(b-a)
			fe = f(e)
		}
		if fc < best {
			best, xb = fc, c
		}
		if fe < best {
			best, xb = fe, e
		}
	}
	return xb, best
}

// randomFn1 draws a convex one-variable function over a box of the given kind, with pieces of
// every atom kind whose arguments stay in their domain (and convex region) over the box:
//
//	0 finite box        1 lo == hi           2 argument of log/power/cube reaches 0 at lo
//	3 hi = +Inf         4 lo = −Inf          5 both infinite (exp and square only)
func randomFn1(rng *rand.Rand, kind int) (f *fn1, lo, hi float64) {
	lo = -2 + 4*rng.Float64()
	hi = lo + 0.1 + 5*rng.Float64()
	switch kind {
	case 1:
		hi = lo
	case 3:
		hi = math.Inf(1)
	case 4:
		lo = math.Inf(-1)
	case 5:
		lo, hi = math.Inf(-1), math.Inf(1)
	}
	f = &fn1{lin: 4 * rng.NormFloat64()}
	atoms := []Atom{AtomExp, AtomLog, AtomSquare, AtomCube, AtomPower}
	if kind >= 4 {
		atoms = []Atom{AtomExp, AtomSquare} // domain restricted atoms cannot see x → −∞
	}
	for range 1 + rng.IntN(4) {
		pc := piece{atom: atoms[rng.IntN(len(atoms))], w: 0.1 + 2*rng.Float64(), a: 0.2 + 1.8*rng.Float64()}
		if rng.IntN(2) == 0 && kind != 3 {
			pc.a = -pc.a
		}
		switch pc.atom {
		case AtomExp, AtomSquare:
			pc.s = 2 * rng.NormFloat64()
			if kind == 5 && pc.atom == AtomExp {
				pc.atom = AtomSquare // an exp alone is unbounded below on one side with a slope
			}
		default:
			// Argument a·x + s ≥ 0 over the box: zero (kind 2) or positive at the end where it is
			// smallest. With hi = +Inf, a > 0 (set above), so that end is lo.
			end := lo
			if pc.a < 0 {
				end = hi
			}
			pc.s = -pc.a * end
			if kind != 2 {
				pc.s += 0.05 + rng.Float64()
			}
			if pc.atom == AtomLog {
				pc.w = -pc.w
			}
			if pc.atom == AtomPower {
				pc.p = 1 + 2*rng.Float64()
				if rng.IntN(4) == 0 {
					pc.p = 1
				}
			}
		}
		f.pieces = append(f.pieces, pc)
	}
	if kind >= 3 {
		// Keep the minimum finite on an infinite side: a square (or an exp rising towards it).
		f.pieces = append(f.pieces, piece{atom: AtomSquare, w: 0.05 + rng.Float64(), a: 1, s: rng.NormFloat64()})
	}
	return f, lo, hi
}

// TestMinimize1DExact: the returned value is a lower bound on φ everywhere in the box and within
// 1e-12 (relative) of the golden-section minimum, for every atom kind and bound configuration.
func TestMinimize1DExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for kind := range 6 {
		for trial := range 300 {
			f, lo, hi := randomFn1(rng, kind)
			if !f.convex() {
				t.Fatalf("kind %d trial %d: generator made a non-convex function", kind, trial)
			}
			got, ok := f.minimize1D(lo, hi)
			if !ok {
				t.Errorf("kind %d trial %d: no minimum found on [%g, %g] for %+v", kind, trial, lo, hi, *f)
				continue
			}
			// Brute force over a window that holds the minimizer when a side is infinite.
			blo, bhi := math.Max(lo, -1e3), math.Min(hi, 1e3)
			want := bruteMin1D(f, blo, bhi)
			tol := 1e-12 * math.Max(1, math.Abs(want))
			if got > want+1e-13*math.Max(1, math.Abs(want)) {
				t.Errorf("kind %d trial %d: returned %.17g above the brute-force minimum %.17g (not a lower bound)", kind, trial, got, want)
			}
			if got < want-tol {
				t.Errorf("kind %d trial %d: returned %.17g, brute force %.17g: not exact", kind, trial, got, want)
			}
			for k := 0; k <= 200; k++ {
				x := math.Min(bhi, blo+(bhi-blo)*float64(k)/200)
				if v, _, _ := f.eval(x); !math.IsNaN(v) && got > v+1e-13*math.Max(1, math.Abs(v)) {
					t.Errorf("kind %d trial %d: bound %.17g above φ(%g) = %.17g", kind, trial, got, x, v)
					break
				}
			}
		}
	}
}

// TestMinimize1DClosedForms checks the linear and quadratic cases against their formulas.
func TestMinimize1DClosedForms(t *testing.T) {
	lin := []struct {
		lin, lo, hi, want float64
		ok                bool
	}{
		{2, -1, 3, -2, true},
		{-2, -1, 3, -6, true},
		{0, math.Inf(-1), math.Inf(1), 0, true},
		{2, math.Inf(-1), 3, 0, false},
		{-2, -1, math.Inf(1), 0, false},
	}
	for _, c := range lin {
		f := fn1{lin: c.lin}
		got, ok := f.minimize1D(c.lo, c.hi)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("lin %g on [%g, %g]: got %g, %v; want %g, %v", c.lin, c.lo, c.hi, got, ok, c.want, c.ok)
		}
	}
	// 3·(x − 1)² + 2x on [lo, hi]: stationary point x = 2/3, value 1/3 + 4/3 = 5/3.
	f := fn1{lin: 2, pieces: []piece{{atom: AtomSquare, w: 3, a: 1, s: -1}}}
	for _, c := range []struct{ lo, hi, want float64 }{
		{0, 2, 5.0 / 3}, {math.Inf(-1), math.Inf(1), 5.0 / 3}, {1, 2, 2}, {-1, 0, 3},
	} {
		got, ok := f.minimize1D(c.lo, c.hi)
		if !ok || math.Abs(got-c.want) > 1e-15*c.want {
			t.Errorf("quadratic on [%g, %g]: got %.17g, %v; want %.17g", c.lo, c.hi, got, ok, c.want)
		}
	}
}

// TestMinimize1DUnbounded: a Lagrangian that keeps decreasing towards an infinite bound has no
// minimum, and the cut must be dropped.
func TestMinimize1DUnbounded(t *testing.T) {
	cases := []struct {
		name   string
		f      fn1
		lo, hi float64
	}{
		{"exp plus a slope to −Inf", fn1{lin: 1, pieces: []piece{{atom: AtomExp, w: 1, a: 1}}}, math.Inf(-1), 0},
		{"−log to +Inf", fn1{pieces: []piece{{atom: AtomLog, w: -1, a: 1}}}, 0, math.Inf(1)},
		{"cube with a falling slope, never turning within 1e15", fn1{lin: -1e40, pieces: []piece{{atom: AtomCube, w: 1, a: 1}}}, 0, math.Inf(1)},
	}
	for _, c := range cases {
		if v, ok := c.f.minimize1D(c.lo, c.hi); ok {
			t.Errorf("%s: got minimum %g, want none", c.name, v)
		}
	}
}

// TestFn1Derivatives checks φ′ and φ″ against central finite differences inside the domain.
func TestFn1Derivatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 200 {
		f, lo, hi := randomFn1(rng, trial%4)
		if math.IsInf(hi, 1) {
			hi = lo + 3
		}
		if hi-lo < 1e-3 {
			continue
		}
		x := lo + (hi-lo)*(0.1+0.8*rng.Float64())
		h := 1e-6 * math.Max(1, math.Abs(x))
		vp, dp, _ := f.eval(x + h)
		vm, dm, _ := f.eval(x - h)
		_, d1, d2 := f.eval(x)
		if fd := (vp - vm) / (2 * h); math.Abs(fd-d1) > 1e-5*math.Max(1, math.Abs(d1)) {
			t.Errorf("trial %d: φ′(%g) = %g, finite difference %g", trial, x, d1, fd)
		}
		if fd := (dp - dm) / (2 * h); math.Abs(fd-d2) > 1e-5*math.Max(1, math.Abs(d2)) {
			t.Errorf("trial %d: φ″(%g) = %g, finite difference %g", trial, x, d2, fd)
		}
	}
}

// TestMinimize1DCube: the closed form for one cube piece and a linear term (cubeMin), the pump
// station's energy term, is a lower bound on φ over the box and within 1e-12 of the brute-force
// minimum, for either sign of the slope and of the argument's coefficient, minimizers inside the
// box and at either end.
func TestMinimize1DCube(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 3))
	for trial := range 2000 {
		lo := 10 * rng.NormFloat64()
		hi := lo + 0.1 + 20*rng.Float64()
		pc := piece{atom: AtomCube, w: 0.01 + 5*rng.Float64(), a: 0.01 + 2*rng.Float64()}
		if rng.IntN(2) == 0 {
			pc.a = -pc.a
		}
		end := lo // where the argument is smallest
		if pc.a < 0 {
			end = hi
		}
		pc.s = -pc.a * end
		if rng.IntN(3) > 0 {
			pc.s += rng.Float64()
		}
		f := fn1{lin: 30 * rng.NormFloat64(), pieces: []piece{pc}}
		if trial%10 == 0 {
			f.lin = 0
		}
		got, ok, done := f.cubeMin(lo, hi)
		if !done || !ok {
			t.Fatalf("trial %d: cubeMin did not answer (%v, %v) for %+v on [%g, %g]", trial, done, ok, f, lo, hi)
		}
		want := bruteMin1D(&f, lo, hi)
		if got > want+1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("trial %d: %.17g above the minimum %.17g: not a lower bound", trial, got, want)
		}
		if got < want-1e-10*math.Max(1, math.Abs(want)) {
			t.Errorf("trial %d: %.17g, minimum %.17g: not exact", trial, got, want)
		}
	}
}
