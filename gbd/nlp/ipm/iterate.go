package ipm

import (
	"math"

	"gbdmpc/gbd/nlp"
)

// Iteration constants (doc.go, "Algorithm").
const (
	armijo      = 1e-4 // sufficient decrease of the merit
	maxHalvings = 40   // backtracking steps before a line search gives up
	satFrac     = 0.9  // |λ_i| ≥ satFrac·ρ: the elastic penalty is saturated
	rhoGrow     = 100  // ρ grows by this when the feasibility phase finds a feasible point
	maxSwitches = 4    // feasibility phases per solve
	bigX        = 1e12 // |x_j| beyond which a feasible, decreasing run is called unbounded
	muMinFrac   = 0.1  // the barrier target stays ≥ muMinFrac·Tol
	slackKeep   = 0.5  // a reset slack keeps at least this share of its distance to its bounds
	// Monotone (conservative) barrier rule: μ is kept until the barrier problem is solved to
	// kappaEps·μ, then reduced to max(Tol/10, min(kappaMu·μ, μ^thetaMu)).
	kappaEps = 10
	kappaMu  = 0.2
	thetaMu  = 1.5
)

// run is one solve from x0 of a problem whose structure the workspace fits.
func (s *Solver) run(p *nlp.Problem, x0 []float64, opt nlp.Options) nlp.Result {
	w := &s.w
	n := w.n
	w.classify(p)
	w.omega, w.rhoN, w.rho = 1, rho0, rho0
	for j := range n {
		if w.fix[j] {
			w.y[j] = w.xl[j]
		} else {
			w.y[j] = pushInto(x0[j], w.xl[j], w.xu[j])
		}
	}
	ok := s.evalAt(p, w.y[:n], w.g, w.gr, w.jv)
	if ok && w.colScale(&s.st) {
		for j := range n {
			if !w.fix[j] {
				w.y[j] = pushInto(x0[j]/w.cs[j], w.xl[j], w.xu[j])
			}
		}
		ok = s.evalAt(p, w.y[:n], w.g, w.gr, w.jv)
	}
	if !ok {
		w.fs = 1
		for i := range w.rs {
			w.rs[i] = 1
		}
		w.np, w.nplain = 0, 0
		clear(w.lam)
		return s.result(p, nlp.Failed, 0, "the functions cannot be evaluated at the starting point (pushed into the box)")
	}
	w.scale(p, &s.st)
	w.buildPairs()
	w.start()
	if f, ok := p.Eval.Objective(w.unscale(w.y[:n])); ok {
		w.f0 = f
	} else {
		w.f0 = math.Inf(1)
	}

	tol := opt.Tol
	muBar := mu0
	switches := 0
	for iter := 0; ; iter++ {
		prim, dual, compl := s.kktError()
		if w.omega == 1 && max(prim, dual, compl) <= tol {
			return s.result(p, nlp.Solved, iter, "")
		}
		if s.certificate() > infTol {
			w.omega = 0 // report the certificate's multipliers
			return s.result(p, nlp.Infeasible, iter, "the rows cannot be met in the box (certificate of infeasibility)")
		}
		if w.omega == 0 && prim <= tol {
			if switches >= maxSwitches {
				return s.result(p, nlp.Failed, iter, "the elastic penalty kept saturating on a feasible problem")
			}
			s.leaveFeasibility()
			muBar = mu0
		}
		if iter >= opt.MaxIter {
			return s.result(p, nlp.IterationLimit, iter, "")
		}
		if opt.Stop != nil && opt.Stop() {
			return s.result(p, nlp.Stopped, iter, "")
		}
		for i := range w.m {
			w.hlam[i] = w.lam[i] * w.rs[i]
		}
		if !p.Eval.Hessian(w.unscale(w.y[:n]), w.omega*w.fs, w.hlam, w.hv) || !allFinite(w.hv) {
			return s.result(p, nlp.Failed, iter, "the Hessian cannot be evaluated at an iterate")
		}
		s.factor()
		mu := w.mu()

		var muT float64
		ok := false
		if opt.Conservative {
			if s.barrierError(muBar) <= kappaEps*muBar {
				muBar = max(muMinFrac*tol, min(kappaMu*muBar, math.Pow(muBar, thetaMu)))
			}
			muT = muBar
		} else {
			s.direction(0, false, w.dyA, w.dzA, w.dlamA)
			ap, ad := w.maxStep(w.dyA, w.dzA, 1)
			muAff := w.avgCompl(w.dyA, w.dzA, ap, ad)
			sigma := 1.0
			if mu > 0 {
				sigma = min(1, math.Pow(muAff/mu, 3))
			}
			muT = max(sigma*mu, muMinFrac*tol)
			s.direction(muT, true, w.dy, w.dz, w.dlam)
			ap, ad = w.maxStep(w.dy, w.dz, max(0.99, 1-mu))
			ok = s.lineSearch(p, ap, ad, muT, 1)
		}
		if !ok {
			s.direction(muT, false, w.dy, w.dz, w.dlam)
			tau := max(0.99, 1-muT)
			if opt.Conservative {
				tau = max(0.95, 1-muT)
			}
			ap, ad := w.maxStep(w.dy, w.dz, tau)
			a := min(ap, ad)
			ok = s.lineSearch(p, a, a, muT, maxHalvings)
		}
		if !ok {
			// Near the tolerance the merit (a 2-norm mixing rows, stationarity and the barrier
			// target) can stop decreasing in floating point while the largest residual, the
			// stopping test's measure, still falls: try the step on that measure.
			ap, ad := w.maxStep(w.dy, w.dz, max(0.99, 1-muT))
			ok = s.rescue(p, ap, ad)
		}
		if !ok {
			return s.result(p, nlp.Failed, iter, "no step decreases the KKT residual (line search failed)")
		}

		if w.omega == 1 {
			if s.saturated() {
				if switches >= maxSwitches {
					return s.result(p, nlp.Failed, iter+1, "the elastic penalty kept saturating")
				}
				switches++
				s.enterFeasibility()
			} else if s.diverging(p) {
				return s.result(p, nlp.Unbounded, iter+1, "the objective decreases without bound along feasible iterates")
			}
		}
	}
}

// lineSearch tries the step (ap, ad) along (dy, dz, dλ) and up to tries−1 halvings of it,
// accepting the first trial point where the functions evaluate and the merit with target muT
// decreases sufficiently. An accepted point becomes the iterate.
func (s *Solver) lineSearch(p *nlp.Problem, ap, ad, muT float64, tries int) bool {
	w := &s.w
	n := w.n
	m0 := s.merit(w.y, w.z, w.lam, w.g, w.gr, w.jv, muT, w.ex2())
	if math.IsNaN(m0) {
		return false
	}
	t := 1.0
	for range tries {
		a, b := ap*t, ad*t
		w.trial(a, b)
		if s.evalAt(p, w.yT[:n], w.gT, w.grT, w.jvT) {
			w.scaleValues(w.gT, w.grT, w.jvT, s.st.jacRow)
			w.resetSlacks()
			m1 := s.merit(w.yT, w.zT, w.lamT, w.gT, w.grT, w.jvT, muT, w.ex2())
			if m1 <= (1-armijo*min(a, b))*m0 {
				w.swapTrial()
				return true
			}
		}
		t *= 0.5
	}
	return false
}

// barrierError is the largest KKT residual of the barrier problem with parameter mu (the
// monotone rule's test).
func (s *Solver) barrierError(mu float64) float64 {
	w := &s.w
	r := w.ex2()
	s.stationarity(w.y, w.z, w.lam, w.gr, w.jv, r)
	e := 0.0
	for _, v := range r {
		e = max(e, math.Abs(v))
	}
	for i := range w.m {
		if !w.rowOn[i] {
			continue
		}
		c := w.g[i]
		for _, v := range [3]int{w.sIdx(i), w.pIdx(i), w.eIdx(i)} {
			c += w.coef[v] * w.y[v]
		}
		e = max(e, math.Abs(c))
	}
	for k := range w.np {
		c := w.gap(k, w.y)*w.z[k] - mu
		if w.el[k] {
			c /= w.rho
		}
		e = max(e, math.Abs(c))
	}
	return e
}

// saturated reports whether some row multiplier has reached the elastic penalty: either the
// problem is infeasible or ρ is too small for its multipliers.
func (s *Solver) saturated() bool {
	w := &s.w
	for i := range w.m {
		if w.rowOn[i] && math.Abs(w.lam[i]) >= satFrac*w.rho {
			return true
		}
	}
	return false
}

// enterFeasibility drops the objective (ω = 0) and sets ρ = 1, rescaling the multipliers by 1/ρ,
// so that the iteration minimizes the row violation Σ(p + e) over the box. Its multipliers then
// converge to an infeasibility certificate, or its iterates to a feasible point.
func (s *Solver) enterFeasibility() {
	w := &s.w
	inv := 1 / w.rho
	for i := range w.lam {
		w.lam[i] *= inv
	}
	for k := range w.np {
		w.z[k] *= inv
	}
	w.omega, w.rho = 0, 1
}

// leaveFeasibility returns to the objective from the feasible point the feasibility phase found,
// with a larger elastic penalty and re-centred multipliers.
func (s *Solver) leaveFeasibility() {
	w := &s.w
	w.rhoN *= rhoGrow
	w.omega, w.rho = 1, w.rhoN
	clear(w.lam)
	for k := range w.np {
		if w.el[k] {
			w.z[k] = w.rho
		} else {
			w.z[k] = mu0 / w.gap(k, w.y)
		}
	}
}

// diverging reports an unbounded objective: x has grown beyond bigX while the rows hold and f is
// below its starting value.
func (s *Solver) diverging(p *nlp.Problem) bool {
	w := &s.w
	big := false
	for j := range w.n {
		if !w.fix[j] && math.Abs(w.y[j]) > bigX {
			big = true
			break
		}
	}
	if !big {
		return false
	}
	prim, _, _ := s.kktError()
	if prim > 1e-6 {
		return false
	}
	f, ok := p.Eval.Objective(w.unscale(w.y[:w.n]))
	return ok && f < w.f0
}

// ex2 is an ny-long scratch vector for residuals (the affine direction's multipliers are free
// after the corrector is formed, but the merit needs its own).
func (w *work) ex2() []float64 { return w.ty }

// resetSlacks moves each row's slack at the trial point to where it meets the row exactly
// (s = g(x) − p + e), when that keeps it at least slackKeep of its current distance inside its
// bounds. A Newton step is linear in the rows: along a direction of little curvature (a variable
// of an inactive row, whose multiplier and so whose Hessian vanish) it may move x far, and the
// row's curvature then leaves a residual the slack could absorb; without the reset the KKT-norm
// merit sees it and rejects the step, and the iteration stalls short of the tolerance.
func (w *work) resetSlacks() {
	for i := range w.m {
		sv := w.sIdx(i)
		if !w.rowOn[i] || w.fix[sv] {
			continue
		}
		t := w.gT[i] - w.yT[w.pIdx(i)] + w.yT[w.eIdx(i)]
		lo, hi := w.gl[i], w.gu[i]
		cur := w.yT[sv]
		if finite(lo) && t-lo < slackKeep*(cur-lo) {
			continue
		}
		if finite(hi) && hi-t < slackKeep*(hi-cur) {
			continue
		}
		w.yT[sv] = t
	}
}

// rescue tries the step (ap, ad) along the current direction and its halvings, accepting the
// first whose largest KKT residual (kktError) is below the current one.
func (s *Solver) rescue(p *nlp.Problem, ap, ad float64) bool {
	w := &s.w
	n := w.n
	prim, dual, compl := s.kktError()
	e0 := max(prim, dual, compl)
	t := 1.0
	for range 8 {
		a, b := ap*t, ad*t
		t *= 0.5
		w.trial(a, b)
		if !s.evalAt(p, w.yT[:n], w.gT, w.grT, w.jvT) {
			continue
		}
		w.scaleValues(w.gT, w.grT, w.jvT, s.st.jacRow)
		w.resetSlacks()
		w.swapTrial()
		prim, dual, compl = s.kktError()
		if max(prim, dual, compl) < e0 {
			return true
		}
		w.swapTrial()
	}
	return false
}

// swapTrial exchanges the iterate with the trial point.
func (w *work) swapTrial() {
	w.y, w.yT = w.yT, w.y
	w.z, w.zT = w.zT, w.z
	w.lam, w.lamT = w.lamT, w.lam
	w.g, w.gT = w.gT, w.g
	w.gr, w.grT = w.grT, w.gr
	w.jv, w.jvT = w.jvT, w.jv
}

// trial sets the trial point: primal y + a·dy, bound multipliers z + b·dz, row multipliers
// λ + b·dλ.
func (w *work) trial(a, b float64) {
	for v := range w.ny {
		w.yT[v] = w.y[v] + a*w.dy[v]
	}
	for k := range w.np {
		w.zT[k] = w.z[k] + b*w.dz[k]
	}
	for i := range w.m {
		w.lamT[i] = w.lam[i] + b*w.dlam[i]
	}
}
