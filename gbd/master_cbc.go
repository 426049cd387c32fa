package gbd

import (
	"fmt"
	"math"
	"time"

	"gbdmpc/gbd/cbc"
)

// CBCMaster solves the master problem as a MILP with CBC: columns y (binary) then μ_B (continuous),
// one row per cut and per pure binary constraint. It is rebuilt at every solve, which costs far
// less than the branch-and-bound itself for masters of this size, and lets a solve be time-limited
// and warm-started with a MIP start (Algorithm 2).
type CBCMaster struct {
	// Options are passed to every CBC solve; TimeLimit and Start are set per solve.
	Options cbc.Options

	ny   int
	pure []PureRow
	cuts []Cut
	nOpt int
}

// Name implements Master.
func (m *CBCMaster) Name() string { return "cbc" }

// Reset implements Master.
func (m *CBCMaster) Reset(ny int, pure []PureRow, _ *Admissible) error {
	if ny <= 0 {
		return fmt.Errorf("cbc master: need at least one binary")
	}
	m.ny, m.pure, m.cuts, m.nOpt = ny, pure, m.cuts[:0], 0
	return nil
}

// AddCut implements Master.
func (m *CBCMaster) AddCut(c *Cut) {
	cc := *c
	cc.Coef = append([]float64(nil), c.Coef...)
	m.cuts = append(m.cuts, cc)
	if c.Kind == OptimalityCut {
		m.nOpt++
	}
}

// Solve implements Master.
func (m *CBCMaster) Solve(limit time.Duration, start []float64) (MasterResult, error) {
	ny := m.ny
	ncol := ny + 1 // μ_B last
	p := &cbc.Problem{
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
			if c.Kind != OptimalityCut {
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
		if c.Kind == OptimalityCut {
			// a·y − μ_B ≤ −c
			idx = append(idx, int32(ny))
			val = append(val, -1)
			row(idx, val, math.Inf(-1), -c.Const)
		} else {
			// a·y ≤ −c, with the shared screen tolerance so both back-ends exclude the same points
			row(idx, val, math.Inf(-1), -c.Const+FeasTol)
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
	opt.TimeLimit = limit
	opt.Start = nil
	if start != nil {
		opt.Start = make([]float64, ncol)
		copy(opt.Start, start)
		if m.nOpt > 0 {
			opt.Start[ny] = maxOpt(m.cuts, start)
		}
	}
	res, err := cbc.Solve(p, opt)
	if err != nil {
		return MasterResult{}, fmt.Errorf("cbc master: %w", err)
	}
	out := MasterResult{Mu: math.Inf(-1), Bound: math.Inf(-1)}
	switch res.Status {
	case cbc.Optimal:
		out.Status = MasterOptimal
	case cbc.StoppedWithIncumbent:
		out.Status = MasterStopped
	case cbc.StoppedNoIncumbent:
		out.Status = MasterNoIncumbent
	case cbc.Infeasible:
		return MasterResult{Status: MasterInfeasible, Mu: math.Inf(1), Bound: math.Inf(1)}, nil
	default:
		return MasterResult{}, fmt.Errorf("cbc master: solver ended %s", res.Status)
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
			out.Mu = maxOpt(m.cuts, out.Y)
		}
		out.Bound = res.BestBound
		if out.Status == MasterOptimal {
			out.Bound = math.Min(out.Mu, res.BestBound)
		}
	}
	return out, nil
}
