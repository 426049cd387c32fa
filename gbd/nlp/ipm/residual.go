package ipm

import "math"

// sMax is Ipopt's s_max: multipliers up to this size leave the dual and complementarity
// residuals unscaled; larger ones scale them down (doc.go, "Termination").
const sMax = 100

// stationarity writes the gradient of the Lagrangian with respect to every component of y at
// (y, z, λ) into r (0 for fixed components):
//
//	x: ω∇f̃ + J̃ᵀλ − Σ sg·z,   s: −λ − Σ sg·z,   p: ρ − λ − z,   e: ρ + λ − z.
func (s *Solver) stationarity(y, z, lam, gr, jv, r []float64) {
	st, w := &s.st, &s.w
	n, m := w.n, w.m
	for j := range n {
		r[j] = w.omega * gr[j]
	}
	for k, j := range st.jacCol {
		r[j] += jv[k] * lam[st.jacRow[k]]
	}
	for i := range m {
		r[w.sIdx(i)] = -lam[i]
		r[w.pIdx(i)] = w.rho - lam[i]
		r[w.eIdx(i)] = w.rho + lam[i]
	}
	for k := range w.np {
		r[w.pv[k]] -= w.sg[k] * z[k]
	}
	for v := range w.ny {
		if w.fix[v] {
			r[v] = 0
		}
	}
}

// merit is the norm of the KKT residual of the elastic barrier problem with target mu at a
// point (y, z, λ) whose scaled functions are g, gr, jv. Elastic pairs enter divided by ρ, so that
// they measure the row violation rather than ρ times it. scratch has length ny.
func (s *Solver) merit(y, z, lam, g, gr, jv []float64, mu float64, scratch []float64) float64 {
	w := &s.w
	s.stationarity(y, z, lam, gr, jv, scratch)
	sum := 0.0
	for _, v := range scratch {
		sum += v * v
	}
	for i := range w.m {
		if !w.rowOn[i] {
			continue
		}
		r := g[i]
		for _, v := range [3]int{w.sIdx(i), w.pIdx(i), w.eIdx(i)} {
			r += w.coef[v] * y[v]
		}
		sum += r * r
	}
	for k := range w.np {
		c := w.gap(k, y)*z[k] - mu
		if w.el[k] {
			c /= w.rho
		}
		sum += c * c
	}
	return math.Sqrt(sum)
}

// avgCompl is the average complementarity gap·z over the non-elastic pairs (all pairs when
// there are none), at gaps y + a·dy and multipliers z + b·dz.
func (w *work) avgCompl(dy, dz []float64, a, b float64) float64 {
	lo, hi := 0, w.nplain
	if hi == 0 {
		hi = w.np
	}
	if hi == lo {
		return 0
	}
	sum := 0.0
	for k := lo; k < hi; k++ {
		v := w.pv[k]
		gap := w.sg[k] * (w.y[v] + a*dy[v] - w.pb[k])
		sum += gap * (w.z[k] + b*dz[k])
	}
	return sum / float64(hi-lo)
}

// mu is the current average complementarity over the non-elastic pairs (all pairs when there
// are none), from the gaps factor stored.
func (w *work) mu() float64 {
	hi := w.nplain
	if hi == 0 {
		hi = w.np
	}
	if hi == 0 {
		return 0
	}
	sum := 0.0
	for k := range hi {
		sum += w.gp[k] * w.z[k]
	}
	return sum / float64(hi)
}

// kktError measures the first-order conditions of the original (scaled) problem at the
// current iterate, in the form the result reports:
//
//	primal: the largest violation of GL ≤ g(x) ≤ GU,
//	dual:   ‖∇f + Jᵀλ − z_L + z_U‖∞ over free variables and any multiplier of the wrong sign,
//	        divided by s_d,
//	compl:  the largest z·(x − bound) and |λ_i|·|g_i − bound|, divided by s_c.
//
// A rescaled variable's stationarity component and bound multiplier are measured in the
// variable's own units (divided by cs_j): in its scaled units the gradient is as large as cs_j
// by design, and a residual relative to that would ask for more digits than a float has, while
// its multipliers would inflate s_d and s_c and loosen every other test (complementarity is the
// same in both units).
func (s *Solver) kktError() (primal, dual, compl float64) {
	st, w := &s.st, &s.w
	n, m := w.n, w.m
	r := w.tn
	for j := range n {
		r[j] = gradTerm(w, j)
	}
	for k, j := range st.jacCol {
		r[j] += w.jv[k] * w.lam[st.jacRow[k]]
	}
	sumZ, nz := 0.0, 0
	for k := range w.np {
		if !w.xpair[k] {
			continue
		}
		j := w.pv[k]
		r[j] -= w.sg[k] * w.z[k]
		sumZ += w.z[k] / w.cs[j]
		nz++
		compl = max(compl, w.gap(k, w.y)*w.z[k])
	}
	for j := range n {
		if !w.fix[j] {
			dual = max(dual, math.Abs(r[j])/w.cs[j])
		}
	}
	sumL, nl := 0.0, 0
	for i := range m {
		if !w.rowOn[i] {
			continue
		}
		gi, l := w.g[i], w.lam[i]
		primal = max(primal, w.gl[i]-gi, gi-w.gu[i])
		sumL += math.Abs(l)
		nl++
		switch {
		case l > 0 && finite(w.gu[i]):
			compl = max(compl, l*math.Abs(w.gu[i]-gi))
		case l < 0 && finite(w.gl[i]):
			compl = max(compl, -l*math.Abs(gi-w.gl[i]))
		case l != 0:
			dual = max(dual, math.Abs(l)) // a multiplier on a side without bound
		}
	}
	sd := max(sMax, (sumZ+sumL)/float64(max(1, nz+nl))) / sMax
	sc := max(sMax, (sumZ+sumL)/float64(max(1, nz+nl))) / sMax
	return primal, dual / sd, compl / sc
}

func gradTerm(w *work, j int) float64 { return w.omega * w.gr[j] }
