package gbd

import (
	"math"
	"testing"
)

// TestAtomDerivatives checks every atom's first and second derivative against central differences.
func TestAtomDerivatives(t *testing.T) {
	cases := []struct {
		atom Atom
		p    float64
		us   []float64
	}{
		{AtomExp, 0, []float64{-3, -0.5, 0, 0.7, 2.5}},
		{AtomLog, 0, []float64{0.05, 0.5, 1, 3, 40}},
		{AtomSquare, 0, []float64{-4, -0.1, 0, 0.3, 5}},
		{AtomCube, 0, []float64{0, 0.2, 1, 3.3}},
		{AtomPower, 1, []float64{0.1, 2}},
		{AtomPower, 1.5, []float64{0.1, 1, 2}},
		{AtomPower, 2, []float64{0.1, 1, 2}},
		{AtomPower, 3.7, []float64{0.1, 1, 2.2}},
	}
	for _, c := range cases {
		for _, u := range c.us {
			_, d1, d2, ok := c.atom.eval(u, c.p)
			if !ok {
				t.Fatalf("%s(p=%g) at %g: not ok", c.atom, c.p, u)
			}
			h := 1e-6 * math.Max(1, math.Abs(u))
			if c.atom == AtomLog || c.atom == AtomPower {
				h = math.Min(h, u/4)
			}
			vp, dp, _, _ := c.atom.eval(u+h, c.p)
			vm, dm, _, _ := c.atom.eval(u-h, c.p)
			fd1 := (vp - vm) / (2 * h)
			fd2 := (dp - dm) / (2 * h)
			if !close(d1, fd1, 1e-6) {
				t.Errorf("%s(p=%g) at %g: d1 %g, finite difference %g", c.atom, c.p, u, d1, fd1)
			}
			if !close(d2, fd2, 1e-5) {
				t.Errorf("%s(p=%g) at %g: d2 %g, finite difference %g", c.atom, c.p, u, d2, fd2)
			}
		}
	}
}

func TestAtomDomain(t *testing.T) {
	if _, _, _, ok := AtomLog.eval(0, 0); ok {
		t.Error("log(0) accepted")
	}
	if _, _, _, ok := AtomLog.eval(-1, 0); ok {
		t.Error("log(-1) accepted")
	}
	if _, _, _, ok := AtomExp.eval(1000, 0); ok {
		t.Error("exp overflow accepted")
	}
	if _, _, _, ok := AtomPower.eval(-0.5, 2.5); ok {
		t.Error("negative base of a fractional power accepted")
	}
}

// close compares with a mixed absolute/relative tolerance.
func close(a, b, tol float64) bool { return math.Abs(a-b) <= tol*(1+math.Abs(b)) }
