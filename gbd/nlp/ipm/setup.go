package ipm

import (
	"math"

	"gbdmpc/gbd/nlp"
)

// Scaling and starting-point constants (doc.go, "Scaling" and "Starting point").
const (
	gradMax   = 100  // a scaled gradient has no component larger than this (Ipopt's default)
	scaleMin  = 1e-8 // smallest scale factor
	boundPush = 1e-2 // relative push of the starting point into the box
	mu0       = 0.1  // initial barrier parameter (average complementarity at the start)
	rho0      = 1e4  // elastic penalty on row violation, in scaled units
	colSmall  = 1e-3 // a linear variable whose Jacobian column stays below this is rescaled
	rhoMargin = 10   // the elastic penalty exceeds a rescaled variable's multiplier bound by this
)

func finite(v float64) bool { return !math.IsInf(v, 0) }

// classify marks the components of y that take part in this solve (fixed variables and the
// slacks and elastics a row does not need are held constant) and copies the bounds.
func (w *work) classify(p *nlp.Problem) {
	n, m := w.n, w.m
	copy(w.xl, p.XL)
	copy(w.xu, p.XU)
	w.colScaled = false
	for j := range n {
		w.cs[j] = 1
		w.fix[j] = p.XL[j] == p.XU[j]
		w.coef[j] = 0
	}
	for i := range m {
		lo, hi := finite(p.GL[i]), finite(p.GU[i])
		on := lo || hi
		w.rowOn[i] = on
		s, pp, e := w.sIdx(i), w.pIdx(i), w.eIdx(i)
		w.coef[s], w.coef[pp], w.coef[e] = -1, -1, 1
		w.fix[s] = !on || p.GL[i] == p.GU[i]
		w.fix[pp] = !hi
		w.fix[e] = !lo
	}
}

// colScale chooses the variable scaling from the unscaled Jacobian in w.jv: a variable that
// appears only linearly (no Hessian entry, so its column is constant) and whose largest Jacobian
// entry is below colSmall is measured in units of that entry's inverse, x_j = cs_j·x̃_j with
// cs_j = 1/max_i |J_ij|. This is for penalty variables priced in the objective's currency, whose
// rows carry them with coefficients like 1e-7 and whose boxes reach 1e6: unscaled, their rows'
// legitimate multipliers exceed the elastic penalty and the Schur complement mixes entries 14
// orders apart. The bounds are rescaled; it reports whether any variable was.
func (w *work) colScale(st *structure) bool {
	cm := w.tn
	clear(cm)
	for k, j := range st.jacCol {
		cm[j] = max(cm[j], math.Abs(w.jv[k]))
	}
	for j := range w.n {
		if !st.linear[j] || w.fix[j] || cm[j] == 0 || cm[j] >= colSmall {
			continue
		}
		c := 1 / cm[j]
		w.cs[j] = c
		w.xl[j] /= c
		w.xu[j] /= c
		w.colScaled = true
	}
	return w.colScaled
}

// unscale returns x = cs∘x̃ for the callbacks (x̃ itself when no variable is scaled).
func (w *work) unscale(xt []float64) []float64 {
	if !w.colScaled {
		return xt
	}
	for j, v := range xt {
		w.xs[j] = w.cs[j] * v
	}
	return w.xs
}

// pushInto moves v into [lo, hi] and away from a finite bound by Ipopt's bound_push rule.
func pushInto(v, lo, hi float64) float64 {
	pl, pu := boundPush*max(1, math.Abs(lo)), boundPush*max(1, math.Abs(hi))
	if finite(lo) && finite(hi) {
		pl = min(pl, boundPush*(hi-lo))
		pu = min(pu, boundPush*(hi-lo))
	}
	if finite(lo) {
		v = max(v, lo+pl)
	}
	if finite(hi) {
		v = min(v, hi-pu)
	}
	return v
}

// scale chooses the objective and row scale factors from the gradients at the starting point
// (values in w.gr and w.jv with only the variable scaling applied) and scales the function values
// and row bounds. The objective's factor ignores rescaled variables: their gradients, in units
// of their rows, are large by design, and letting them scale the objective down would loosen the
// final tolerance in the objective's own units by as much. The elastic penalty is set above the
// multipliers those variables imply.
func (w *work) scale(p *nlp.Problem, st *structure) {
	rows := st.jacRow
	gmax := 0.0
	for j, v := range w.gr {
		if w.cs[j] == 1 {
			gmax = max(gmax, math.Abs(v))
		}
	}
	w.fs = factor(gmax)
	for i := range w.rs {
		w.rs[i] = 0
	}
	for k, i := range rows {
		w.rs[i] = max(w.rs[i], math.Abs(w.jv[k]))
	}
	for i := range w.rs {
		w.rs[i] = factor(w.rs[i])
		w.gl[i] = p.GL[i] * w.rs[i]
		w.gu[i] = p.GU[i] * w.rs[i]
	}
	w.scaleValues(w.g, w.gr, w.jv, rows)
	w.rho, w.rhoN = rho0, rho0
	if w.colScaled {
		// A rescaled variable's row multipliers balance its gradient: Σ_i λ_i J̃_ij = g̃_j, so
		// some |λ_i| ≥ |g̃_j| / max_i |J̃_ij|, and the elastic penalty must exceed that.
		cm := w.tn
		clear(cm)
		for k, j := range st.jacCol {
			cm[j] = max(cm[j], math.Abs(w.jv[k]))
		}
		for j, c := range w.cs {
			if c != 1 && cm[j] > 0 {
				w.rho = max(w.rho, rhoMargin*math.Abs(w.gr[j])/cm[j])
			}
		}
		w.rhoN = w.rho
	}
}

func factor(gmax float64) float64 {
	if gmax <= gradMax {
		return 1
	}
	return max(scaleMin, gradMax/gmax)
}

// scaleValues applies the scale factors to freshly evaluated functions.
func (w *work) scaleValues(g, gr, jv []float64, rows []int32) {
	for i := range g {
		g[i] *= w.rs[i]
	}
	for j := range gr {
		gr[j] *= w.fs
	}
	for k, i := range rows {
		jv[k] *= w.rs[i]
	}
}

// buildPairs lists the complementarity pairs of this solve.
func (w *work) buildPairs() {
	k := 0
	add := func(v int, sg, b float64, el, xp bool) {
		w.pv[k], w.sg[k], w.pb[k], w.el[k], w.xpair[k] = int32(v), sg, b, el, xp
		k++
	}
	for j := range w.n {
		if w.fix[j] {
			continue
		}
		if finite(w.xl[j]) {
			add(j, 1, w.xl[j], false, true)
		}
		if finite(w.xu[j]) {
			add(j, -1, w.xu[j], false, true)
		}
	}
	plain := k - 0
	for i := range w.m {
		if s := w.sIdx(i); !w.fix[s] {
			if finite(w.gl[i]) {
				add(s, 1, w.gl[i], false, false)
			}
			if finite(w.gu[i]) {
				add(s, -1, w.gu[i], false, false)
			}
		}
	}
	plain = k
	for i := range w.m {
		if v := w.pIdx(i); !w.fix[v] {
			add(v, 1, 0, true, false)
		}
		if v := w.eIdx(i); !w.fix[v] {
			add(v, 1, 0, true, false)
		}
	}
	w.np, w.nplain = k, plain
}

// start sets slacks, elastics and multipliers from the point x in w.y[:n] and the scaled
// function values there: slacks at the row values pushed into their bounds, elastics taking up
// the rest of each row's residual plus μ0/ρ, bound multipliers centred at μ0 (z·gap = μ0), row
// multipliers zero and elastic multipliers ρ (so that their stationarity holds).
func (w *work) start() {
	n, m := w.n, w.m
	for i := range m {
		s, pp, e := w.sIdx(i), w.pIdx(i), w.eIdx(i)
		w.y[pp], w.y[e] = 0, 0
		if !w.rowOn[i] {
			w.y[s] = w.g[i]
			continue
		}
		if w.fix[s] {
			w.y[s] = w.gl[i]
		} else {
			w.y[s] = pushInto(w.g[i], w.gl[i], w.gu[i])
		}
		r := w.g[i] - w.y[s]
		if !w.fix[pp] {
			w.y[pp] = max(r, 0) + mu0/w.rho
		}
		if !w.fix[e] {
			w.y[e] = max(-r, 0) + mu0/w.rho
		}
		if !w.fix[s] {
			w.y[s] = w.g[i] - w.y[pp] + w.y[e]
		}
	}
	_ = n
	for k := range w.np {
		if w.el[k] {
			w.z[k] = w.rho
			continue
		}
		w.z[k] = mu0 / w.gap(k, w.y)
	}
	clear(w.lam)
}

// gap is pair k's primal distance to its bound at the point y.
func (w *work) gap(k int, y []float64) float64 {
	return w.sg[k] * (y[w.pv[k]] - w.pb[k])
}
