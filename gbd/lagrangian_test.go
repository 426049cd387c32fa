package gbd

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// randomSeparable builds a convex problem whose nonlinear terms each have one variable (a repeated
// index included), with every atom kind, linear multi-variable rows and equalities, and y in every
// row. Variables whose terms need a non-negative argument get finite boxes with the argument
// reaching 0 at one end in some draws; the others get an infinite side in some draws.
func randomSeparable(rng *rand.Rand, nx, ny int) *Problem {
	p := &Problem{Name: "separable", NX: nx, NY: ny, XLo: make([]float64, nx), XHi: make([]float64, nx)}
	for i := range nx {
		p.XLo[i] = -1 + 2*rng.Float64()
		p.XHi[i] = p.XLo[i] + 0.5 + 3*rng.Float64()
	}
	atoms := []Atom{AtomExp, AtomLog, AtomSquare, AtomCube, AtomPower}
	term := func() Term {
		j := rng.IntN(nx)
		t := Term{Atom: atoms[rng.IntN(len(atoms))], Weight: 0.2 + rng.Float64(), Idx: []int{j}, Coef: []float64{0.3 + rng.Float64()}}
		if rng.IntN(3) == 0 { // the same variable twice: coefficients add up
			t.Idx = append(t.Idx, j)
			t.Coef = append(t.Coef, 0.2)
		}
		a := 0.0
		for _, c := range t.Coef {
			a += c
		}
		switch t.Atom {
		case AtomExp, AtomSquare:
			t.Shift = rng.NormFloat64()
		default:
			t.Shift = -a * p.XLo[j] // argument 0 at the lower end ...
			if rng.IntN(2) == 0 {
				t.Shift += 0.1 + rng.Float64() // ... or positive there
			}
			if lo, _ := p.argRange(&t); lo < 0 {
				t.Shift += -lo + 1e-15 // rounding of a·lo
			}
			if t.Atom == AtomLog {
				t.Weight = -t.Weight
				t.Shift += 0.01 // −log(0) is +Inf: keep L_min finite
			}
			if t.Atom == AtomPower {
				t.P = 1 + 2*rng.Float64()
			}
		}
		return t
	}
	expr := func(nt int) Expr {
		e := Expr{Const: rng.NormFloat64()}
		for range nt {
			e.Terms = append(e.Terms, term())
		}
		for range 1 + rng.IntN(3) {
			e.Idx = append(e.Idx, rng.IntN(nx))
			e.Coef = append(e.Coef, rng.NormFloat64())
		}
		for range 1 + rng.IntN(2) {
			e.YIdx = append(e.YIdx, rng.IntN(ny))
			e.YCoef = append(e.YCoef, rng.NormFloat64())
		}
		return e
	}
	p.Objective = expr(2 * nx)
	for range 4 {
		p.Ineq = append(p.Ineq, expr(1+rng.IntN(2)))
	}
	for range 2 {
		p.Eq = append(p.Eq, expr(0))
	}
	// A variable that only exp and square terms touch may have an infinite side; the objective and
	// the first inequality (whose μ randomDuals keeps positive) get a square on it so that the
	// Lagrangian keeps a minimum.
	used := make([]bool, nx)
	for _, e := range append([]Expr{p.Objective}, p.Ineq...) {
		for _, t := range e.Terms {
			if t.Atom != AtomExp && t.Atom != AtomSquare {
				used[t.Idx[0]] = true
			}
		}
	}
	for j := range nx {
		if !used[j] && rng.IntN(2) == 0 {
			p.XHi[j] = math.Inf(1)
			sq := Term{Atom: AtomSquare, Weight: 1, Idx: []int{j}, Coef: []float64{1}}
			p.Objective.Terms = append(p.Objective.Terms, sq)
			p.Ineq[0].Terms = append(p.Ineq[0].Terms, sq)
		}
	}
	return p
}

func randomDuals(rng *rand.Rand, p *Problem) CutDuals {
	d := CutDuals{Mu: make([]float64, len(p.Ineq)), Lam: make([]float64, len(p.Eq))}
	for i := range d.Mu {
		if i == 0 || rng.IntN(4) > 0 {
			d.Mu[i] = 0.1 + 2*rng.Float64()
		}
	}
	for j := range d.Lam {
		d.Lam[j] = rng.NormFloat64()
	}
	return d
}

// lagrangianX is the y-free part of the Lagrangian at x (objective included for optimality cuts).
func lagrangianX(p *Problem, kind CutKind, d CutDuals, x []float64) float64 {
	v := 0.0
	if kind == OptimalityCut {
		v, _ = p.Objective.EvalX(x)
	}
	for i := range p.Ineq {
		if d.Mu[i] > 0 {
			g, _ := p.Ineq[i].EvalX(x)
			v += d.Mu[i] * g
		}
	}
	for j := range p.Eq {
		h, _ := p.Eq[j].EvalX(x)
		v += d.Lam[j] * h
	}
	return v
}

// bruteLagrangianMin minimizes the separable Lagrangian one coordinate at a time by a grid scan and
// golden-section search on values; for a separable function one sweep reaches the minimum.
func bruteLagrangianMin(p *Problem, kind CutKind, d CutDuals) float64 {
	x := make([]float64, p.NX)
	for j := range x {
		// Inside the box: Expr.EvalX is undefined where a power with p < 2 reaches 0.
		x[j] = p.XLo[j] + 0.5*(math.Min(p.XHi[j], p.XLo[j]+2)-p.XLo[j])
	}
	for j := range p.NX {
		lo, hi := p.XLo[j], math.Min(p.XHi[j], 1e3)
		xb, _ := goldenMin(func(t float64) float64 {
			x[j] = t
			return lagrangianX(p, kind, d, x)
		}, lo, hi, 400, 200)
		x[j] = xb
	}
	return lagrangianX(p, kind, d, x)
}

// TestLagrangianCutExact: on random separable problems with random multipliers the cut's constant
// is the Lagrangian's minimum over X (brute force, 1e-9 relative), never above any value of the
// Lagrangian in X, and its coefficients are c + Aᵀμ + Bᵀλ.
func TestLagrangianCutExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 60 {
		p := randomSeparable(rng, 4, 3)
		if err := p.Validate(); err != nil {
			t.Fatalf("trial %d: generator made an invalid problem: %v", trial, err)
		}
		lag, err := NewLagrangian(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []CutKind{OptimalityCut, FeasibilityCut} {
			d := randomDuals(rng, p)
			cut, err := lag.Cut(kind, d)
			if err != nil {
				t.Fatalf("trial %d %v: %v", trial, kind, err)
			}
			if !cut.Carried || cut.Iter != -1 || cut.Kind != kind {
				t.Errorf("trial %d: cut not marked carried: %+v", trial, cut)
			}
			want := bruteLagrangianMin(p, kind, d)
			if cut.Const > want+1e-12*math.Max(1, math.Abs(want)) {
				t.Errorf("trial %d %v: constant %.15g above the Lagrangian's value %.15g at a point of X", trial, kind, cut.Const, want)
			}
			if cut.Const < want-1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("trial %d %v: constant %.15g, brute-force minimum %.15g", trial, kind, cut.Const, want)
			}
			x := make([]float64, p.NX)
			for range 50 {
				for j := range x {
					hi := math.Min(p.XHi[j], p.XLo[j]+10)
					x[j] = p.XLo[j] + (hi-p.XLo[j])*rng.Float64()
				}
				if v := lagrangianX(p, kind, d, x); cut.Const > v {
					t.Errorf("trial %d %v: constant %g above the Lagrangian %g at %v", trial, kind, cut.Const, v, x)
				}
			}
			for i := range p.NY {
				e := make([]float64, p.NY)
				e[i] = 1
				want := 0.0
				if kind == OptimalityCut {
					want = p.Objective.YPart(e)
				}
				for r := range p.Ineq {
					want += d.Mu[r] * p.Ineq[r].YPart(e)
				}
				for r := range p.Eq {
					want += d.Lam[r] * p.Eq[r].YPart(e)
				}
				if math.Abs(cut.Coef[i]-want) > 1e-12*math.Max(1, math.Abs(want)) {
					t.Errorf("trial %d %v: coefficient %d is %g, want %g", trial, kind, i, cut.Coef[i], want)
				}
			}
		}
	}
}

// TestLagrangianCutDrops: multipliers that cannot give a usable cut are reported, not carried.
func TestLagrangianCutDrops(t *testing.T) {
	base := func() *Problem {
		return &Problem{Name: "drops", NX: 2, NY: 1, XLo: []float64{0, 0}, XHi: []float64{1, 1},
			Objective: Expr{Terms: []Term{{Atom: AtomSquare, Weight: 1, Idx: []int{0}, Coef: []float64{1}}}, YIdx: []int{0}, YCoef: []float64{1}},
			Ineq: []Expr{
				{Terms: []Term{{Atom: AtomSquare, Weight: 1, Idx: []int{0, 1}, Coef: []float64{1, 1}}}, Const: -1},
				{Idx: []int{1}, Coef: []float64{1}, YIdx: []int{0}, YCoef: []float64{-1}},
			},
			Eq: []Expr{{Idx: []int{0, 1}, Coef: []float64{1, -1}}},
		}
	}
	p := base()
	lag, err := NewLagrangian(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lag.Cut(OptimalityCut, CutDuals{Mu: []float64{1, 0}, Lam: []float64{0}}); !errors.Is(err, ErrNotSeparable) {
		t.Errorf("coupling term with μ > 0: got %v, want ErrNotSeparable", err)
	}
	// The coupling row does not matter when its multiplier is zero (or negative, taken as zero).
	if _, err := lag.Cut(OptimalityCut, CutDuals{Mu: []float64{-1, 2}, Lam: []float64{3}}); err != nil {
		t.Errorf("coupling term with μ ≤ 0: %v", err)
	}
	if _, err := lag.Cut(OptimalityCut, CutDuals{Mu: []float64{0}, Lam: []float64{0}}); !errors.Is(err, ErrDualsMismatch) {
		t.Errorf("short μ: got %v, want ErrDualsMismatch", err)
	}
	if _, err := lag.Cut(FeasibilityCut, CutDuals{Mu: []float64{0, math.NaN()}, Lam: []float64{0}}); !errors.Is(err, ErrNonFinite) {
		t.Errorf("NaN μ: got %v, want ErrNonFinite", err)
	}
	p = base()
	p.XHi[1] = math.Inf(1)
	lag, err = NewLagrangian(p)
	if err != nil {
		t.Fatal(err)
	}
	// λ·(x0 − x1) with λ > 0 decreases without bound as x1 → ∞.
	if _, err := lag.Cut(FeasibilityCut, CutDuals{Mu: []float64{0, 0}, Lam: []float64{1}}); !errors.Is(err, ErrNoMinimum) {
		t.Errorf("unbounded Lagrangian: got %v, want ErrNoMinimum", err)
	}
	// ... while the row's own multiplier can make it bounded again: μ·x1 − λ·x1 with μ = λ.
	if _, err := lag.Cut(FeasibilityCut, CutDuals{Mu: []float64{0, 1}, Lam: []float64{1}}); err != nil {
		t.Errorf("bounded Lagrangian: %v", err)
	}
	bad := base()
	bad.Ineq[0].Terms[0].Weight = -1
	if _, err := NewLagrangian(bad); !errors.Is(err, ErrNotConvex) {
		t.Errorf("non-convex problem: got %v, want ErrNotConvex", err)
	}
}
