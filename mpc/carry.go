package mpc

import (
	"time"

	"gbdmpc/gbd"
)

// carry adds the pooled cuts, re-evaluated for p, to set.Cuts (after any cuts the options already
// carry). A problem the pool cannot re-evaluate (Validate fails) gets no carried cuts; the engine
// reports the same problem as the solve's error. Under a deadline the re-evaluation may take
// Options.CarryFrac of the time left; the cuts not done by then are dropped.
func (c *Controller) carry(p *gbd.Problem, set *gbd.Settings) gbd.CarryStats {
	if c.pool == nil {
		return gbd.CarryStats{}
	}
	o := gbd.CarryOptions{Workers: c.opt.CarryWorkers, Clock: c.opt.Clock}
	if !set.Deadline.IsZero() {
		now := c.opt.Clock.Now()
		o.Deadline = now.Add(time.Duration(c.opt.CarryFrac * float64(set.Deadline.Sub(now))))
		if !o.Deadline.After(now) {
			o.Deadline = now // the deadline has passed: nothing is re-evaluated
		}
	}
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
