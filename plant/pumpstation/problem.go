package pumpstation

import (
	"fmt"
	"sort"

	"gbdmpc/gbd"
)

// Problem transcribes the receding-horizon MINLP of specs/pumpstation.md for one validated instance
// (see doc.go for the formulation and the row order). Every row is written as expr ≤ 0 or expr = 0.
func Problem(c *Config, in *Instance) *gbd.Problem {
	np, n, nb, L := c.NP(), c.Horizon, c.Blocks, c.BlockLen()
	p := &gbd.Problem{
		Name:   Name,
		NX:     c.NX(),
		XLo:    make([]float64, c.NX()),
		XHi:    make([]float64, c.NX()),
		XNames: make([]string, c.NX()),
		NY:     c.NY(),
		YNames: make([]string, c.NY()),
	}
	// The box is the physical one; the operating limits are rows (see doc.go, "Level limits").
	for pp, pump := range c.Pumps {
		for t := range n {
			i := c.QIndex(pp, t)
			p.XHi[i] = pump.QMax
			p.XNames[i] = fmt.Sprintf("q[%d,%d]", pp+1, t)
		}
		for b := range nb {
			i := c.SIndex(pp, b)
			p.XHi[i] = 1
			p.XNames[i] = fmt.Sprintf("s[%d,%d]", pp+1, b+1)
			p.YNames[c.YIndex(pp, b)] = fmt.Sprintf("y[%d,%d]", pp+1, b+1)
		}
	}
	for t := 1; t <= n; t++ {
		i := c.HIndex(t)
		p.XLo[i], p.XHi[i] = c.PhysMin, c.PhysMax
		p.XNames[i] = fmt.Sprintf("h[%d]", t)
	}

	p.Objective = objective(c, in)

	// Dynamics h[t+1] − h[t] − (Δt/A)·Σ_p q[p,t] + (Δt/A)·d[t] = 0, with h[0] the measured level.
	k := c.Dt / c.Area
	for t := range n {
		e := gbd.Expr{Name: fmt.Sprintf("dyn[%d]", t), Const: k * in.Demand[t]}
		e.Idx = append(e.Idx, c.HIndex(t+1))
		e.Coef = append(e.Coef, 1)
		if t == 0 {
			e.Const -= in.Level
		} else {
			e.Idx = append(e.Idx, c.HIndex(t))
			e.Coef = append(e.Coef, -1)
		}
		for pp := range np {
			e.Idx = append(e.Idx, c.QIndex(pp, t))
			e.Coef = append(e.Coef, -k)
		}
		p.Eq = append(p.Eq, e)
	}

	// Semi-continuous flows, one variable per row so that for fixed y the engine turns them into
	// bounds and a switched-off pump's flows leave the NLP.
	for pp, pump := range c.Pumps {
		for t := range n {
			q, y := c.QIndex(pp, t), c.YIndex(pp, t/L)
			p.Ineq = append(p.Ineq,
				gbd.Expr{Name: fmt.Sprintf("qmin[%d,%d]", pp+1, t), Idx: []int{q}, Coef: []float64{-1},
					YIdx: []int{y}, YCoef: []float64{pump.QMin}},
				gbd.Expr{Name: fmt.Sprintf("qmax[%d,%d]", pp+1, t), Idx: []int{q}, Coef: []float64{1},
					YIdx: []int{y}, YCoef: []float64{-pump.QMax}},
			)
		}
	}
	// Hard level limits 1 ≤ h[t] ≤ 5, applied from when they can be met (see doc.go, "Recovery").
	lo, hi := levelBand(c, in)
	for t := 1; t <= n; t++ {
		h := c.HIndex(t)
		p.XLo[h] = min(p.XLo[h], lo[t-1]-recoveryMargin)
		p.XHi[h] = max(p.XHi[h], hi[t-1]+recoveryMargin)
		p.Ineq = append(p.Ineq,
			gbd.Expr{Name: fmt.Sprintf("hmin[%d]", t), Idx: []int{h}, Coef: []float64{-1}, Const: lo[t-1]},
			gbd.Expr{Name: fmt.Sprintf("hmax[%d]", t), Idx: []int{h}, Coef: []float64{1}, Const: -hi[t-1]},
		)
	}
	// Starts: y[p,1] − u0[p] − s[p,1] ≤ 0 and y[p,b] − y[p,b−1] − s[p,b] ≤ 0.
	for pp := range np {
		for b := range nb {
			e := gbd.Expr{Name: fmt.Sprintf("start[%d,%d]", pp+1, b+1),
				Idx: []int{c.SIndex(pp, b)}, Coef: []float64{-1}}
			if b == 0 {
				e.YIdx, e.YCoef = []int{c.YIndex(pp, 0)}, []float64{1}
				e.Const = -float64(in.PumpsOn[pp])
			} else {
				e.YIdx, e.YCoef = []int{c.YIndex(pp, b), c.YIndex(pp, b-1)}, []float64{1, -1}
			}
			p.Ineq = append(p.Ineq, e)
		}
	}
	p.Pure = PureRows(c)
	return p
}

// objective is energy + running + starts + tracking + terminal, in €.
func objective(c *Config, in *Instance) gbd.Expr {
	n, L := c.Horizon, c.BlockLen()
	e := gbd.Expr{Name: "cost"}
	for pp, pump := range c.Pumps {
		for t := range n {
			w := in.Price[t] * c.Dt // €/kWh·h: turns kW into € over the step
			q := c.QIndex(pp, t)
			e.Idx = append(e.Idx, q)
			e.Coef = append(e.Coef, w*pump.E)
			// f_p·(q/q_max)³: the argument lies in [0, 1] over the box, where the cube is convex.
			e.Terms = append(e.Terms, gbd.Term{Weight: w * pump.F, Atom: gbd.AtomCube,
				Idx: []int{q}, Coef: []float64{1 / pump.QMax}})
		}
		for b := range c.Blocks {
			e.YIdx = append(e.YIdx, c.YIndex(pp, b))
			e.YCoef = append(e.YCoef, pump.RunCost*float64(L)*c.Dt)
			e.Idx = append(e.Idx, c.SIndex(pp, b))
			e.Coef = append(e.Coef, pump.StartCost)
		}
	}
	for t := 1; t <= n; t++ {
		e.Terms = append(e.Terms, gbd.Term{Weight: c.WTrack, Atom: gbd.AtomSquare,
			Idx: []int{c.HIndex(t)}, Coef: []float64{1}, Shift: -c.LevelRef})
	}
	e.Terms = append(e.Terms, gbd.Term{Weight: c.WTerminal, Atom: gbd.AtomSquare,
		Idx: []int{c.HIndex(n)}, Coef: []float64{1}, Shift: -c.LevelRef})
	return e
}

// PureRows are the rows of K y ≤ b: at most MaxOn pumps per block, and the minimum up-time rule
// y[p,b] − y[p,b−1] − y[p,b+1] ≤ 0 for the blocks b = 2..B−1 (1-based) that have a successor. They
// depend on no measurement, so Y_pb is the same at every control step.
func PureRows(c *Config) []gbd.PureRow {
	var rows []gbd.PureRow
	for b := range c.Blocks {
		r := gbd.PureRow{RHS: float64(c.MaxOn)}
		for pp := range c.NP() {
			r.Idx = append(r.Idx, c.YIndex(pp, b))
			r.Coef = append(r.Coef, 1)
		}
		rows = append(rows, r)
	}
	for pp := range c.NP() {
		for b := 1; b+1 < c.Blocks; b++ {
			rows = append(rows, gbd.PureRow{
				Idx:  []int{c.YIndex(pp, b), c.YIndex(pp, b-1), c.YIndex(pp, b+1)},
				Coef: []float64{1, -1, -1},
			})
		}
	}
	return rows
}

// Admissible enumerates Y_pb for the configuration (889 assignments for the spec's numbers).
func Admissible(c *Config) (*gbd.Admissible, error) {
	return gbd.EnumerateAdmissible(c.NY(), PureRows(c), 0)
}

// recoveryMargin keeps a recovery band's edge strictly inside what the pumps can reach.
const recoveryMargin = 1e-6

// levelBand returns the level limits of steps 1..N. They are the operating limits wherever the
// plant can meet them. When the measured level is outside them (after a fault, a fallback or a
// manual intervention), the limit of step t is relaxed to the best level reachable by then: with
// the MaxOn largest pumps at full flow when the tank is low, with every pump off when it is high.
// Without this the MINLP would be infeasible at every step until the level came back by itself,
// and the controller would be stuck on fallbacks exactly when it is needed. Running those pumps at
// full flow in every block is admissible (it satisfies every pure binary row), so the band is
// always reachable.
func levelBand(c *Config, in *Instance) (lo, hi []float64) {
	n := c.Horizon
	k := c.Dt / c.Area
	caps := make([]float64, 0, len(c.Pumps))
	for _, pump := range c.Pumps {
		caps = append(caps, pump.QMax)
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(caps)))
	qcap := 0.0
	for i := 0; i < min(c.MaxOn, len(caps)); i++ {
		qcap += caps[i]
	}
	lo, hi = make([]float64, n), make([]float64, n)
	up, down := in.Level, in.Level
	for t := range n {
		up += k * (qcap - in.Demand[t])
		down -= k * in.Demand[t]
		lo[t] = min(c.LevelMin, up-recoveryMargin)
		hi[t] = max(c.LevelMax, down+recoveryMargin)
	}
	return lo, hi
}
