package cbc

import (
	"fmt"
	"math"
	"time"

	"gbdmpc/gbd"
)

// Master is gbd's master problem solved as a MILP with CBC (a gbd.Master): columns y (binary)
// then μ_B (continuous), one row per cut and per pure binary constraint. It is rebuilt at every
// solve, which costs far less than the branch-and-bound itself for masters of this size, and lets
// a solve be time-limited and warm-started with a MIP start (Algorithm 2).
//
// It does not implement gbd.Cutoff. Handing CBC the engine's cutoff (UBD − ε, as its "cutoff"
// parameter) did not make recorded pump-station masters faster (CBC finds their optima early;
// proving them is the cost), and on one of them CBC 2.10.8 answered "infeasible" with a cutoff
// above the optimum, which would end a GBD solve on a false certificate (docs/experiments.md, "On CBC masters
// without a deadline").
type Master struct {
	// Options are passed to every CBC solve; TimeLimit and Start are set per solve.
	Options Options

	ny        int
	pure      []gbd.PureRow
	cuts      []gbd.Cut
	nOpt      int
	interrupt func() bool
}

var (
	_ gbd.Master        = (*Master)(nil)
	_ gbd.Interruptible = (*Master)(nil)
)

// SetInterrupt implements gbd.Interruptible: an isolated solve (Options.Isolate) in progress ends
// within milliseconds of interrupt saying so, its worker killed, as MasterNoIncumbent. An inline
// solve cannot be stopped from outside CBC.
func (m *Master) SetInterrupt(interrupt func() bool) { m.interrupt = interrupt }

// Name implements gbd.Master.
func (m *Master) Name() string { return "cbc" }

// Reset implements gbd.Master.
func (m *Master) Reset(ny int, pure []gbd.PureRow, _ *gbd.Admissible) error {
	if ny <= 0 {
		return fmt.Errorf("cbc master: need at least one binary")
	}
	m.ny, m.pure, m.cuts, m.nOpt = ny, pure, m.cuts[:0], 0
	return nil
}

// AddCut implements gbd.Master.
func (m *Master) AddCut(c *gbd.Cut) {
	cc := *c
	cc.Coef = append([]float64(nil), c.Coef...)
	m.cuts = append(m.cuts, cc)
	if c.Kind == gbd.OptimalityCut {
		m.nOpt++
	}
}

// Solve implements gbd.Master.
func (m *Master) Solve(limit time.Duration, start []float64) (gbd.MasterResult, error) {
	ny := m.ny
	ncol := ny + 1 // μ_B last
	p := &Problem{
		NumCols: ncol,
		ColLB:   make([]float64, ncol),
		ColUB:   make([]float64, ncol),
		Obj:     make([]float64, ncol),
		Integer: make([]bool, ncol),
	}
	for i := range ny {
		p.ColUB[i] = 1
		p.Integer[i] = true
	}
	if m.nOpt > 0 {
		// Finite bounds on μ_B that no binary point can reach beyond: max_k min_y φ_k(y) below and
		// max_k max_y φ_k(y) above. They keep the LP relaxation bounded without changing the MILP.
		lo, hi := math.Inf(-1), math.Inf(-1)
		for k := range m.cuts {
			c := &m.cuts[k]
			if c.Kind != gbd.OptimalityCut {
				continue
			}
			cl, ch := c.Const, c.Const
			for _, a := range c.Coef {
				cl += math.Min(0, a)
				ch += math.Max(0, a)
			}
			lo, hi = math.Max(lo, cl), math.Max(hi, ch)
		}
		p.ColLB[ny], p.ColUB[ny], p.Obj[ny] = lo, hi+1, 1
	}
	row := func(idx []int32, val []float64, lo, hi float64) {
		p.RowIdx = append(p.RowIdx, idx...)
		p.RowVal = append(p.RowVal, val...)
		p.RowStart = append(p.RowStart, int32(len(p.RowIdx)))
		p.RowLB = append(p.RowLB, lo)
		p.RowUB = append(p.RowUB, hi)
	}
	p.RowStart = append(p.RowStart, 0)
	var idx []int32
	var val []float64
	for k := range m.cuts {
		c := &m.cuts[k]
		idx, val = idx[:0], val[:0]
		for i, a := range c.Coef {
			if a != 0 {
				idx = append(idx, int32(i))
				val = append(val, a)
			}
		}
		if c.Kind == gbd.OptimalityCut {
			// a·y − μ_B ≤ −c
			idx = append(idx, int32(ny))
			val = append(val, -1)
			row(idx, val, math.Inf(-1), -c.Const)
		} else {
			// a·y ≤ −c, with the shared screen tolerance so both back-ends exclude the same points
			row(idx, val, math.Inf(-1), -c.Const+gbd.FeasTol)
		}
	}
	for _, pr := range m.pure {
		idx, val = idx[:0], val[:0]
		for k, i := range pr.Idx {
			idx = append(idx, int32(i))
			val = append(val, pr.Coef[k])
		}
		row(idx, val, math.Inf(-1), pr.RHS+1e-9)
	}
	opt := m.Options
	// CBC 2.10.8's preprocessing (CglPreProcess) and the cuts it feeds returned a wrong "optimal"
	// on a 36-binary master of strengthened GBD cuts (the hourly microgrid of plant/model,
	// TestMicrogridImplicitStaged): μ_B 75.0746 where an admissible y has 75.0565, which ended
	// the GBD solve on a lower bound above its incumbent. With preprocessing off it answers
	// 75.0565 (and so do the staged master and enumeration). A master's answer is a certificate,
	// so no master runs preprocessing; Options.Params, applied after, can still turn it on.
	opt.Params = append([]Param{{"preprocess", "off"}}, m.Options.Params...)
	opt.TimeLimit = limit
	opt.Interrupt = m.interrupt
	opt.Start = nil
	if start != nil {
		opt.Start = make([]float64, ncol)
		copy(opt.Start, start)
		if m.nOpt > 0 {
			opt.Start[ny] = gbd.MaxOptimality(m.cuts, start)
		}
	}
	res, err := Solve(p, opt)
	if err != nil {
		return gbd.MasterResult{}, fmt.Errorf("cbc master: %w", err)
	}
	out := gbd.MasterResult{Mu: math.Inf(-1), Bound: math.Inf(-1)}
	switch res.Status {
	case Optimal:
		out.Status = gbd.MasterOptimal
	case StoppedWithIncumbent:
		out.Status = gbd.MasterStopped
	case StoppedNoIncumbent:
		out.Status = gbd.MasterNoIncumbent
	case Infeasible:
		return gbd.MasterResult{Status: gbd.MasterInfeasible, Mu: math.Inf(1), Bound: math.Inf(1)}, nil
	default:
		return gbd.MasterResult{}, fmt.Errorf("cbc master: solver ended %s", res.Status)
	}
	if res.Status.HasIncumbent() {
		out.Y = make([]float64, ny)
		for i := range ny {
			if res.X[i] > 0.5 {
				out.Y[i] = 1 // exact 0/1: rounding a tiny negative would give −0
			}
		}
	}
	if m.nOpt > 0 {
		if out.Y != nil {
			// Report μ̄_B exactly at the rounded point rather than CBC's column value.
			out.Mu = gbd.MaxOptimality(m.cuts, out.Y)
		}
		out.Bound = res.BestBound
		if out.Status == gbd.MasterOptimal {
			out.Bound = math.Min(out.Mu, res.BestBound)
		}
	}
	return out, nil
}
