package pumpstation

import (
	"fmt"
	"math"
	"slices"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
)

// The soft-constrained problem (doc.go, "When the limits cannot be held"). Its variables are the
// hard problem's, in the same places, followed by the penalties of the limits' violations and of
// the unserved demand, each in € so that its objective coefficient is 1:
//
//	w⁻[t] = ρ·v⁻[t]        t = 1..N    v⁻ the violation of the lower limit, m; box [0, ρ·(LevelMin − PhysMin)]
//	w⁺[t] = ρ·v⁺[t]        t = 1..N    v⁺ the violation of the upper limit, m; box [0, ρ·(PhysMax − LevelMax)]
//	w_u[t] = σ_t·(Δt/A)·u[t]  t = 0..N−1  u the demand left unserved in step t, m³/h; box [0, σ_t·(Δt/A)·d[t]]
//
// Priced in metres, a variable resting on its lower bound would be worth ρ times the NLP's bound
// tolerance (Ipopt relaxes bounds by 1e-8, about 1e-3 € at ρ ≈ 1e5 for each of them), enough to put
// the soft optimum of a servable instance measurably below the hard one; priced in €, the same
// tolerance is worth 1e-8 €.

// SoftTol is the total level-limit violation (metres summed over the steps) below which the soft
// problem may prefer a plan to every plan within the limits: the level penalty is sized so that a
// violation of SoftTol costs more than any plan within the limits (Penalties).
const SoftTol = 1e-3

// levelTol is the violation (m) and unservedTol the unserved volume (m³ per m² of tank, i.e. metres
// of level) below which a soft solution counts as holding the limits: the NLPs meet their rows to
// about 1e-8, so anything under these is solver tolerance, not a plan that breaks a limit.
const (
	levelTol    = 1e-6
	unservedTol = 1e-6
)

// SoftNX is the number of continuous variables of the soft problem: NX plus v⁻, v⁺ and u.
func (c *Config) SoftNX() int { return c.NX() + 3*c.Horizon }

// BelowIndex is the position of w⁻[t], t = 1..N, in the soft problem's x.
func (c *Config) BelowIndex(t int) int { return c.NX() + t - 1 }

// AboveIndex is the position of w⁺[t], t = 1..N, in the soft problem's x.
func (c *Config) AboveIndex(t int) int { return c.NX() + c.Horizon + t - 1 }

// UIndex is the position of w_u[t], t = 0..N−1, in the soft problem's x.
func (c *Config) UIndex(t int) int { return c.NX() + 2*c.Horizon + t }

// Penalties are the soft problem's prices for breaking the limits, derived from the instance
// (doc.go, "Penalty bound").
type Penalties struct {
	// Bound (€) exceeds the cost of every plan within the hard limits.
	Bound float64
	// Level (€ per metre of violation per step) is ρ = (Bound + 1 €)/SoftTol.
	Level float64
	// Unserved[t] (€ per metre of level left unserved in step t, t = 0..N−1) is
	// σ_t = 2·Σ_{j=t+1..N} (ρ + g_j), g_j the largest |∂cost/∂h[j]| over the tank's range.
	Unserved []float64
}

// unservedScale is σ_t·Δt/A: € of w_u[t] per m³/h of demand left unserved in step t.
func (pen *Penalties) unservedScale(c *Config, t int) float64 { return pen.Unserved[t] * c.Dt / c.Area }

// SoftPenalties computes the penalties of the soft problem for an instance.
func SoftPenalties(c *Config, in *Instance) Penalties {
	n := c.Horizon
	bound := 0.0
	for t := range n {
		for _, pump := range c.Pumps {
			bound += in.Price[t] * c.Dt * pump.Power(pump.QMax)
		}
	}
	for _, pump := range c.Pumps {
		bound += pump.RunCost*float64(n)*c.Dt + pump.StartCost*float64(c.Blocks)
	}
	dLim := math.Max(c.LevelRef-c.LevelMin, c.LevelMax-c.LevelRef)
	bound += (c.WTrack*float64(n) + c.WTerminal) * dLim * dLim

	rho := (bound + 1) / SoftTol
	dPhys := math.Max(c.LevelRef-c.PhysMin, c.PhysMax-c.LevelRef)
	sigma := make([]float64, n)
	acc := 0.0
	for j := n; j >= 1; j-- {
		g := 2 * c.WTrack * dPhys
		if j == n {
			g += 2 * c.WTerminal * dPhys
		}
		acc += 2 * (rho + g)
		sigma[j-1] = acc
	}
	return Penalties{Bound: bound, Level: rho, Unserved: sigma}
}

// SoftProblem transcribes the soft-constrained version of Problem: the same rows in the same order
// and the same binaries and pure rows (so the same Y_pb), with the level limits' violations and the
// unserved demand as variables priced by SoftPenalties. It is feasible for every instance (all
// pumps off, the tank serving what it holds), and its optimum meets the hard limits whenever some
// plan does, up to SoftTol (doc.go).
func SoftProblem(c *Config, in *Instance) (*gbd.Problem, Penalties) {
	return transcribe(c, in, true), SoftPenalties(c, in)
}

// softBox gives the soft variables their boxes and names.
func softBox(c *Config, in *Instance, pen *Penalties, p *gbd.Problem) {
	for t := 1; t <= c.Horizon; t++ {
		lo, hi := c.BelowIndex(t), c.AboveIndex(t)
		p.XHi[lo], p.XNames[lo] = pen.Level*(c.LevelMin-c.PhysMin), fmt.Sprintf("w-[%d]", t)
		p.XHi[hi], p.XNames[hi] = pen.Level*(c.PhysMax-c.LevelMax), fmt.Sprintf("w+[%d]", t)
	}
	for t := range c.Horizon {
		u := c.UIndex(t)
		p.XHi[u], p.XNames[u] = pen.unservedScale(c, t)*in.Demand[t], fmt.Sprintf("wu[%d]", t)
	}
}

// softObjective adds Σ(w⁻ + w⁺ + w_u), the penalties in €, to the hard problem's cost.
func softObjective(c *Config, e *gbd.Expr) {
	for t := 1; t <= c.Horizon; t++ {
		e.Idx = append(e.Idx, c.BelowIndex(t), c.AboveIndex(t), c.UIndex(t-1))
		e.Coef = append(e.Coef, 1, 1, 1)
	}
}

// Reach is the pre-check of the hard limits: with the total flow of every step anywhere in
// [0, Q] (Q the MaxOn largest pumps at full flow, which bounds every admissible plan), it follows
// the interval of levels reachable within [LevelMin, LevelMax] step by step. An empty interval at
// the end of step t proves that no plan holds the limits (limit says which one cannot be held);
// ok means the test is inconclusive. It ignores minimum flows and move blocks, so it never claims
// more than is true.
func Reach(c *Config, in *Instance) (limit string, step int, ok bool) {
	caps := make([]float64, 0, c.NP())
	for _, pump := range c.Pumps {
		caps = append(caps, pump.QMax)
	}
	slices.Sort(caps)
	slices.Reverse(caps)
	qcap := 0.0
	for _, q := range caps[:min(c.MaxOn, len(caps))] {
		qcap += q
	}
	k := c.Dt / c.Area
	lo, hi := in.Level, in.Level
	for t := range c.Horizon {
		lo -= k * in.Demand[t]
		hi += k * (qcap - in.Demand[t])
		switch {
		case hi < c.LevelMin:
			return "level_min_m", t, false
		case lo > c.LevelMax:
			return "level_max_m", t, false
		}
		lo, hi = math.Max(lo, c.LevelMin), math.Min(hi, c.LevelMax)
	}
	return "", 0, true
}

// relaxation reads a soft solution: the level limits' violations from the planned levels (Plan's,
// within the tank) and the unserved demand from w_u.
func relaxation(c *Config, in *Instance, x []float64) (mpc.Relaxation, bool) {
	r := mpc.Relaxation{Unit: "m", UnservedUnit: "m3", FirstStep: -1, WorstStep: -1}
	worst := 0.0
	for t := 1; t <= c.Horizon; t++ {
		// The planned level, as the plan publishes it: inside the tank, not a solver tolerance off.
		h := math.Min(math.Max(x[c.HIndex(t)], c.PhysMin), c.PhysMax)
		for _, v := range []struct {
			name        string
			bound, viol float64
		}{{"level_min_m", c.LevelMin, c.LevelMin - h}, {"level_max_m", c.LevelMax, h - c.LevelMax}} {
			if v.viol <= levelTol {
				continue
			}
			if r.FirstStep < 0 {
				r.FirstStep = t - 1
			}
			if v.viol > worst+levelTol {
				worst, r.Limit, r.Bound, r.WorstStep = v.viol, v.name, v.bound, t-1
			}
		}
	}
	r.MaxViolation = worst
	firstDry := -1
	if len(x) == c.SoftNX() {
		pen := SoftPenalties(c, in)
		for t := range c.Horizon {
			u := math.Max(0, x[c.UIndex(t)]/pen.unservedScale(c, t))
			r.Unserved += u * c.Dt
			if u*c.Dt/c.Area > unservedTol && firstDry < 0 {
				firstDry = t
			}
		}
	}
	dry := r.Unserved/c.Area > unservedTol
	if !dry {
		r.Unserved = 0
	}
	violated := worst > 0 || dry
	if !violated {
		r.FirstStep, r.WorstStep = 0, 0
		r.Shortfall = "the plan holds the level limits"
		return r, false
	}
	if r.FirstStep < 0 { // unserved demand alone (a level limit at the tank's floor)
		r.FirstStep, r.WorstStep = firstDry, firstDry
	}
	side := map[string]string{"level_min_m": "below", "level_max_m": "above"}[r.Limit]
	r.Shortfall = fmt.Sprintf("level %s %g m by up to %.3f m (plan step %d, first violation at step %d)",
		side, r.Bound, r.MaxViolation, r.WorstStep, r.FirstStep)
	if r.Limit == "" {
		r.Shortfall = "level limits held"
	}
	if dry {
		r.Shortfall += fmt.Sprintf("; %.1f m³ of demand unserved from step %d (tank empty)", r.Unserved, firstDry)
	}
	return r, true
}
