package ipm

import "math"

// Infeasibility verdict (doc.go, "Infeasibility").
const (
	// infTol: a problem is declared infeasible when its least possible row violation, weighted
	// by the normalized certificate multipliers, is proven above this (scaled units).
	infTol = 1e-8
	// freeSlope: a certificate slope along a variable without the bound it would need is
	// accepted as zero up to this (relative to ‖λ̂‖∞), charged over freeReach·max(1, |x_j|).
	freeSlope = 1e-9
	freeReach = 1e3
)

// certificate returns a lower bound on min over the box of Σ_i |λ̂_i|·viol_i(x) / ‖λ̂‖∞, where
// λ̂ is the current row multiplier with any entry of a sign its row's bounds do not support set
// to zero. Since Σ_i λ̂_i g_i is convex for such λ̂ (convex rows carry λ̂ ≥ 0, concave ones
// λ̂ ≤ 0, two-sided rows are affine), its linearization at the current x bounds it from below
// over the whole box:
//
//	V = Σ_i λ̂_i (g_i(x) − b_i) + Σ_j min_{x'_j ∈ [XL_j, XU_j]} (Jᵀλ̂)_j (x'_j − x_j),
//
// with b_i = GU_i for λ̂_i > 0 and GL_i for λ̂_i < 0. Every feasible point makes the first sum
// ≤ 0, so V > 0 proves that no point of the box meets the rows. −Inf means no proof.
func (s *Solver) certificate() float64 {
	st, w := &s.st, &s.w
	lh := w.tm
	lmax := 0.0
	for i := range w.m {
		l := w.lam[i]
		if !w.rowOn[i] || (l > 0 && !finite(w.gu[i])) || (l < 0 && !finite(w.gl[i])) {
			l = 0
		}
		lh[i] = l
		lmax = max(lmax, math.Abs(l))
	}
	if lmax == 0 {
		return math.Inf(-1)
	}
	v := 0.0
	for i, l := range lh {
		switch {
		case l > 0:
			v += l * (w.g[i] - w.gu[i])
		case l < 0:
			v += l * (w.g[i] - w.gl[i])
		}
	}
	d := w.tn
	clear(d)
	for k, j := range st.jacCol {
		d[j] += w.jv[k] * lh[st.jacRow[k]]
	}
	for j := range w.n {
		if w.fix[j] {
			continue
		}
		dj, x := d[j], w.y[j]
		switch {
		case dj > 0 && finite(w.xl[j]):
			v += dj * (w.xl[j] - x)
		case dj < 0 && finite(w.xu[j]):
			v += dj * (w.xu[j] - x)
		case dj != 0:
			if math.Abs(dj) > freeSlope*lmax {
				return math.Inf(-1)
			}
			v -= math.Abs(dj) * freeReach * max(1, math.Abs(x))
		}
	}
	return v / lmax
}
