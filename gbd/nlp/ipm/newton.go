package ipm

import "math"

// Regularization of the reduced system (doc.go, "Linear algebra").
const (
	hPivotMin = 1e-9  // smallest curvature pivot of a Hessian block (scaled units)
	sPivotRel = 1e-13 // smallest Schur pivot, relative to S's largest diagonal entry
	refineMax = 3     // iterative-refinement steps per solve
)

// factor forms and factors the reduced Newton system at the current iterate
//
//	[ W + Σ_x   Jᵀ ] [dx]   [−r̂_x]
//	[ J        −D  ] [dλ] = [−r̂_c]
//
// by factoring every Hessian block W_b + Σ_b and then the Schur complement S = J H⁻¹ Jᵀ + D.
// Fixed variables keep an identity row (dx_j = 0), rows without bounds an identity row in S
// (dλ_i = 0), so the structure never changes with y.
func (s *Solver) factor() {
	st, w := &s.st, &s.w
	n, m := w.n, w.m
	clear(w.sig)
	for k := range w.np {
		g := w.gap(k, w.y)
		w.gp[k] = g
		w.sig[w.pv[k]] += w.z[k] / g
	}
	// The iteration's directions all start from the stationarity at this iterate.
	s.stationarity(w.y, w.z, w.lam, w.gr, w.jv, w.stat)
	for i := range m {
		d := 0.0
		if w.rowOn[i] {
			for _, v := range [3]int{w.sIdx(i), w.pIdx(i), w.eIdx(i)} {
				if !w.fix[v] {
					d += 1 / w.sig[v]
				}
			}
		}
		w.dd[i] = d
	}

	// Block Hessians W + Σ_x.
	clear(w.hraw)
	for k, at := range st.hessAt {
		w.hraw[at] += w.hv[k]
		if t := st.hessAtT[k]; t != at {
			w.hraw[t] += w.hv[k]
		}
	}
	for j := range n {
		b := st.varBlk[j]
		bs := int32(st.blockSize(int(b)))
		loc := st.varLoc[j]
		off := st.hOff[b]
		if w.fix[j] {
			for q := range bs {
				w.hraw[off+loc*bs+q] = 0
				w.hraw[off+q*bs+loc] = 0
			}
			w.hraw[off+loc*bs+loc] = 1
			continue
		}
		w.hraw[off+loc*bs+loc] += w.sig[j]
	}
	copy(w.hfac, w.hraw)
	w.regW = false
	for b := range st.nblk {
		bs := st.blockSize(b)
		off := st.hOff[b]
		if bs == 1 {
			h := w.hfac[off]
			if !(h > hPivotMin) {
				h = hPivotMin
				w.regW = true
			}
			w.hfac[off] = math.Sqrt(h)
			continue
		}
		if cholesky(w.hfac[off:off+int32(bs*bs)], bs, bs-1, hPivotMin, hPivotMin) > 0 {
			w.regW = true
		}
	}

	// Schur complement S = Σ_b J_b H_b⁻¹ J_bᵀ + D.
	clear(w.jb)
	for k, at := range st.jacAt {
		if w.rowOn[st.jacRow[k]] && !w.fix[st.jacCol[k]] {
			w.jb[at] += w.jv[k]
		}
	}
	clear(w.sfac)
	for b := range st.nblk {
		r0, r1 := st.blkRowStart[b], st.blkRowStart[b+1]
		mb := int(r1 - r0)
		if mb == 0 {
			continue
		}
		rows := st.blkRow[r0:r1]
		bs := st.blockSize(b)
		jb := w.jb[st.jOff[b] : int(st.jOff[b])+mb*bs]
		if bs == 1 {
			inv := 1 / (w.hfac[st.hOff[b]] * w.hfac[st.hOff[b]])
			for a := range mb {
				va := jb[a] * inv
				if va == 0 {
					continue
				}
				ra := int(rows[a]) * m
				for c := 0; c <= a; c++ {
					w.sfac[ra+int(rows[c])] += va * jb[c]
				}
			}
			continue
		}
		// Y = L_b⁻¹ J_bᵀ (bs × mb, column a is local row a), then S += YᵀY.
		l := w.hfac[st.hOff[b] : int(st.hOff[b])+bs*bs]
		y := w.ybuf[:bs*mb]
		for a := range mb {
			col := y[a*bs : a*bs+bs]
			copy(col, jb[a*bs:a*bs+bs])
			lowerSolve(l, bs, col)
		}
		for a := range mb {
			ya := y[a*bs : a*bs+bs]
			ra := int(rows[a]) * m
			for c := 0; c <= a; c++ {
				yc := y[c*bs : c*bs+bs]
				sum := 0.0
				for q := range bs {
					sum += ya[q] * yc[q]
				}
				w.sfac[ra+int(rows[c])] += sum
			}
		}
	}
	for i := range m {
		if w.rowOn[i] {
			w.sfac[i*m+i] += w.dd[i]
		} else {
			w.sfac[i*m+i] = 1
		}
	}
	w.regS = choleskyRel(w.sfac, m, st.band, sPivotRel, 1e-300, 1e-300) > 0
}

// blockSolve overwrites u with H⁻¹u using the block factors.
func (s *Solver) blockSolve(u []float64) {
	st, w := &s.st, &s.w
	for b := range st.nblk {
		bs, off, vars := st.block(b)
		if bs == 1 {
			l := w.hfac[off]
			u[vars[0]] /= l * l
			continue
		}
		var buf [8]float64
		v := buf[:0]
		if bs > len(buf) {
			v = w.ybuf[:bs]
		} else {
			v = buf[:bs]
		}
		for q, j := range vars {
			v[q] = u[j]
		}
		cholSolve(w.hfac[off:off+bs*bs], bs, bs-1, v)
		for q, j := range vars {
			u[j] = v[q]
		}
	}
}

// solveReduced solves the reduced system for the right-hand side (−rx, −rc) with the current
// factors, writing dx (n) and dl (m). rx and rc are left unchanged.
func (s *Solver) solveReduced(rx, rc, dx, dl []float64) {
	st, w := &s.st, &s.w
	u := w.tn
	copy(u, rx)
	s.blockSolve(u)
	copy(dl, rc)
	for k, i := range st.jacRow {
		dl[i] -= w.jv[k] * u[st.jacCol[k]]
	}
	for i := range w.m {
		if !w.rowOn[i] {
			dl[i] = 0
		}
	}
	cholSolve(w.sfac, w.m, st.band, dl)
	copy(dx, rx)
	for k, j := range st.jacCol {
		dx[j] += w.jv[k] * dl[st.jacRow[k]]
	}
	s.blockSolve(dx)
	for j := range dx {
		if w.fix[j] {
			dx[j] = 0
		} else {
			dx[j] = -dx[j]
		}
	}
}

// solveRefined solves the reduced system and improves the solution by iterative refinement
// against the unregularized matrix, which undoes the effect of replaced pivots and recovers
// accuracy lost to ill-conditioning near the solution.
func (s *Solver) solveRefined(rx, rc, dx, dl []float64) {
	st, w := &s.st, &s.w
	s.solveReduced(rx, rc, dx, dl)
	bnorm := 0.0
	for _, v := range rx {
		bnorm = max(bnorm, math.Abs(v))
	}
	for _, v := range rc {
		bnorm = max(bnorm, math.Abs(v))
	}
	for range refineMax {
		// Residual e = [−rx; −rc] − K [dx; dl] of the unregularized system.
		ex, em := w.ex, w.em
		for j := range ex {
			ex[j] = -rx[j]
		}
		s.hmul(dx, ex)
		for k, j := range st.jacCol {
			ex[j] -= w.jv[k] * dl[st.jacRow[k]]
		}
		for i := range em {
			em[i] = -rc[i] + w.dd[i]*dl[i]
		}
		for k, i := range st.jacRow {
			em[i] -= w.jv[k] * dx[st.jacCol[k]]
		}
		enorm := 0.0
		for j, v := range ex {
			if w.fix[j] {
				ex[j] = 0
				continue
			}
			enorm = max(enorm, math.Abs(v))
		}
		for i, v := range em {
			if !w.rowOn[i] {
				em[i] = 0
				continue
			}
			enorm = max(enorm, math.Abs(v))
		}
		if enorm <= 1e-14*(1+bnorm) {
			return
		}
		// Correction: K δ = e, i.e. rx' = −ex, rc' = −em.
		for j := range ex {
			ex[j] = -ex[j]
		}
		for i := range em {
			em[i] = -em[i]
		}
		cx, cl := w.tn2, w.tm2
		s.solveReduced(ex, em, cx, cl)
		for j := range dx {
			dx[j] += cx[j]
		}
		for i := range dl {
			dl[i] += cl[i]
		}
	}
}

// hmul subtracts (W + Σ_x)·dx from out, block by block (fixed variables excluded).
func (s *Solver) hmul(dx, out []float64) {
	st, w := &s.st, &s.w
	for b := range st.nblk {
		bs, off, vars := st.block(b)
		if bs == 1 {
			out[vars[0]] -= w.hraw[off] * dx[vars[0]]
			continue
		}
		for a, ja := range vars {
			sum := 0.0
			for c, jc := range vars {
				sum += w.hraw[off+a*bs+c] * dx[jc]
			}
			out[ja] -= sum
		}
	}
}

// direction computes the Newton direction of the KKT conditions with complementarity target
// muT. With corr, Mehrotra's second-order term Δgap·Δz of the affine direction (dyA, dzA) is
// subtracted from the target, giving the predictor–corrector step.
func (s *Solver) direction(muT float64, corr bool, dy, dz, dl []float64) {
	w := &s.w
	n, m := w.n, w.m
	copy(w.rh, w.stat)
	for k := range w.np {
		v := w.pv[k]
		c := 0.0
		if corr {
			c = w.sg[k] * w.dyA[v] * w.dzA[k]
		}
		// r̂_v = r_v + Σ sg·z − Σ sg·(μ − c)/gap over v's pairs.
		w.rh[v] += w.sg[k] * (w.z[k] - (muT-c)/w.gp[k])
	}
	for i := range m {
		if !w.rowOn[i] {
			w.rc[i] = 0
			continue
		}
		r := w.g[i]
		for _, v := range [3]int{w.sIdx(i), w.pIdx(i), w.eIdx(i)} {
			r += w.coef[v] * w.y[v]
			if !w.fix[v] {
				r -= w.coef[v] * w.rh[v] / w.sig[v]
			}
		}
		w.rc[i] = r
	}
	s.solveRefined(w.rh[:n], w.rc, dy[:n], dl)
	for v := n; v < w.ny; v++ {
		if w.fix[v] {
			dy[v] = 0
			continue
		}
		dy[v] = -(w.rh[v] + w.coef[v]*dl[w.rowOf(v)]) / w.sig[v]
	}
	for k := range w.np {
		v := w.pv[k]
		c := 0.0
		if corr {
			c = w.sg[k] * w.dyA[v] * w.dzA[k]
		}
		gap := w.gp[k]
		dz[k] = (muT - c - gap*w.z[k] - w.z[k]*w.sg[k]*dy[v]) / gap
	}
}

// maxStep is the largest step in (0, 1] along (dy, dz) that keeps every gap and every bound
// multiplier at least (1−tau) of its current value (fraction to the boundary). It reads the gaps
// factor stored, so it serves the iterate last factored.
func (w *work) maxStep(dy, dz []float64, tau float64) (ap, ad float64) {
	ap, ad = 1, 1
	for k := range w.np {
		if dg := w.sg[k] * dy[w.pv[k]]; dg < 0 {
			ap = min(ap, -tau*w.gp[k]/dg)
		}
		if dz[k] < 0 {
			ad = min(ad, -tau*w.z[k]/dz[k])
		}
	}
	return ap, ad
}
