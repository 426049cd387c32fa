package pumpstation

import (
	"gbdmpc/gbd"
	"gbdmpc/mpc"
)

// Row indices of the transcription (Problem, doc.go "Transcription"). Cut multipliers are indexed
// by them, and ShiftDuals moves them along the horizon.

// QMinRow is the inequality row qmin[p,t]; QMaxRow = QMinRow + 1 is qmax[p,t].
func (c *Config) QMinRow(p, t int) int { return 2 * (p*c.Horizon + t) }

// QMaxRow is the inequality row qmax[p,t].
func (c *Config) QMaxRow(p, t int) int { return c.QMinRow(p, t) + 1 }

// HMinRow is the inequality row hmin[t], t = 1..N; HMaxRow = HMinRow + 1 is hmax[t].
func (c *Config) HMinRow(t int) int { return 2*c.NP()*c.Horizon + 2*(t-1) }

// HMaxRow is the inequality row hmax[t], t = 1..N.
func (c *Config) HMaxRow(t int) int { return c.HMinRow(t) + 1 }

// StartRow is the inequality row start[p,b] (0-based b).
func (c *Config) StartRow(p, b int) int { return 2*c.NP()*c.Horizon + 2*c.Horizon + p*c.Blocks + b }

// NIneq is the number of inequality rows.
func (c *Config) NIneq() int { return 2*c.NP()*c.Horizon + 2*c.Horizon + c.NP()*c.Blocks }

// DynRow is the equality row dyn[t], t = 0..N−1.
func (c *Config) DynRow(t int) int { return t }

var _ mpc.DualShifter = (*Family)(nil)

// ShiftDuals implements mpc.DualShifter by the times the rows describe (RowTimes), the shifting
// every model plant's rows use as well (mpc.RowTimes.ShiftDuals): time-aligned, dyn[t], qmin[p,t]
// and qmax[p,t] take the old rows of step min(t+k, N−1), hmin[t] and hmax[t] those of level
// min(t+k, N), start[p,b] that of block min(⌊(b·L+k)/L⌋, B−1); and, for k > 0, as stored.
func (f *Family) ShiftDuals(d gbd.CutDuals, k int) []gbd.CutDuals { return f.rows.ShiftDuals(d, k) }

// RowTimes is what each row of the transcription describes, in row order: its rule and its step
// (a level row hmin[t] or hmax[t], t = 1..N, at step t−1, the step it ends) or its move block.
func (c *Config) RowTimes() *mpc.RowTimes {
	np, n := c.NP(), c.Horizon
	ineq := make([]mpc.RowTime, c.NIneq())
	for p := range np {
		for t := range n {
			ineq[c.QMinRow(p, t)] = mpc.RowTime{Group: 2 * p, T: t}
			ineq[c.QMaxRow(p, t)] = mpc.RowTime{Group: 2*p + 1, T: t}
		}
	}
	for t := 1; t <= n; t++ {
		ineq[c.HMinRow(t)] = mpc.RowTime{Group: 2 * np, T: t - 1}
		ineq[c.HMaxRow(t)] = mpc.RowTime{Group: 2*np + 1, T: t - 1}
	}
	for p := range np {
		for b := range c.Blocks {
			ineq[c.StartRow(p, b)] = mpc.RowTime{Group: 2*np + 2 + p, T: b, Block: true}
		}
	}
	eq := make([]mpc.RowTime, n)
	for t := range n {
		eq[c.DynRow(t)] = mpc.RowTime{T: t}
	}
	return mpc.NewRowTimes(mpc.Blocking{Steps: n, Blocks: c.Blocks}, ineq, eq)
}
