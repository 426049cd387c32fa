package gbd

import "math"

// A carried cut's constant is a minimum of the Lagrangian over X. For a separable Lagrangian that is
// a sum of one-dimensional convex minimizations, done here. The cut is only valid if the constant is
// not above the true minimum, so the minimizer returns a certified lower bound (from tangents at the
// ends of a bracket around the minimizer) rather than the value at an approximate minimizer, which
// would err on the invalid side.

// piece is w·atom(a·x + s) of one variable x.
type piece struct {
	w, a, s, p float64
	atom       Atom
}

// fn1 is φ(x) = lin·x + Σ pieces, convex when every piece is (checked by convex).
type fn1 struct {
	lin    float64
	pieces []piece
}

// atomExt is the atom's value and first two derivatives at u with the limits an exact minimizer
// needs at the edge of the domain (ln 0 = −Inf with derivative +Inf; u^p at 0 for 1 < p < 2 has an
// infinite second derivative but a finite value and slope) instead of the NLP's "undefined". NaN
// means u is outside the domain.
func atomExt(a Atom, u, p float64) (v, d1, d2 float64) {
	switch a {
	case AtomExp:
		v = math.Exp(u)
		return v, v, v
	case AtomLog:
		switch {
		case u > 0:
			return math.Log(u), 1 / u, -1 / (u * u)
		case u == 0:
			return math.Inf(-1), math.Inf(1), math.Inf(-1)
		}
		return math.NaN(), math.NaN(), math.NaN()
	case AtomSquare:
		return u * u, 2 * u, 2
	case AtomCube:
		return u * u * u, 3 * u * u, 6 * u
	case AtomPower:
		if u < 0 {
			// An argument that is ≥ 0 over the box can come out as −1e-17 in floating point.
			if u < -1e-12 {
				return math.NaN(), math.NaN(), math.NaN()
			}
			u = 0
		}
		if u == 0 {
			switch {
			case p == 1:
				return 0, 1, 0
			case p < 2:
				return 0, 0, math.Inf(1)
			case p == 2:
				return 0, 0, 2
			}
			return 0, 0, 0
		}
		v = math.Pow(u, p)
		return v, p * v / u, p * (p - 1) * v / (u * u)
	}
	return math.NaN(), math.NaN(), math.NaN()
}

// convex reports whether every piece is convex on its own over the whole real line where defined
// (weight ≥ 0 on exp, square, cube, power; ≤ 0 on log). The cube and power are convex only for
// arguments ≥ 0, which Problem.Validate has checked over the box.
func (f *fn1) convex() bool {
	for _, pc := range f.pieces {
		if pc.atom == AtomLog {
			if pc.w > 0 {
				return false
			}
		} else if pc.w < 0 {
			return false
		}
	}
	return true
}

// quadratic reports whether φ is at most quadratic (only square atoms).
func (f *fn1) quadratic() bool {
	for _, pc := range f.pieces {
		if pc.atom != AtomSquare {
			return false
		}
	}
	return true
}

// eval returns φ, φ′ and φ″ at x (NaN outside the domain).
func (f *fn1) eval(x float64) (v, d1, d2 float64) {
	v, d1 = f.lin*x, f.lin
	if f.lin == 0 {
		v = 0 // 0·Inf would be NaN; a zero slope contributes nothing anywhere
	}
	for _, pc := range f.pieces {
		av, ad1, ad2 := atomExt(pc.atom, pc.a*x+pc.s, pc.p)
		v += pc.w * av
		d1 += pc.w * pc.a * ad1
		d2 += pc.w * pc.a * pc.a * ad2
	}
	return v, d1, d2
}

// minRelTol is the relative accuracy to which minimize1D certifies the minimum.
const minRelTol = 1e-13

// minimize1D returns a lower bound on min φ over [lo, hi] that is within minRelTol (relative) of
// the minimum, or ok=false when the minimum does not exist (φ unbounded below towards an infinite
// end) or cannot be computed in floating point. φ must be convex.
func (f *fn1) minimize1D(lo, hi float64) (float64, bool) {
	if lo > hi || math.IsNaN(lo) || math.IsNaN(hi) {
		return 0, false
	}
	if len(f.pieces) == 0 {
		return linearMin(f.lin, lo, hi)
	}
	if lo == hi {
		v, _, _ := f.eval(lo)
		return v, finite(v)
	}
	if f.quadratic() {
		return f.quadraticMin(lo, hi)
	}
	if v, ok, done := f.cubeMin(lo, hi); done {
		return v, ok
	}
	// Bracket the minimizer between finite a ≤ b; an infinite end is replaced by a point where the
	// slope already points back into the box, or the minimum is declared not to exist.
	a, b := lo, hi
	if math.IsInf(lo, -1) {
		var ok bool
		if a, ok = f.search(hi, -1); !ok {
			return 0, false
		}
	}
	if math.IsInf(hi, 1) {
		var ok bool
		if b, ok = f.search(math.Max(a, lo), 1); !ok {
			return 0, false
		}
	}
	fa, da, _ := f.eval(a)
	fb, db, _ := f.eval(b)
	if math.IsNaN(fa) || math.IsNaN(da) || math.IsNaN(fb) || math.IsNaN(db) {
		return 0, false
	}
	if da >= 0 {
		return fa, finite(fa)
	}
	if db <= 0 {
		return fb, finite(fb)
	}
	// Safeguarded Newton on φ′ inside the bracket φ′(a) < 0 < φ′(b); bisection when Newton leaves it
	// or is not available (infinite curvature at an end).
	x := 0.5 * (a + b)
	for range 200 {
		fx, dx, d2x := f.eval(x)
		if math.IsNaN(fx) || math.IsNaN(dx) {
			return 0, false
		}
		if dx == 0 {
			return fx, finite(fx)
		}
		if dx < 0 {
			a, fa, da = x, fx, dx
		} else {
			b, fb, db = x, fx, dx
		}
		lb := tangentBound(a, fa, da, b, fb, db)
		ub := math.Min(fa, fb)
		if finite(lb) && ub-lb <= minRelTol*math.Max(1, math.Abs(ub)) {
			return lb, true
		}
		if b-a <= 4*math.SmallestNonzeroFloat64+4e-16*math.Max(math.Abs(a), math.Abs(b)) {
			return lb, finite(lb)
		}
		next := x - dx/d2x
		if !(next > a && next < b) || math.IsInf(d2x, 0) {
			next = 0.5 * (a + b)
		}
		x = next
	}
	lb := tangentBound(a, fa, da, b, fb, db)
	return lb, finite(lb)
}

// tangentBound is min over [a, b] of max(tangent at a, tangent at b), a lower bound on min φ for
// convex φ with φ′(a) < 0 < φ′(b): the tangents' intersection. An end whose value is not finite (ln 0)
// contributes nothing; the other tangent is then taken at the far end.
func tangentBound(a, fa, da, b, fb, db float64) float64 {
	okA, okB := finite(fa) && finite(da), finite(fb) && finite(db)
	switch {
	case okA && okB:
		x := (fb - fa + da*a - db*b) / (da - db)
		x = math.Min(math.Max(x, a), b)
		return math.Min(fa+da*(x-a), fb+db*(x-b))
	case okA:
		return fa + da*(b-a)
	case okB:
		return fb + db*(a-b)
	}
	return math.Inf(-1)
}

// search walks from x0 towards dir·∞ in doubling steps for a point where φ′ points back (φ′ ≤ 0
// going left, φ′ ≥ 0 going right). Not finding one within 1e15 means φ decreases without bound
// there, or so slowly that no useful cut comes out.
func (f *fn1) search(x0 float64, dir float64) (float64, bool) {
	if math.IsInf(x0, 0) || math.IsNaN(x0) {
		x0 = 0
	}
	for k := 0; k <= 50; k++ {
		x := x0 + dir*math.Ldexp(1, k)
		v, d, _ := f.eval(x)
		if math.IsNaN(v) || math.IsNaN(d) {
			return 0, false
		}
		if dir*d >= 0 {
			return x, true
		}
	}
	return 0, false
}

// linearMin is min lin·x over [lo, hi].
func linearMin(lin, lo, hi float64) (float64, bool) {
	switch {
	case lin == 0:
		return 0, true
	case lin > 0:
		return lin * lo, !math.IsInf(lo, 0)
	}
	return lin * hi, !math.IsInf(hi, 0)
}

// quadraticMin minimizes lin·x + Σ w·(a·x + s)² in closed form: the stationary point clamped into
// the box, evaluated term by term (expanding to αx² + βx + γ would cancel badly near the minimum).
func (f *fn1) quadraticMin(lo, hi float64) (float64, bool) {
	alpha, beta := 0.0, f.lin
	for _, pc := range f.pieces {
		alpha += pc.w * pc.a * pc.a
		beta += 2 * pc.w * pc.a * pc.s
	}
	if !(alpha > 0) {
		return 0, false // pieces have w > 0 and a ≠ 0, so only underflow gets here
	}
	x := math.Min(math.Max(-beta/(2*alpha), lo), hi)
	v, _, _ := f.eval(x)
	return v, finite(v)
}

// cubeMin minimizes lin·x + w·(a·x + s)³ (one cube piece, w > 0, the argument ≥ 0 over a finite
// box) in closed form: the stationary point of the convex branch, u = √(−lin/(3wa)), clamped into
// the box. The value returned is the tangent's minimum over the box at that point, a lower bound on
// min φ by convexity that differs from φ there only by the point's rounding (the pump station's
// energy term, which every strengthened cut minimizes twice per flow: Newton took several steps).
// done is false when φ is not of that form, and minimize1D goes on.
func (f *fn1) cubeMin(lo, hi float64) (v float64, ok, done bool) {
	if len(f.pieces) != 1 || f.pieces[0].atom != AtomCube || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return 0, false, false
	}
	pc := f.pieces[0]
	if !(pc.w > 0) || pc.a == 0 {
		return 0, false, false
	}
	x := lo
	if f.lin < 0 == (pc.a > 0) { // the slope's sign can change in the box: a stationary point
		u := math.Sqrt(-f.lin / (3 * pc.w * pc.a))
		x = (u - pc.s) / pc.a
	} else if f.lin < 0 || f.lin == 0 && pc.a < 0 {
		x = hi
	}
	if !(x >= lo) { // NaN too
		x = lo
	}
	x = math.Min(x, hi)
	fx, dx, _ := f.eval(x)
	if !finite(fx) || !finite(dx) {
		return 0, false, false
	}
	return fx + math.Min(dx*(lo-x), dx*(hi-x)), true, true
}
