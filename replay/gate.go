package replay

import "fmt"

// DefaultAcceptanceTol is how far (absolute, as a fraction) the new policy's acceptance rate may fall
// below the old one's before the gate refuses it.
const DefaultAcceptanceTol = 0.02

// Gate decides whether a retrained policy may replace the running one. The new policy is at least as
// good as the old one on the held-out slice when all of these hold:
//
//  1. exact match: it matches the expert label on at least as many held-out master problems;
//  2. feasibility: on the held-out masters with feasibility cuts, its decision satisfies them on at
//     least as many;
//  3. acceptance: in the shadow re-runs its rate accepted/proposed is at least the old rate minus
//     AcceptanceTol;
//  4. correctness: its re-runs reach classical GBD's outcome on at least as many solves.
//
// Counts are compared rather than percentages because both policies see the same samples and solves.
// Acceptance gets a tolerance because with a time-limited (CBC) master it depends on how far the
// solver got within T_k, which varies from run to run; the other three are deterministic and get none.
// Without an old policy there is nothing to regress from but correctness: the new policy passes
// when its re-runs reach classical GBD's outcome on every solve whose classical re-run does (check
// 4 against classical GBD itself). An empty held-out slice proves nothing, and the gate refuses.
type Gate struct {
	// AcceptanceTol is the acceptance tolerance; 0 means DefaultAcceptanceTol, negative means none.
	AcceptanceTol float64
}

// Check is one comparison of the gate.
type Check struct {
	Name string  `json:"name"`
	Old  float64 `json:"old"`
	New  float64 `json:"new"`
	Pass bool    `json:"pass"`
}

// Verdict is the gate's decision with its reasons.
type Verdict struct {
	Pass   bool    `json:"pass"`
	Rule   string  `json:"rule"`
	Checks []Check `json:"checks,omitempty"`
	Reason string  `json:"reason"`
}

func (g Gate) tol() float64 {
	switch {
	case g.AcceptanceTol == 0:
		return DefaultAcceptanceTol
	case g.AcceptanceTol < 0:
		return 0
	}
	return g.AcceptanceTol
}

// Rule states the gate in one line, for reports.
func (g Gate) Rule() string {
	return fmt.Sprintf("new ≥ old on held-out exact matches, held-out feasible decisions and re-runs matching classical GBD; "+
		"new acceptance ≥ old acceptance − %.3g; without an old policy, re-runs matching classical GBD wherever its own re-runs finish", g.tol())
}

// Judge applies the gate to a shadow report.
func (g Gate) Judge(r *ShadowReport) Verdict {
	v := Verdict{Rule: g.Rule()}
	if r.Masters == 0 && r.Rerun == 0 {
		v.Reason = "the held-out slice is empty: nothing to judge the new policy on"
		return v
	}
	if r.Old == nil {
		c := Check{Name: "match_classical (old: classical GBD's own re-runs)", Old: float64(r.Classical.MatchClassical),
			New: float64(r.New.Rerun.MatchClassical)}
		c.Pass = c.New >= c.Old
		v.Checks, v.Pass = []Check{c}, c.Pass
		if c.Pass {
			v.Reason = "no old policy to compare with; its re-runs reach classical GBD's outcome wherever classical's own do"
		} else {
			v.Reason = fmt.Sprintf("no old policy, and its re-runs reach classical GBD's outcome on %d solves where classical's own re-runs finish %d",
				r.New.Rerun.MatchClassical, r.Classical.MatchClassical)
		}
		return v
	}
	o, n, tol := r.Old, r.New, g.tol()
	v.Checks = []Check{
		{Name: "exact_match", Old: float64(o.Metrics.ExactMatch), New: float64(n.Metrics.ExactMatch)},
		{Name: "feasible", Old: float64(o.Metrics.Feasible), New: float64(n.Metrics.Feasible)},
		{Name: "acceptance", Old: o.Rerun.Acceptance, New: n.Rerun.Acceptance},
		{Name: "match_classical", Old: float64(o.Rerun.MatchClassical), New: float64(n.Rerun.MatchClassical)},
	}
	v.Pass = true
	for i := range v.Checks {
		c := &v.Checks[i]
		slack := 0.0
		if c.Name == "acceptance" {
			slack = tol
		}
		c.Pass = c.New >= c.Old-slack
		if !c.Pass {
			v.Pass = false
			if v.Reason == "" {
				v.Reason = fmt.Sprintf("%s fell from %.4g to %.4g", c.Name, c.Old, c.New)
			}
		}
	}
	if v.Pass {
		v.Reason = "at least as good as the old policy on the held-out slice"
	}
	return v
}
