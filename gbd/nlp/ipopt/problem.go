package ipopt

import (
	"math"

	"gbdmpc/gbd/nlp"
)

// Evaluator and Problem are gbd's own (package nlp): the binding solves the problem every
// back-end solves, min f(x) s.t. GL ≤ g(x) ≤ GU, XL ≤ x ≤ XU, with the same sparsity conventions
// (0-based, Hessian lower triangle) and the same ownership of the slices passed to the Evaluator.
type (
	Evaluator = nlp.Evaluator
	Problem   = nlp.Problem
)

// WarmStart holds initial multipliers, in the sign convention of Result (see the package doc).
// It is used only when Options.WarmStart is set.
type WarmStart struct {
	MultG, MultXL, MultXU []float64
}

// Result is what IpoptSolve left behind. X and the multipliers are meaningful as a solution only
// when Status.Ok(); for other statuses they are the last iterate, which is still useful e.g. as
// the infeasibility minimiser after InfeasibleProblemDetected.
type Result struct {
	Status         Status
	X              []float64
	Obj            float64
	G              []float64 // g(X)
	MultG          []float64 // λ, one per constraint
	MultXL, MultXU []float64 // z_L, z_U ≥ 0, one per variable
	Iterations     int       // last iteration counter reported by Ipopt's intermediate callback
}

// bigBound is the magnitude at or beyond which Ipopt treats a bound as absent
// (nlp_lower_bound_inf / nlp_upper_bound_inf defaults).
const bigBound = 1e19

// validate checks everything Ipopt would otherwise reject with an unspecific status, or
// silently misuse (an out-of-range structure index is an out-of-bounds write in C++).
func validate(p *Problem, x0 []float64, warm *WarmStart, opt *Options) error {
	if p == nil {
		return problemErr("Problem", -1, "nil")
	}
	if p.N < 1 {
		return problemErr("N", -1, "must be ≥ 1, got %d", p.N)
	}
	if p.M < 0 {
		return problemErr("M", -1, "must be ≥ 0, got %d", p.M)
	}
	if p.N > math.MaxInt32 || p.M > math.MaxInt32 ||
		len(p.JacRow) > math.MaxInt32 || len(p.HessRow) > math.MaxInt32 {
		return problemErr("N", -1, "problem too large for Ipopt's 32-bit Index")
	}
	if p.Eval == nil {
		return problemErr("Eval", -1, "nil Evaluator")
	}
	if err := checkLen("x0", x0, p.N); err != nil {
		return err
	}
	for j, v := range x0 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return problemErr("x0", j, "not finite: %v", v)
		}
	}
	if err := checkBounds("XL", "XU", p.XL, p.XU, p.N); err != nil {
		return err
	}
	if err := checkBounds("GL", "GU", p.GL, p.GU, p.M); err != nil {
		return err
	}
	if err := checkStructure("Jac", p.JacRow, p.JacCol, p.M, p.N, false); err != nil {
		return err
	}
	if p.M == 0 && len(p.JacRow) != 0 {
		return problemErr("JacRow", -1, "must be empty when M == 0")
	}
	if p.M > 0 && len(p.JacRow) == 0 {
		// Ipopt's C interface returns NULL for this; a constraint with an all-zero gradient
		// is better written as a bound anyway.
		return problemErr("JacRow", -1, "Ipopt needs at least one Jacobian nonzero when M > 0")
	}
	if err := checkStructure("Hess", p.HessRow, p.HessCol, p.N, p.N, true); err != nil {
		return err
	}
	if opt.WarmStart {
		if warm == nil {
			return problemErr("WarmStart", -1, "Options.WarmStart set but no *WarmStart given")
		}
		if err := checkFinite("MultG", warm.MultG, p.M); err != nil {
			return err
		}
		if err := checkFinite("MultXL", warm.MultXL, p.N); err != nil {
			return err
		}
		if err := checkFinite("MultXU", warm.MultXU, p.N); err != nil {
			return err
		}
	}
	return opt.validate()
}

func checkLen(field string, v []float64, n int) error {
	if len(v) != n {
		return problemErr(field, -1, "length %d, want %d", len(v), n)
	}
	return nil
}

func checkFinite(field string, v []float64, n int) error {
	if err := checkLen(field, v, n); err != nil {
		return err
	}
	for i, a := range v {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return problemErr(field, i, "not finite: %v", a)
		}
	}
	return nil
}

// checkBounds rejects NaN and crossed bounds. Crossed bounds are rejected here rather than passed
// on because Ipopt 3.11 reports them only on stdout and with a status that depends on whether
// the variable is otherwise fixed; a caller that builds bounds from data should see a clear error.
func checkBounds(lname, uname string, lo, hi []float64, n int) error {
	if err := checkLen(lname, lo, n); err != nil {
		return err
	}
	if err := checkLen(uname, hi, n); err != nil {
		return err
	}
	for i := range n {
		switch {
		case math.IsNaN(lo[i]):
			return problemErr(lname, i, "NaN")
		case math.IsNaN(hi[i]):
			return problemErr(uname, i, "NaN")
		case math.IsInf(lo[i], 1):
			return problemErr(lname, i, "+Inf lower bound")
		case math.IsInf(hi[i], -1):
			return problemErr(uname, i, "-Inf upper bound")
		case lo[i] > hi[i]:
			return problemErr(lname, i, "lower bound %v above upper bound %v", lo[i], hi[i])
		}
	}
	return nil
}

func checkStructure(name string, rows, cols []int32, nrow, ncol int, lower bool) error {
	rname, cname := name+"Row", name+"Col"
	if len(rows) != len(cols) {
		return problemErr(cname, -1, "length %d differs from %s length %d", len(cols), rname, len(rows))
	}
	for k := range rows {
		r, c := rows[k], cols[k]
		if r < 0 || int(r) >= nrow {
			return problemErr(rname, k, "row %d out of range [0,%d)", r, nrow)
		}
		if c < 0 || int(c) >= ncol {
			return problemErr(cname, k, "column %d out of range [0,%d)", c, ncol)
		}
		if lower && r < c {
			return problemErr(rname, k, "entry (%d,%d) is above the diagonal; give the lower triangle", r, c)
		}
	}
	return nil
}

// cBound maps ±Inf to Ipopt's "no bound" sentinel; finite values pass unchanged.
func cBound(v float64) float64 {
	switch {
	case math.IsInf(v, 1):
		return bigBound
	case math.IsInf(v, -1):
		return -bigBound
	}
	return v
}
