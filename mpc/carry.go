package mpc

import (
	"time"

	"gbdmpc/gbd"
)

// carry adds the cuts pooled for problems of p's kind, re-evaluated for p, to set.Cuts (after any
// cuts the options already carry). A problem the pool cannot re-evaluate (Validate fails) gets no
// carried cuts; the engine reports the same problem as the solve's error. Under a deadline the
// re-evaluation may take Options.CarryFrac of the time left; the cuts not done by then are dropped.
//
// Each kind has its own pool. The hard and the soft problem share their rows' names and order, but
// not their meaning: the soft level rows and dynamics also hold the violation and unserved-demand
// variables. Re-evaluated for the other kind, multipliers would still give valid cuts (any μ ≥ 0
// and λ do), but poor ones: a hard feasibility cut's level multipliers meet the soft violation
// variables, which absorb them entirely, and a soft cut's multipliers are sized by penalties the
// hard problem does not have. Carrying only between problems of the same kind keeps the pool's
// time for cuts that help.
func (c *Controller) carry(kind ProblemKind, p *gbd.Problem, set *gbd.Settings) gbd.CarryStats {
	pool := c.pools[kind]
	if pool == nil {
		return gbd.CarryStats{}
	}
	o := gbd.CarryOptions{Workers: c.opt.CarryWorkers, Clock: c.opt.Clock, EvictIdle: max(c.opt.CarryEvictIdle, 0)}
	// The engine's own cuts carry the problem's hinges when the master takes them; the carried
	// ones then do too (the master adds the hinges only to cuts that carry them, so a carried cut
	// made with the hinge rows' multipliers at 0 for a master that did not take them would only be
	// weaker). The last solve of this kind says whether it did; before one, a master that can.
	_, taker := c.master.(gbd.HingeTaker)
	if c.hingeKnown[kind] {
		taker = c.hinged[kind]
	}
	if taker && !set.ClassicalCuts && !set.NoHinges {
		o.Hinges, o.HingeStages = true, c.ypb.Stages
	}
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
	borrowed := false
	if pool.Len() == 0 && c.opt.Siblings != nil {
		// Nothing of its own to carry yet: siblings' multipliers, as made for this step.
		if lent := c.opt.Siblings.lend(keyOf(c.fam, kind, p), c.step); lent != nil {
			pool, borrowed = lent, true
			o.EvictIdle = 0
		}
	}
	cuts, st, err := pool.Carry(p, c.step, o)
	if err != nil || len(cuts) == 0 {
		return st
	}
	if borrowed {
		st.Borrowed = len(cuts)
	}
	set.Cuts = append(append([]gbd.Cut(nil), set.Cuts...), cuts...)
	return st
}

// remember pools the multipliers of every cut the solve of a problem of that kind made. A solve
// that failed or ran out of time still made valid cuts.
func (c *Controller) remember(kind ProblemKind, p *gbd.Problem, r *gbd.Result) {
	if r != nil {
		c.hinged[kind], c.hingeKnown[kind] = r.Hinges != nil, true
	}
	if c.pools[kind] != nil && r != nil {
		c.pools[kind].AddResult(c.step, r)
		if c.opt.Siblings != nil {
			c.opt.Siblings.offer(keyOf(c.fam, kind, p), c.pools[kind], c.opt.Clock.Now())
		}
	}
}

// addCarry adds up the carry statistics of the two solves of a step.
func addCarry(a, b gbd.CarryStats) gbd.CarryStats {
	a.Pooled += b.Pooled
	a.Candidates += b.Candidates
	a.Carried += b.Carried
	a.Misaligned += b.Misaligned
	a.NotSeparable += b.NotSeparable
	a.NoMinimum += b.NoMinimum
	a.NonFinite += b.NonFinite
	a.Dominated += b.Dominated
	a.TimedOut += b.TimedOut
	a.Borrowed += b.Borrowed
	return a
}
