package mpc

import "gbdmpc/gbd"

// carry adds the pooled cuts, re-evaluated for p, to set.Cuts (after any cuts the options already
// carry). A problem the pool cannot re-evaluate (Validate fails) gets no carried cuts; the engine
// reports the same problem as the solve's error.
func (c *Controller) carry(p *gbd.Problem, set *gbd.Settings) gbd.CarryStats {
	if c.pool == nil {
		return gbd.CarryStats{}
	}
	o := gbd.CarryOptions{Workers: c.opt.CarryWorkers}
	if s, ok := c.fam.(DualShifter); ok {
		o.Align = s.ShiftDuals
	}
	cuts, st, err := c.pool.Carry(p, c.step, o)
	if err != nil || len(cuts) == 0 {
		return st
	}
	set.Cuts = append(append([]gbd.Cut(nil), set.Cuts...), cuts...)
	return st
}

// remember pools the multipliers of every cut the solve made. A solve that failed or ran out of
// time still made valid cuts.
func (c *Controller) remember(r *gbd.Result) {
	if c.pool != nil && r != nil {
		c.pool.AddResult(c.step, r)
	}
}
