package gbd

import "math"

// Decide turns a policy's proposal into an assignment of Y_pb the way Algorithm 2 reads it. The
// engine and the policy package's Table I metrics both call it, so the decision a table scores is
// the one the engine acts on.
//
//   - Logits: ŷ = Y_pb[argmax], NaN logits skipped (a NaN is no vote for its assignment); ties go
//     to the earliest assignment.
//
//   - Probs (independent IL): each binary is rounded with the thresholds 0.75 / 0.25; one between
//     them leaves ŷ undecided, and a rounded vector outside Y_pb is not a decision either.
//
//   - Assign: ŷ as given, when it is a 0/1 vector in Y_pb (OutcomeError otherwise: a policy that
//     decodes its own outputs must return an admissible assignment).
//
// It returns the index j ≥ 0 with y (len NY, caller's scratch) holding Y_pb[j], or j = −1 and why:
// OutcomeUndecided, or OutcomeError for a proposal of the wrong shape or with only NaN logits. In an
// implicit Y_pb, which has no order, a decided proposal has j = 0.
func Decide(ypb *Admissible, p Proposal, y []float64) (j int, why string) {
	switch {
	case p.Assign != nil:
		// Exactly 0/1: an enumerated set's Contains rounds at 0.5, and ŷ is evaluated as given.
		for _, v := range p.Assign {
			if v != 0 && v != 1 {
				return -1, OutcomeError
			}
		}
		if len(p.Assign) != ypb.NY || !ypb.Contains(p.Assign) {
			return -1, OutcomeError
		}
		copy(y, p.Assign)
		if ypb.Implicit() {
			return 0, OutcomeNone
		}
		return ypb.Index(y), OutcomeNone
	case p.Logits != nil:
		if ypb.Implicit() || len(p.Logits) != ypb.Count() {
			return -1, OutcomeError
		}
		if j = argmax(p.Logits); j < 0 {
			return -1, OutcomeError
		}
		ypb.Float(j, y)
		return j, OutcomeNone
	case p.Probs != nil:
		if len(p.Probs) != ypb.NY {
			return -1, OutcomeError
		}
		for i, pr := range p.Probs {
			switch {
			case pr >= 0.75:
				y[i] = 1
			case pr <= 0.25:
				y[i] = 0
			default:
				return -1, OutcomeUndecided
			}
		}
		if !ypb.Contains(y) {
			return -1, OutcomeUndecided
		}
		if ypb.Implicit() {
			return 0, OutcomeNone
		}
		return ypb.Index(y), OutcomeNone
	}
	return -1, OutcomeError
}

// SatisfiesFeasibilityCuts is Algorithm 2's feasibility screen: φ_f(y) ≤ FeasTol for every
// feasibility cut. The masters exclude assignments by the same tolerance, so the screen passes an
// assignment exactly when the master could return it.
func SatisfiesFeasibilityCuts(cuts []Cut, y []float64) bool {
	for k := range cuts {
		if cuts[k].Kind == FeasibilityCut && cuts[k].Eval(y) > FeasTol {
			return false
		}
	}
	return true
}

// argmax is the index of the largest non-NaN value (the first on ties), −1 when there is none.
func argmax(v []float64) int {
	best := -1
	for j, x := range v {
		if math.IsNaN(x) {
			continue
		}
		if best < 0 || x > v[best] {
			best = j
		}
	}
	return best
}
