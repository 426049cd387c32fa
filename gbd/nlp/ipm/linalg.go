package ipm

import "math"

// The dense kernels below work on row-major n×n arrays and use only the lower triangle. They are
// written for the sizes gbd produces (blocks of 1–2 variables, Schur complements of 10–30 rows
// with a band of 1 for the pump station), where a call into a general BLAS costs more than the
// arithmetic.

// cholesky factors the symmetric matrix a (n×n, lower triangle) in place into L·Lᵀ, treating
// entries more than band places below the diagonal as zero. A pivot at or below floor (a
// singular or indefinite direction: dependent rows, a free variable without curvature) is
// replaced by pivot, which regularizes that direction; the count of replaced pivots is
// returned so the caller can refine the solution against the unregularized matrix.
func cholesky(a []float64, n, band int, floor, pivot float64) int {
	return choleskyRel(a, n, band, 0, floor, pivot)
}

// choleskyRel is cholesky with each pivot's floor at least rel times its own diagonal entry
// before factoring (and a replaced pivot at least that too), so that a row whose diagonal is
// orders of magnitude below another's (an active constraint beside an inactive one, whose
// diagonal holds the inverse of a vanishing complementarity ratio) is judged on its own scale.
func choleskyRel(a []float64, n, band int, rel, floor, pivot float64) int {
	bumped := 0
	for i := range n {
		j0 := max(0, i-band)
		ri := a[i*n : i*n+n]
		for j := j0; j < i; j++ {
			rj := a[j*n : j*n+n]
			s := ri[j]
			for k := max(j0, j-band); k < j; k++ {
				s -= ri[k] * rj[k]
			}
			ri[j] = s / rj[j]
		}
		s := ri[i]
		for k := j0; k < i; k++ {
			s -= ri[k] * ri[k]
		}
		fl, pv := floor, pivot
		if rel > 0 {
			d := rel * a[i*n+i]
			fl, pv = max(fl, d), max(pv, d)
		}
		if !(s > fl) {
			s = pv
			bumped++
		}
		ri[i] = math.Sqrt(s)
	}
	return bumped
}

// cholSolve overwrites x with (L·Lᵀ)⁻¹x for a factor from cholesky with the same band.
func cholSolve(l []float64, n, band int, x []float64) {
	for i := range n {
		ri := l[i*n : i*n+n]
		s := x[i]
		for k := max(0, i-band); k < i; k++ {
			s -= ri[k] * x[k]
		}
		x[i] = s / ri[i]
	}
	for i := n - 1; i >= 0; i-- {
		s := x[i]
		for k := i + 1; k <= min(n-1, i+band); k++ {
			s -= l[k*n+i] * x[k]
		}
		x[i] = s / l[i*n+i]
	}
}

// lowerSolve overwrites x with L⁻¹x (forward substitution only).
func lowerSolve(l []float64, n int, x []float64) {
	for i := range n {
		ri := l[i*n : i*n+n]
		s := x[i]
		for k := range i {
			s -= ri[k] * x[k]
		}
		x[i] = s / ri[i]
	}
}

// maxDiag is the largest diagonal entry of the n×n matrix a.
func maxDiag(a []float64, n int) float64 {
	d := 0.0
	for i := range n {
		d = max(d, a[i*n+i])
	}
	return d
}
