package gbd

import (
	"fmt"
	"math"

	"gbdmpc/internal/enum"
)

// Atom is a univariate function of an affine argument u = a·x + s. Problems are built from weighted
// sums of atoms, which keeps exact first and second derivatives cheap and makes curvature checkable.
type Atom uint8

const (
	AtomExp    Atom = iota + 1 // e^u, convex
	AtomLog                    // ln u, concave, u > 0
	AtomSquare                 // u², convex
	AtomCube                   // u³, convex where u ≥ 0
	AtomPower                  // u^p with p ≥ 1, convex where u ≥ 0
)

var atomNames = [...]string{
	AtomExp:    "exp",
	AtomLog:    "log",
	AtomSquare: "square",
	AtomCube:   "cube",
	AtomPower:  "power",
}

func (a Atom) String() string { return enum.Name(atomNames[:], a, "Atom") }

// eval returns the atom's value and first two derivatives at u. ok is false outside its domain
// (ln of a non-positive number, a fractional power of a negative one) or on overflow, so that an
// NLP solver can backtrack instead of seeing NaN.
func (a Atom) eval(u, p float64) (v, d1, d2 float64, ok bool) {
	switch a {
	case AtomExp:
		v = math.Exp(u)
		if math.IsInf(v, 0) {
			return 0, 0, 0, false
		}
		return v, v, v, true
	case AtomLog:
		if !(u > 0) {
			return 0, 0, 0, false
		}
		return math.Log(u), 1 / u, -1 / (u * u), true
	case AtomSquare:
		return u * u, 2 * u, 2, true
	case AtomCube:
		return u * u * u, 3 * u * u, 6 * u, true
	case AtomPower:
		if u < 0 {
			// The modelled quantity is non-negative; treat small negative excursions of an
			// interior-point iterate as zero rather than failing.
			if u < -1e-12 {
				return 0, 0, 0, false
			}
			u = 0
		}
		if u == 0 {
			switch {
			case p == 1:
				return 0, 1, 0, true
			case p < 2:
				// The second derivative is unbounded at 0: no exact Hessian exists there.
				return 0, 0, 0, false
			case p == 2:
				return 0, 0, 2, true
			}
			return 0, 0, 0, true
		}
		v = math.Pow(u, p)
		return v, p * v / u, p * (p - 1) * v / (u * u), true
	}
	return 0, 0, 0, false
}

// curvature of the atom over an interval [lo, hi] of its argument: +1 convex, -1 concave, 0 neither
// (or outside its domain), with a reason when 0.
func (a Atom) curvature(lo, hi, p float64) (int, string) {
	switch a {
	case AtomExp, AtomSquare:
		return 1, ""
	case AtomLog:
		if lo < 0 {
			return 0, fmt.Sprintf("log argument can reach %g over the variable bounds; it must stay positive", lo)
		}
		return -1, ""
	case AtomCube:
		if lo < 0 {
			return 0, fmt.Sprintf("cube argument can reach %g over the variable bounds; u³ is convex only for u ≥ 0", lo)
		}
		return 1, ""
	case AtomPower:
		if !(p >= 1) || math.IsInf(p, 0) {
			return 0, fmt.Sprintf("power exponent %g: only p ≥ 1 (finite) is convex", p)
		}
		if lo < 0 {
			return 0, fmt.Sprintf("power argument can reach %g over the variable bounds; u^p is convex only for u ≥ 0", lo)
		}
		return 1, ""
	}
	return 0, fmt.Sprintf("unknown atom %d", uint8(a))
}
