package policy

import (
	"fmt"
	"math"
	"slices"

	"gbdmpc/gbd"
)

// Metrics are the paper's Table I measures on a dataset, scored with the engine's own reading of a
// proposal (gbd.Decide) and its feasibility screen (gbd.SatisfiesFeasibilityCuts at gbd.FeasTol).
type Metrics struct {
	// Inference is how the logits were formed (raw or adjusted); empty for the independent agent,
	// which proposes probabilities.
	Inference     Inference `json:"inference,omitempty"`
	Samples       int       `json:"samples"`
	ExactMatch    int       `json:"exact_match"` // decisions equal to the expert's
	ExactMatchPct float64   `json:"exact_match_pct"`
	// AnyOptimal counts decisions that are an optimal solution of the master though perhaps not the
	// expert's label (OptimalSet: screened and within TieTol of the optimum). It differs from
	// ExactMatch only on masters with several optimal solutions, whose label the expert's tie rule
	// picks; Tied counts those samples.
	AnyOptimal    int     `json:"any_optimal"`
	AnyOptimalPct float64 `json:"any_optimal_pct"`
	Tied          int     `json:"tied"`
	WithFeasCuts  int     `json:"with_feasibility_cuts"` // samples with at least one feasibility cut
	Feasible      int     `json:"feasible"`              // of those, decisions that pass the engine's screen
	FeasiblePct   float64 `json:"feasible_pct"`
	// Independent agent only: samples with a binary left undecided by the 0.75/0.25 thresholds, and
	// samples whose rounded vector is not in Y_pb. Both count as misses and as infeasible, since neither
	// gives the master an admissible assignment.
	Undecided  int `json:"undecided,omitempty"`
	OutsideYpb int `json:"outside_ypb,omitempty"`
	// Errors counts proposals the engine would refuse (only NaN logits): misses and infeasible.
	Errors int `json:"errors,omitempty"`
	// MeanRegretPct (structured agent) is how far above the master's optimum the proposal lies by
	// what Algorithm 2 compares, μ_B: the mean of (μ_B(ŷ) − μ_B(y*)) / max(|μ_B(y*)|, 1), in percent,
	// over the samples with an optimality cut whose proposal passed the screen (Regretted of them).
	// Exact match says whether the agent hits the optimum; this says how near it comes when it
	// does not.
	MeanRegretPct float64 `json:"mean_regret_pct,omitempty"`
	Regretted     int     `json:"regretted,omitempty"`
}

func (m Metrics) String() string {
	return fmt.Sprintf("exact match %s, any optimal %.2f%%, feasibility %s",
		Ratio(m.ExactMatch, m.Samples, 2), m.AnyOptimalPct, Ratio(m.Feasible, m.WithFeasCuts, 2))
}

// Ratio formats n of d as "n/d (p%)" with prec decimals, or "n/d (—)" when d is 0: a share of
// nothing (no master with feasibility cuts, say) is not 0 %.
func Ratio(n, d, prec int) string {
	if d == 0 {
		return fmt.Sprintf("%d/%d (—)", n, d)
	}
	return fmt.Sprintf("%d/%d (%.*f%%)", n, d, prec, 100*float64(n)/float64(d))
}

// Evaluate runs the agent through Propose on every sample of ds, exactly as the GBD engine would,
// with the agent's own inference, and scores its decisions.
func Evaluate(a *Agent, ds *Dataset) (Metrics, error) {
	return EvaluateAs(a, ds, a.infer)
}

// EvaluateScreened scores a structured agent that screens k of its best-scored assignments by the
// optimality cuts (gbd.Settings.Candidates): how often that proposal is optimal for the master.
func EvaluateScreened(a *Agent, ds *Dataset, k int) (Metrics, error) {
	if err := a.CheckFits(ds.Family, ds.Ypb); err != nil {
		return Metrics{}, fmt.Errorf("evaluate: %w", err)
	}
	if a.variant != Structured {
		return Metrics{}, fmt.Errorf("evaluate: only a structured agent screens candidates, not %s", a.variant)
	}
	return evaluateStructured(a, ds, Metrics{}, k)
}

// EvaluateAs scores the agent as if it proposed with the given inference, so that Table I can set
// every variant beside the others both ways. A baseline scored Adjusted uses the paper's ω
// (DefaultOmega), since it has none of its own; the independent agent has no logits over Y_pb and
// is always scored on its probabilities.
func EvaluateAs(a *Agent, ds *Dataset, infer Inference) (Metrics, error) {
	if err := a.CheckFits(ds.Family, ds.Ypb); err != nil {
		return Metrics{}, fmt.Errorf("evaluate: %w", err)
	}
	if !infer.valid() {
		return Metrics{}, fmt.Errorf("evaluate: unknown inference %q", infer)
	}
	omega := a.omega
	if omega == 0 {
		omega = DefaultOmega
	}
	var m Metrics
	if !a.variant.perBinary() {
		m.Inference = infer
	}
	if a.variant == Structured {
		return evaluateStructured(a, ds, m, 0)
	}
	y := make([]float64, ds.Ypb.NY)
	opt := make([]bool, ds.Ypb.Count())
	for i := range ds.Samples {
		s := &ds.Samples[i]
		v := &gbd.MasterView{Cuts: s.Cuts, Prev: s.Prev, Ypb: ds.Ypb}
		if err := a.checkView(v); err != nil {
			return Metrics{}, fmt.Errorf("evaluate: sample %d: %w", i, err)
		}
		p, err := a.propose(v, infer, omega)
		if err != nil {
			return Metrics{}, fmt.Errorf("evaluate: sample %d: %w", i, err)
		}
		j, why := gbd.Decide(ds.Ypb, p, y)
		m.Samples++
		switch {
		case why == gbd.OutcomeUndecided && between(p.Probs):
			m.Undecided++
		case why == gbd.OutcomeUndecided:
			m.OutsideYpb++
		case why == gbd.OutcomeError:
			m.Errors++
		case j == s.Label:
			m.ExactMatch++
		}
		if OptimalSet(s.Cuts, ds.Ypb, y, opt) > 1 {
			m.Tied++
		}
		if j >= 0 && opt[j] {
			m.AnyOptimal++
		}
		if hasFeasibilityCut(s.Cuts) {
			m.WithFeasCuts++
			if j >= 0 && gbd.SatisfiesFeasibilityCuts(s.Cuts, ds.Ypb.Float(j, y)) {
				m.Feasible++
			}
		}
	}
	m.percentages()
	return m, nil
}

// evaluateStructured scores the structured agent, whose decisions are assignments (an implicit Y_pb
// has no indices): exact match is the expert's assignment, any optimal an assignment whose largest
// optimality cut is within TieTol of the expert's, feasible one that passes the screen (always, by
// construction, unless the cuts allow nothing). k is MasterView.Candidates.
func evaluateStructured(a *Agent, ds *Dataset, m Metrics, k int) (Metrics, error) {
	exp := make([]float64, ds.Ypb.NY)
	regret := 0.0 // Σ of the relative μ_B regrets, in percent
	for i := range ds.Samples {
		s := &ds.Samples[i]
		v := &gbd.MasterView{Cuts: s.Cuts, Prev: s.Prev, Ypb: ds.Ypb, Candidates: k}
		if err := a.checkView(v); err != nil {
			return Metrics{}, fmt.Errorf("evaluate: sample %d: %w", i, err)
		}
		m.Samples++
		feasCuts := hasFeasibilityCut(s.Cuts)
		if feasCuts {
			m.WithFeasCuts++
		}
		p, err := a.propose(v, Raw, 0)
		if err != nil {
			m.Errors++
			continue
		}
		y := p.Assign
		gbd.Floats(exp, s.bits(ds.Ypb))
		if slices.Equal(y, exp) {
			m.ExactMatch++
		}
		feasible := gbd.SatisfiesFeasibilityCuts(s.Cuts, y)
		muY, muExp := gbd.MaxOptimality(s.Cuts, y), gbd.MaxOptimality(s.Cuts, exp)
		if feasible && muY <= muExp+TieTol {
			m.AnyOptimal++
		}
		if feasible && !math.IsInf(muExp, 0) {
			regret += 100 * (muY - muExp) / math.Max(math.Abs(muExp), 1)
			m.Regretted++
		}
		if feasCuts && feasible {
			m.Feasible++
		}
	}
	if m.Regretted > 0 {
		m.MeanRegretPct = regret / float64(m.Regretted)
	}
	m.percentages()
	return m, nil
}

// percentages fills the *Pct fields from the counts.
func (m *Metrics) percentages() {
	m.ExactMatchPct = pct(m.ExactMatch, m.Samples)
	m.AnyOptimalPct = pct(m.AnyOptimal, m.Samples)
	m.FeasiblePct = pct(m.Feasible, m.WithFeasCuts)
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// between reports whether some probability lies strictly between the rounding thresholds.
func between(probs []float64) bool {
	for _, v := range probs {
		if !(v >= 0.75 || v <= 0.25) {
			return true
		}
	}
	return false
}

func hasFeasibilityCut(cuts []gbd.Cut) bool {
	for i := range cuts {
		if cuts[i].Kind == gbd.FeasibilityCut {
			return true
		}
	}
	return false
}
