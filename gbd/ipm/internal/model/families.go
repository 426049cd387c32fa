package model

import (
	"math"
	"math/rand/v2"
)

// The two plant families' subproblems, written from specs/synthesis.md and specs/pumpstation.md
// the way gbd compiles them for fixed binaries y: inequality rows linear in one variable become
// bounds (so a switched-off pump's flows are fixed variables), the subproblem S(y) keeps the
// objective, and the feasibility problem F(y) minimizes one non-negative slack per inequality
// row and two per equality row.

// Synthesis is one parameter set θ of the process-synthesis family.
type Synthesis struct {
	Gamma [5]float64
	U     float64
	Rho   [2]float64
}

// SampleSynthesis draws θ from the paper's ranges.
func SampleSynthesis(rng *rand.Rand) Synthesis {
	u := func(a, b float64) float64 { return a + (b-a)*rng.Float64() }
	var s Synthesis
	for i := range 4 {
		s.Gamma[i] = u(1, 39)
	}
	s.Gamma[4] = u(1, 7)
	s.U = u(6, 14)
	s.Rho = [2]float64{u(0, 2), u(0, 2)}
	return s
}

// Synthesis variables x3, x5, x9, x11, x13, x16.
const (
	sx3 = iota
	sx5
	sx9
	sx11
	sx13
	sx16
)

// S is the subproblem for y (rows E2–E10, E12, E13; E11 is the bound x9 ≤ U·y3/1.25).
func (s Synthesis) S(y [5]float64) *Model {
	ln := func(w float64) Term {
		return Term{W: w, Atom: Log, Idx: []int{sx11, sx13}, Coef: []float64{1, 1}, Shift: 1}
	}
	exp3 := Term{W: 1, Atom: Exp, Idx: []int{sx3}, Coef: []float64{1}}
	exp5 := Term{W: 1, Atom: Exp, Idx: []int{sx5}, Coef: []float64{1 / 1.2}}
	c := 140.0
	for i := range y {
		c += s.Gamma[i] * y[i]
	}
	lin := func(idx []int, coef []float64) Expr { return Expr{Idx: idx, Coef: coef} }
	m := &Model{
		N:  6,
		XL: []float64{0, 0, 0, 0, 0, 0},
		XU: []float64{2, 2, min(2, s.U*y[2]/1.25), Inf, Inf, 3},
		Obj: Expr{Terms: []Term{exp3, exp5, ln(-60)},
			Idx: []int{sx3, sx5, sx9, sx11, sx13, sx16}, Coef: []float64{-10, -15, -15, 15, 5, -20}, Const: c},
		Rows: []Expr{
			{Terms: []Term{ln(-1)}},
			lin([]int{sx3, sx5, sx9, sx11, sx16}, []float64{-1, -1, -2, 1, 2}),
			lin([]int{sx3, sx5, sx9, sx11, sx16}, []float64{-1, -1, -0.75, 1, 2}),
			lin([]int{sx9, sx16}, []float64{1, -1}),
			lin([]int{sx9, sx11, sx16}, []float64{2, -1, -2}),
			lin([]int{sx11, sx13}, []float64{-0.5, 1}),
			lin([]int{sx11, sx13}, []float64{0.2, -1}),
			{Terms: []Term{exp3}},
			{Terms: []Term{exp5}},
			lin([]int{sx11, sx13}, []float64{1, 1}),
			lin([]int{sx9, sx16}, []float64{-2, 2}),
		},
	}
	m.GL = Fill(len(m.Rows), -Inf)
	m.GU = []float64{0, 0, 0, 0, 0, 0, 0, s.Rho[0] + s.U*y[0], s.Rho[1] + s.U*y[1], s.U * y[3], s.U * y[4]}
	return m
}

// F is the feasibility problem for y.
func (s Synthesis) F(y [5]float64) *Model { return Feasibility(s.S(y)) }

// Feasibility turns a model into gbd's F form: a slack t ≥ 0 per inequality row (row − t ≤ GU),
// two per equality row (row − t⁺ + t⁻ = b), objective Σ t. The objective's nonlinear terms are
// kept with weight zero so that the Hessian pattern matches S's, as gbd's does.
func Feasibility(s *Model) *Model {
	f := &Model{N: s.N, XL: append([]float64(nil), s.XL...), XU: append([]float64(nil), s.XU...),
		GL: append([]float64(nil), s.GL...), GU: append([]float64(nil), s.GU...)}
	for _, t := range s.Obj.Terms {
		t.W = 0
		f.Obj.Terms = append(f.Obj.Terms, t)
	}
	for r, row := range s.Rows {
		row.Idx = append([]int(nil), row.Idx...)
		row.Coef = append([]float64(nil), row.Coef...)
		add := func(c float64) {
			row.Idx = append(row.Idx, f.N)
			row.Coef = append(row.Coef, c)
			f.Obj.Idx = append(f.Obj.Idx, f.N)
			f.Obj.Coef = append(f.Obj.Coef, 1)
			f.XL = append(f.XL, 0)
			f.XU = append(f.XU, Inf)
			f.N++
		}
		add(-1)
		if s.GL[r] == s.GU[r] {
			add(1)
		}
		f.Rows = append(f.Rows, row)
	}
	return f
}

// Pump is one pump's data (specs/pumpstation.md).
type Pump struct{ QMin, QMax, E, F, RunCost, StartCost float64 }

// DefaultPumps are the spec's pumps 1–5.
var DefaultPumps = []Pump{
	{20, 60, 0.100, 3.00, 0.20, 1.0},
	{30, 90, 0.090, 3.60, 0.25, 1.5},
	{50, 150, 0.080, 5.25, 0.30, 2.0},
	{25, 75, 0.095, 3.30, 0.22, 1.2},
	{40, 120, 0.085, 4.40, 0.28, 1.8},
}

// PumpStation is one control step of the pump station: configuration and measurement.
type PumpStation struct {
	Pumps         []Pump
	Horizon       int
	Blocks        int
	Level         float64 // measured h[0]
	On            []int   // measured pump states
	Demand, Price []float64
}

// SamplePumpStation draws a measurement for np pumps over n steps in b blocks: a daily demand
// shape with noise, time-of-use prices, a level in [1.5, 4.5] m.
func SamplePumpStation(rng *rand.Rand, np, n, b int) PumpStation {
	ps := PumpStation{Pumps: DefaultPumps[:np], Horizon: n, Blocks: b, Level: 1.5 + 3*rng.Float64(),
		On: make([]int, np), Demand: make([]float64, n), Price: make([]float64, n)}
	phase := rng.Float64() * 2 * math.Pi
	for t := range n {
		ps.Demand[t] = 100 + 50*math.Sin(phase+float64(t)*0.2) + 10*rng.NormFloat64()
		ps.Price[t] = 0.12
		if (t/4)%2 == 1 {
			ps.Price[t] = 0.35
		}
	}
	for p := range np {
		ps.On[p] = rng.IntN(2)
	}
	return ps
}

const (
	psDt, psArea       = 0.25, 50.0
	psLo, psHi, psRef  = 1.0, 5.0, 3.0
	psWTrack, psWFinal = 0.5, 5.0
)

// Index helpers, in gbd's pump-station order: q[p,t], then h[1..N], then s[p,b].
func (ps *PumpStation) Q(p, t int) int { return p*ps.Horizon + t }
func (ps *PumpStation) H(t int) int    { return len(ps.Pumps)*ps.Horizon + t - 1 }
func (ps *PumpStation) St(p, b int) int {
	return len(ps.Pumps)*ps.Horizon + ps.Horizon + p*ps.Blocks + b
}

// NY is the number of binaries y[p,b] (pump-major).
func (ps *PumpStation) NY() int { return len(ps.Pumps) * ps.Blocks }

// S is the subproblem for y: flows bounded by q_min·y ≤ q ≤ q_max·y, levels by [1, 5], starts by
// s ≥ y[p,b] − y[p,b−1] (or − u0), dynamics as equality rows, energy + starts + tracking cost.
func (ps *PumpStation) S(y []float64) *Model {
	np, n, nb := len(ps.Pumps), ps.Horizon, ps.Blocks
	L := n / nb
	nx := np*n + n + np*nb
	m := &Model{N: nx, XL: make([]float64, nx), XU: make([]float64, nx)}
	k := psDt / psArea
	for p, pu := range ps.Pumps {
		for t := range n {
			q, on := ps.Q(p, t), y[p*nb+t/L]
			m.XL[q], m.XU[q] = pu.QMin*on, pu.QMax*on
			w := ps.Price[t] * psDt
			m.Obj.Idx = append(m.Obj.Idx, q)
			m.Obj.Coef = append(m.Obj.Coef, w*pu.E)
			m.Obj.Terms = append(m.Obj.Terms, Term{W: w * pu.F, Atom: Cube, Idx: []int{q}, Coef: []float64{1 / pu.QMax}})
		}
		for b := range nb {
			sv := ps.St(p, b)
			prev := float64(ps.On[p])
			if b > 0 {
				prev = y[p*nb+b-1]
			}
			m.XL[sv], m.XU[sv] = max(0, y[p*nb+b]-prev), 1
			m.Obj.Idx = append(m.Obj.Idx, sv)
			m.Obj.Coef = append(m.Obj.Coef, pu.StartCost)
			m.Obj.Const += pu.RunCost * float64(L) * psDt * y[p*nb+b]
		}
	}
	for t := 1; t <= n; t++ {
		h := ps.H(t)
		m.XL[h], m.XU[h] = psLo, psHi
		m.Obj.Terms = append(m.Obj.Terms, Term{W: psWTrack, Atom: Square, Idx: []int{h}, Coef: []float64{1}, Shift: -psRef})
	}
	m.Obj.Terms = append(m.Obj.Terms, Term{W: psWFinal, Atom: Square, Idx: []int{ps.H(n)}, Coef: []float64{1}, Shift: -psRef})
	for t := range n {
		e := Expr{Idx: []int{ps.H(t + 1)}, Coef: []float64{1}}
		rhs := -k * ps.Demand[t]
		if t == 0 {
			rhs += ps.Level
		} else {
			e.Idx = append(e.Idx, ps.H(t))
			e.Coef = append(e.Coef, -1)
		}
		for p := range np {
			e.Idx = append(e.Idx, ps.Q(p, t))
			e.Coef = append(e.Coef, -k)
		}
		m.Rows = append(m.Rows, e)
		m.GL = append(m.GL, rhs)
		m.GU = append(m.GU, rhs)
	}
	return m
}

// F is the feasibility problem for y.
func (ps *PumpStation) F(y []float64) *Model { return Feasibility(ps.S(y)) }

// Start is the starting point gbd would use with no previous plan: 0 clamped into the box.
func Start(m *Model) []float64 {
	x := make([]float64, m.N)
	for j := range x {
		x[j] = min(max(0, m.XL[j]), m.XU[j])
	}
	return x
}
