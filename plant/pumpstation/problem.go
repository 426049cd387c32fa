package pumpstation

import (
	"fmt"
	"math/bits"

	"gbdmpc/gbd"
)

// Problem transcribes the receding-horizon MINLP of specs/pumpstation.md for one validated instance
// (see doc.go for the formulation and the row order). Every row is written as expr ≤ 0 or expr = 0.
// Its level limits are the spec's hard 1 ≤ h ≤ 5 from the first step on, whatever the measured
// level: when no plan can hold them, the problem is infeasible and SoftProblem is the one to solve
// (doc.go, "When the limits cannot be held").
func Problem(c *Config, in *Instance) *gbd.Problem { return transcribe(c, in, false) }

// transcribe writes the hard problem, or with soft the soft-constrained one: the same rows in the
// same order, plus the violation and unserved-demand variables after the hard layout (soft.go).
func transcribe(c *Config, in *Instance, soft bool) *gbd.Problem {
	np, n, nb, L := c.NP(), c.Horizon, c.Blocks, c.BlockLen()
	nx := c.NX()
	var pen Penalties
	if soft {
		nx, pen = c.SoftNX(), SoftPenalties(c, in)
	}
	p := &gbd.Problem{
		Name:   Name,
		NX:     nx,
		XLo:    make([]float64, nx),
		XHi:    make([]float64, nx),
		XNames: make([]string, nx),
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
	if soft {
		softBox(c, in, &pen, p)
	}

	p.Objective = objective(c, in)

	// Dynamics h[t+1] − h[t] − (Δt/A)·Σ_p q[p,t] + (Δt/A)·d[t] = 0, with h[0] the measured level
	// (soft: − (Δt/A)·u[t] = − w_u[t]/σ_t, the demand left unserved, on the left as well).
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
		if soft {
			e.Idx = append(e.Idx, c.UIndex(t))
			e.Coef = append(e.Coef, -1/pen.Unserved[t])
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
	// Level limits LevelMin − h[t] ≤ 0 and h[t] − LevelMax ≤ 0 (soft: − v⁻[t] = − w⁻[t]/ρ and
	// − v⁺[t] = − w⁺[t]/ρ, the violations, on the left).
	for t := 1; t <= n; t++ {
		h := c.HIndex(t)
		lo := gbd.Expr{Name: fmt.Sprintf("hmin[%d]", t), Idx: []int{h}, Coef: []float64{-1}, Const: c.LevelMin}
		hi := gbd.Expr{Name: fmt.Sprintf("hmax[%d]", t), Idx: []int{h}, Coef: []float64{1}, Const: -c.LevelMax}
		if soft {
			lo.Idx, lo.Coef = append(lo.Idx, c.BelowIndex(t)), append(lo.Coef, -1/pen.Level)
			hi.Idx, hi.Coef = append(hi.Idx, c.AboveIndex(t)), append(hi.Coef, -1/pen.Level)
		}
		p.Ineq = append(p.Ineq, lo, hi)
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
	if soft {
		softObjective(c, &p.Objective)
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

// Admissible enumerates Y_pb for the configuration (889 assignments for the spec's numbers), or
// returns it implicit when it has more than MaxEnumerate assignments.
func Admissible(c *Config) (*gbd.Admissible, error) {
	a, err := gbd.AdmissibleOrImplicit(c.NY(), PureRows(c), c.MaxEnumerate)
	if err != nil {
		return nil, err
	}
	a.Stages = Stages(c)
	return a, nil
}

// Stages are the move blocks as the stages of Y_pb (gbd/master/staged): block b holds y[p,b] for
// every pump; the at-most-MaxOn rows lie in one block and the minimum up-time rows in three
// consecutive ones.
func Stages(c *Config) [][]int {
	st := make([][]int, c.Blocks)
	for b := range c.Blocks {
		for p := range c.NP() {
			st[b] = append(st[b], c.YIndex(p, b))
		}
	}
	return st
}

// CountAdmissible is |Y_pb| without enumerating it: a dynamic programme over the blocks whose state
// is the last two blocks' sets of running pumps (at most MaxOn of them), which is what the minimum
// up-time rows link. Exact; float64 because large stations exceed any practical enumeration.
func CountAdmissible(c *Config) float64 {
	np, nb := c.NP(), c.Blocks
	var pats []uint
	for m := uint(0); m < 1<<np; m++ {
		if bits.OnesCount(m) <= c.MaxOn {
			pats = append(pats, m)
		}
	}
	// count[i][j]: sequences ending with patterns pats[i] (block b−1) and pats[j] (block b).
	k := len(pats)
	if nb == 1 {
		return float64(k)
	}
	cur := make([]float64, k*k)
	for i := range cur {
		cur[i] = 1
	}
	for b := 2; b < nb; b++ {
		next := make([]float64, k*k)
		for i, prev := range pats {
			for j, mid := range pats {
				n := cur[i*k+j]
				if n == 0 {
					continue
				}
				started := mid &^ prev // switched on in block b−1 (0-based), b−1 ≥ 1
				for l, nxt := range pats {
					if started&^nxt == 0 {
						next[j*k+l] += n
					}
				}
			}
		}
		cur = next
	}
	total := 0.0
	for _, n := range cur {
		total += n
	}
	return total
}
