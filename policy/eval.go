package policy

import (
	"fmt"

	"gbdmpc/gbd"
)

// FeasTol is the tolerance of the feasibility check φ_f(y) ≤ FeasTol used by the metrics. Cut
// coefficients come from NLP multipliers and expert labels from a MILP solver, both of which work to
// about 1e-6 in primal feasibility; a tighter test would count some expert labels themselves as
// infeasible.
const FeasTol = 1e-6

// Metrics are the paper's Table I measures on a dataset.
type Metrics struct {
	Samples       int     `json:"samples"`
	ExactMatch    int     `json:"exact_match"` // decisions equal to the expert's
	ExactMatchPct float64 `json:"exact_match_pct"`
	WithFeasCuts  int     `json:"with_feasibility_cuts"` // samples with at least one feasibility cut
	Feasible      int     `json:"feasible"`              // of those, decisions that satisfy every feasibility cut
	FeasiblePct   float64 `json:"feasible_pct"`
	// Independent agent only: samples with a binary left undecided by the 0.75/0.25 thresholds, and
	// samples whose rounded vector is not in Y_pb. Both count as misses and as infeasible, since neither
	// gives the master an admissible assignment.
	Undecided  int `json:"undecided,omitempty"`
	OutsideYpb int `json:"outside_ypb,omitempty"`
}

func (m Metrics) String() string {
	return fmt.Sprintf("exact match %d/%d (%.2f%%), feasibility %d/%d (%.2f%%)",
		m.ExactMatch, m.Samples, m.ExactMatchPct, m.Feasible, m.WithFeasCuts, m.FeasiblePct)
}

// Evaluate runs the agent through Propose on every sample of ds, exactly as the GBD engine would, and
// scores its decisions: the argmax of the logits, or the rounded probabilities of the independent agent.
func Evaluate(a *Agent, ds *Dataset) (Metrics, error) {
	if err := a.CheckFits(ds.Family, ds.Ypb); err != nil {
		return Metrics{}, fmt.Errorf("evaluate: %w", err)
	}
	var m Metrics
	buf := make([]float64, ds.Ypb.NY)
	for i := range ds.Samples {
		s := &ds.Samples[i]
		p, err := a.Propose(&gbd.MasterView{Cuts: s.Cuts, Prev: s.Prev, Ypb: ds.Ypb})
		if err != nil {
			return Metrics{}, fmt.Errorf("evaluate: sample %d: %w", i, err)
		}
		j, undecided := decide(ds.Ypb, p, buf)
		m.Samples++
		switch {
		case undecided:
			m.Undecided++
		case j < 0:
			m.OutsideYpb++
		case j == s.Label:
			m.ExactMatch++
		}
		if hasFeasibilityCut(s.Cuts) {
			m.WithFeasCuts++
			if j >= 0 && satisfiesFeasibility(s.Cuts, ds.Ypb.At(j)) {
				m.Feasible++
			}
		}
	}
	m.ExactMatchPct = pct(m.ExactMatch, m.Samples)
	m.FeasiblePct = pct(m.Feasible, m.WithFeasCuts)
	return m, nil
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

func hasFeasibilityCut(cuts []gbd.Cut) bool {
	for i := range cuts {
		if cuts[i].Kind == gbd.FeasibilityCut {
			return true
		}
	}
	return false
}

// satisfiesFeasibility reports whether φ_f(y) ≤ FeasTol for every feasibility cut.
func satisfiesFeasibility(cuts []gbd.Cut, y []uint8) bool {
	for i := range cuts {
		c := &cuts[i]
		if c.Kind != gbd.FeasibilityCut {
			continue
		}
		v := c.Const
		for k, a := range c.Coef {
			v += a * float64(y[k])
		}
		if v > FeasTol {
			return false
		}
	}
	return true
}
