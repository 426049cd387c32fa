package gbd

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomProblem builds a convex problem with every atom kind, over a box that keeps log and
// power arguments positive, so derivative tests can be run anywhere inside the box.
func randomProblem(rng *rand.Rand, nx, ny, nrow int) *Problem {
	p := &Problem{Name: "random", NX: nx, NY: ny, XLo: make([]float64, nx), XHi: make([]float64, nx)}
	for i := range nx {
		p.XLo[i], p.XHi[i] = 0.5, 2
	}
	term := func() Term {
		atoms := []Atom{AtomExp, AtomLog, AtomSquare, AtomCube, AtomPower}
		a := atoms[rng.IntN(len(atoms))]
		k := 1 + rng.IntN(3)
		t := Term{Atom: a, Weight: 0.5 + rng.Float64(), Shift: 0.1}
		for range k {
			t.Idx = append(t.Idx, rng.IntN(nx))
			t.Coef = append(t.Coef, 0.2+rng.Float64()) // positive: argument > 0 over the box
		}
		if a == AtomLog {
			t.Weight = -t.Weight
		}
		if a == AtomPower {
			t.P = 2 + rng.Float64()
		}
		return t
	}
	expr := func(nt int) Expr {
		e := Expr{Const: rng.NormFloat64()}
		for range nt {
			e.Terms = append(e.Terms, term())
		}
		for range 2 {
			e.Idx = append(e.Idx, rng.IntN(nx))
			e.Coef = append(e.Coef, rng.NormFloat64())
		}
		e.YIdx = append(e.YIdx, rng.IntN(ny))
		e.YCoef = append(e.YCoef, rng.NormFloat64())
		return e
	}
	p.Objective = expr(3)
	for range nrow {
		p.Ineq = append(p.Ineq, expr(2))
	}
	p.Ineq = append(p.Ineq, Expr{Idx: []int{0}, Coef: []float64{1}, YIdx: []int{0}, YCoef: []float64{-1}, Const: -1})
	eq := expr(0)
	p.Eq = append(p.Eq, eq)
	return p
}

func TestNLPDerivatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		p := randomProblem(rng, 5, 3, 4)
		if err := p.Validate(); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		for _, feas := range []bool{false, true} {
			c := compileNLP(p, feas, true)
			c.setY([]float64{1, 0, 1})
			x := make([]float64, c.n)
			for i := range x {
				x[i] = 0.6 + 1.2*rng.Float64()
			}
			checkNLPDerivatives(t, c, x)
		}
	}
}

func checkNLPDerivatives(t *testing.T, c *compiled, x []float64) {
	t.Helper()
	n, m := c.n, c.m
	h := 1e-6
	// Gradient.
	g := make([]float64, n)
	if !c.Gradient(x, g) {
		t.Fatal("gradient failed")
	}
	xp := append([]float64(nil), x...)
	for i := range n {
		xp[i] = x[i] + h
		fp, _ := c.Objective(xp)
		xp[i] = x[i] - h
		fm, _ := c.Objective(xp)
		xp[i] = x[i]
		if fd := (fp - fm) / (2 * h); !close(g[i], fd, 1e-6) {
			t.Errorf("feas=%v gradient[%d] = %g, finite difference %g", c.feas, i, g[i], fd)
		}
	}
	// Jacobian.
	jv := make([]float64, len(c.jacRow))
	c.Jacobian(x, jv)
	dense := make([]float64, m*n)
	for k := range jv {
		dense[int(c.jacRow[k])*n+int(c.jacCol[k])] += jv[k]
	}
	gp, gm := make([]float64, m), make([]float64, m)
	for i := range n {
		xp[i] = x[i] + h
		c.Constraints(xp, gp)
		xp[i] = x[i] - h
		c.Constraints(xp, gm)
		xp[i] = x[i]
		for r := range m {
			if fd := (gp[r] - gm[r]) / (2 * h); !close(dense[r*n+i], fd, 1e-6) {
				t.Errorf("feas=%v jacobian[%d,%d] = %g, finite difference %g", c.feas, r, i, dense[r*n+i], fd)
			}
		}
	}
	// Hessian of the Lagrangian σ f + λᵀg, against differences of its gradient.
	sigma := 0.7
	lambda := make([]float64, m)
	for r := range lambda {
		lambda[r] = 0.3 + float64(r)*0.1
	}
	hv := make([]float64, len(c.hessRow))
	c.Hessian(x, sigma, lambda, hv)
	hd := make([]float64, n*n)
	for k := range hv {
		i, j := int(c.hessRow[k]), int(c.hessCol[k])
		if i < j {
			t.Fatalf("hessian entry (%d,%d) above the diagonal", i, j)
		}
		hd[i*n+j] += hv[k]
		if i != j {
			hd[j*n+i] += hv[k]
		}
	}
	lagGrad := func(x []float64) []float64 {
		out := make([]float64, n)
		c.Gradient(x, out)
		for i := range out {
			out[i] *= sigma
		}
		jv := make([]float64, len(c.jacRow))
		c.Jacobian(x, jv)
		for k := range jv {
			out[c.jacCol[k]] += lambda[c.jacRow[k]] * jv[k]
		}
		return out
	}
	for i := range n {
		xp[i] = x[i] + h
		a := lagGrad(xp)
		xp[i] = x[i] - h
		b := lagGrad(xp)
		xp[i] = x[i]
		for j := range n {
			if fd := (a[j] - b[j]) / (2 * h); !close(hd[j*n+i], fd, 1e-5) {
				t.Errorf("feas=%v hessian[%d,%d] = %g, finite difference %g", c.feas, j, i, hd[j*n+i], fd)
			}
		}
	}
}

func TestValidateRejects(t *testing.T) {
	base := func() *Problem {
		return &Problem{Name: "p", NX: 2, NY: 1, XLo: []float64{-1, 0}, XHi: []float64{1, 2}}
	}
	cases := []struct {
		name string
		edit func(p *Problem)
		want string
		conv bool
	}{
		{"concave log in objective", func(p *Problem) {
			p.Objective.Terms = []Term{{Weight: 1, Atom: AtomLog, Idx: []int{1}, Coef: []float64{1}, Shift: 1}}
		}, "concave", true},
		{"log argument can be negative", func(p *Problem) {
			p.Objective.Terms = []Term{{Weight: -1, Atom: AtomLog, Idx: []int{0}, Coef: []float64{1}}}
		}, "must stay positive", true},
		{"cube of a signed argument", func(p *Problem) {
			p.Ineq = []Expr{{Terms: []Term{{Weight: 1, Atom: AtomCube, Idx: []int{0}, Coef: []float64{1}}}}}
		}, "convex only for u ≥ 0", true},
		{"negative exp", func(p *Problem) {
			p.Ineq = []Expr{{Terms: []Term{{Weight: -2, Atom: AtomExp, Idx: []int{0}, Coef: []float64{1}}}}}
		}, "concave", true},
		{"nonlinear equality", func(p *Problem) {
			p.Eq = []Expr{{Terms: []Term{{Weight: 1, Atom: AtomSquare, Idx: []int{0}, Coef: []float64{1}}}}}
		}, "affine", true},
		{"power below one", func(p *Problem) {
			p.Objective.Terms = []Term{{Weight: 1, Atom: AtomPower, P: 0.5, Idx: []int{1}, Coef: []float64{1}}}
		}, "p ≥ 1", true},
		{"x index out of range", func(p *Problem) { p.Objective.Idx, p.Objective.Coef = []int{2}, []float64{1} }, "out of range", false},
		{"y index out of range", func(p *Problem) { p.Ineq = []Expr{{YIdx: []int{1}, YCoef: []float64{1}}} }, "out of range", false},
		{"NaN coefficient", func(p *Problem) { p.Objective.Idx, p.Objective.Coef = []int{0}, []float64{math.NaN()} }, "not finite", false},
		{"crossed bounds", func(p *Problem) { p.XLo[0] = 3 }, "bounds", false},
		{"bound length", func(p *Problem) { p.XHi = p.XHi[:1] }, "lengths", false},
	}
	for _, c := range cases {
		p := base()
		if err := p.Validate(); err != nil {
			t.Fatalf("base problem invalid: %v", err)
		}
		c.edit(p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want error containing %q", c.name, err, c.want)
			continue
		}
		if c.conv != errors.Is(err, ErrNotConvex) {
			t.Errorf("%s: errors.Is(err, ErrNotConvex) = %v", c.name, !c.conv)
		}
	}
}

func TestSingleVarRowsBecomeBounds(t *testing.T) {
	p := &Problem{Name: "p", NX: 2, NY: 1, XLo: []float64{0, 0}, XHi: []float64{10, 10},
		Objective: Expr{Idx: []int{0, 1}, Coef: []float64{1, 1}},
		Ineq: []Expr{
			{Idx: []int{0}, Coef: []float64{1}, YIdx: []int{0}, YCoef: []float64{-5}},           // x0 ≤ 5y
			{Idx: []int{0}, Coef: []float64{-1}, YIdx: []int{0}, YCoef: []float64{2}},           // x0 ≥ 2y
			{Idx: []int{0, 1}, Coef: []float64{1, 1}, Const: -3},                                // kept
			{Idx: []int{1, 1}, Coef: []float64{0.5, 0.5}, YIdx: []int{0}, YCoef: []float64{-4}}, // x1 ≤ 4y (repeated index)
		}}
	c := compileNLP(p, false, true)
	if len(c.kept) != 1 || len(c.conv) != 3 {
		t.Fatalf("kept %d rows and converted %d, want 1 and 3", len(c.kept), len(c.conv))
	}
	if !c.setY([]float64{1}) {
		t.Fatal("y=1 inconsistent")
	}
	if c.xl[0] != 2 || c.xu[0] != 5 || c.xu[1] != 4 {
		t.Errorf("bounds x0∈[%g,%g] x1≤%g, want [2,5] and 4", c.xl[0], c.xu[0], c.xu[1])
	}
	if !c.setY([]float64{0}) || c.xl[0] != 0 || c.xu[0] != 0 {
		t.Errorf("y=0: x0 ∈ [%g,%g], want fixed at 0", c.xl[0], c.xu[0])
	}
	// Crossed bounds are reported.
	p.Ineq = append(p.Ineq, Expr{Idx: []int{1}, Coef: []float64{-1}, Const: 7}) // x1 ≥ 7
	c = compileNLP(p, false, true)
	if c.setY([]float64{1}) {
		t.Error("x1 ≤ 4 and x1 ≥ 7 reported consistent")
	}
}
