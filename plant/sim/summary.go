package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
)

// Summary condenses a closed-loop run.
type Summary struct {
	Steps int `json:"steps"`

	CostEUR    float64 `json:"cost_eur"` // energy, running and start costs actually incurred
	EnergyKWh  float64 `json:"energy_kwh"`
	Starts     int     `json:"starts"`
	Violations int     `json:"violations"` // steps that ended outside the operating limits
	Clamped    int     `json:"clamped"`    // steps that overflowed or ran dry
	MinLevel   float64 `json:"min_level_m"`
	MaxLevel   float64 `json:"max_level_m"`
	// LevelRMS is the root-mean-square deviation from the reference level.
	LevelRMS   float64 `json:"level_rms_m"`
	OverflowM3 float64 `json:"overflow_m3"`
	UnservedM3 float64 `json:"unserved_m3"`

	SolveP50 float64 `json:"solve_seconds_p50"`
	SolveP95 float64 `json:"solve_seconds_p95"`
	SolveMax float64 `json:"solve_seconds_max"`
	IterMean float64 `json:"iterations_mean"`
	IterP50  float64 `json:"iterations_p50"`
	IterP95  float64 `json:"iterations_p95"`
	IterMax  int     `json:"iterations_max"`
	// CarriedMean is the mean number of cuts carried into a step's solve from earlier steps.
	CarriedMean float64 `json:"carried_cuts_mean"`
	Optimal     int     `json:"optimal"`
	Gap         int     `json:"gap"`
	Fallbacks   int     `json:"fallbacks"`
	SafeSteps   int     `json:"safe_actions"`
	// Relaxed counts steps whose action was the soft problem's optimum (the level limits could not
	// be held over the horizon); they are counted under their status as well.
	Relaxed int `json:"relaxed"`

	Agent gbd.AgentStats `json:"agent"`
	// AgentAcceptRate is Accepted / Proposed (0 without proposals).
	AgentAcceptRate float64   `json:"agent_accept_rate"`
	Mismatch        []float64 `json:"mismatch"`
}

// Summarize computes the summary of the records of a run on plant s.
func Summarize(recs []StepRecord, s *Simulator, c *pumpstation.Config) Summary {
	sm := Summary{Steps: len(recs), MinLevel: math.Inf(1), MaxLevel: math.Inf(-1), Mismatch: s.Mismatch(),
		OverflowM3: s.Overflow, UnservedM3: s.Unserved}
	var times, its []float64
	iters, carried, sq := 0, 0, 0.0
	for i := range recs {
		r := &recs[i]
		sm.CostEUR += r.CostEUR
		sm.EnergyKWh += r.EnergyKWh
		sm.Starts += r.Starts
		if r.Violation {
			sm.Violations++
		}
		if r.Clamped {
			sm.Clamped++
		}
		sm.MinLevel = math.Min(sm.MinLevel, r.LevelEnd)
		sm.MaxLevel = math.Max(sm.MaxLevel, r.LevelEnd)
		dev := r.LevelEnd - c.LevelRef
		sq += dev * dev
		times = append(times, r.SolveSeconds)
		iters += r.Iterations
		its = append(its, float64(r.Iterations))
		carried += r.Carried
		sm.IterMax = max(sm.IterMax, r.Iterations)
		switch r.Status {
		case mpc.StatusOptimal:
			sm.Optimal++
		case mpc.StatusGap:
			sm.Gap++
		case mpc.StatusFallback:
			sm.Fallbacks++
		}
		if r.Safe {
			sm.SafeSteps++
		}
		if r.Relaxed != nil {
			sm.Relaxed++
		}
		sm.Agent.Add(r.Agent)
	}
	if len(recs) > 0 {
		sm.LevelRMS = math.Sqrt(sq / float64(len(recs)))
		sm.IterMean = float64(iters) / float64(len(recs))
		sm.CarriedMean = float64(carried) / float64(len(recs))
		slices.Sort(its)
		sm.IterP50, sm.IterP95 = quantile(its, 0.5), quantile(its, 0.95)
		slices.Sort(times)
		sm.SolveP50 = quantile(times, 0.5)
		sm.SolveP95 = quantile(times, 0.95)
		sm.SolveMax = times[len(times)-1]
	}
	if sm.Agent.Proposed > 0 {
		sm.AgentAcceptRate = float64(sm.Agent.Accepted) / float64(sm.Agent.Proposed)
	}
	return sm
}

// quantile of sorted values by linear interpolation between order statistics.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}

// WriteJSON writes the summary as one indented JSON document with "v":1.
func (s *Summary) WriteJSON(w io.Writer) error {
	type doc struct {
		V int `json:"v"`
		*Summary
	}
	out := doc{V: 1, Summary: s}
	if math.IsInf(s.MinLevel, 0) { // no steps: keep the document encodable
		c := *s
		c.MinLevel, c.MaxLevel = 0, 0
		out.Summary = &c
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteText writes the summary for a person.
func (s *Summary) WriteText(w io.Writer) error {
	// An MQTT testbed sees actions only, not how many cuts the daemon carried: say nothing then.
	carried := ""
	if s.CarriedMean > 0 {
		carried = fmt.Sprintf(" (carried cuts per step: mean %.1f)", s.CarriedMean)
	}
	_, err := fmt.Fprintf(w, `closed loop: %d steps
cost           %.2f € (energy %.1f kWh, %d pump starts)
level          min %.3f m, max %.3f m, RMS from reference %.3f m
violations     %d steps outside the limits, %d clamped (overflow %.1f m³, unserved %.1f m³)
solve time     p50 %.3f s, p95 %.3f s, max %.3f s
iterations     mean %.1f, p50 %.0f, p95 %.1f, max %d%s
status         %d optimal, %d gap, %d fallback (%d safe action); %d relaxed
agent          %d proposed, %d feasible, %d accepted (%.0f %%), %d replaced by the master
mismatch       %v
`,
		s.Steps, s.CostEUR, s.EnergyKWh, s.Starts, s.MinLevel, s.MaxLevel, s.LevelRMS,
		s.Violations, s.Clamped, s.OverflowM3, s.UnservedM3,
		s.SolveP50, s.SolveP95, s.SolveMax, s.IterMean, s.IterP50, s.IterP95, s.IterMax, carried,
		s.Optimal, s.Gap, s.Fallbacks, s.SafeSteps, s.Relaxed,
		s.Agent.Proposed, s.Agent.Feasible, s.Agent.Accepted, 100*s.AgentAcceptRate, s.Agent.SolverSelected,
		s.Mismatch)
	return err
}
