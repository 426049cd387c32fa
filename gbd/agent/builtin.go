package agent

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/staged"
	"gbdmpc/internal/scratch"
)

// Built-in policies exercise Algorithm 2's guarantee: whatever a policy proposes, agent-based GBD
// must reach the classical optimum. They are real policies, selectable as builtin:NAME.
//
//	oracle      the exact master argmin (what a perfect agent would say): always accepted
//	random      uniform over Y_pb from a seeded generator (an implicit Y_pb: the best admissible
//	            assignment the feasibility cuts allow under seeded random per-binary scores)
//	infeasible  an assignment that violates a feasibility cut whenever one exists: never accepted
//	suboptimal  the worst admissible assignment under the optimality cuts
var builtinNames = []string{"infeasible", "oracle", "random", "suboptimal"}

// BuiltinPrefix marks a built-in policy in a policy spec ("builtin:oracle", …), where a policy
// file's path would otherwise stand.
const BuiltinPrefix = "builtin:"

// BuiltinNames lists the built-in policies.
func BuiltinNames() []string { return append([]string(nil), builtinNames...) }

// NewBuiltin returns the built-in policy NAME (seed is used by random).
func NewBuiltin(name string, seed uint64) (gbd.Policy, error) {
	switch name {
	case "oracle":
		return &scanPolicy{pick: pickOracle, dec: &staged.Decoder{}}, nil
	case "random":
		return &randomPolicy{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), dec: &staged.Decoder{}}, nil
	case "infeasible":
		return &scanPolicy{pick: pickInfeasible}, nil
	case "suboptimal":
		return &scanPolicy{pick: pickWorst}, nil
	}
	return nil, fmt.Errorf("unknown built-in policy %q (have %s)", name, strings.Join(builtinNames, ", "))
}

// scanPolicy evaluates every cut at every assignment of Y_pb and picks one index.
type scanPolicy struct {
	pick   func(opt, viol []float64) int
	dec    *staged.Decoder // an implicit Y_pb (the oracle only): the exact master's optimum
	opt    []float64
	viol   []float64
	logits []float64
	y      []float64
}

func (s *scanPolicy) Propose(v *gbd.MasterView) (gbd.Proposal, error) {
	if v.Ypb.Implicit() {
		if s.dec == nil {
			return gbd.Proposal{}, errImplicitBuiltin
		}
		s.y = scratch.Resize(s.y, v.Ypb.NY)
		if err := s.dec.Optimum(v, s.y); err != nil {
			return gbd.Proposal{}, fmt.Errorf("builtin oracle: %w", err)
		}
		return gbd.Proposal{Assign: s.y}, nil
	}
	n := v.Ypb.Count()
	s.opt, s.viol, s.logits = scratch.Resize(s.opt, n), scratch.Resize(s.viol, n), scratch.Resize(s.logits, n)
	if len(s.y) != v.Ypb.NY {
		s.y = make([]float64, v.Ypb.NY)
	}
	for j := range n {
		v.Ypb.Float(j, s.y)
		s.opt[j] = gbd.MaxOptimality(v.Cuts, s.y)
		s.viol[j] = math.Inf(-1)
		for k := range v.Cuts {
			if v.Cuts[k].Kind == gbd.FeasibilityCut {
				s.viol[j] = math.Max(s.viol[j], v.Cuts[k].Eval(s.y))
			}
		}
	}
	return gbd.Proposal{Logits: oneHot(s.logits, s.pick(s.opt, s.viol))}, nil
}

func oneHot(l []float64, j int) []float64 {
	for i := range l {
		l[i] = 0
	}
	if j >= 0 {
		l[j] = 1
	}
	return l
}

func pickOracle(opt, viol []float64) int {
	best := -1
	for j := range opt {
		if viol[j] <= gbd.FeasTol && (best < 0 || opt[j] < opt[best]) {
			best = j
		}
	}
	return best
}

func pickWorst(opt, viol []float64) int {
	worst := -1
	for j := range opt {
		if viol[j] <= gbd.FeasTol && (worst < 0 || opt[j] >= opt[worst]) {
			worst = j
		}
	}
	return worst
}

func pickInfeasible(opt, viol []float64) int {
	// The most violating assignment, so the screen has something to reject whenever it can.
	j := -1
	for i := range viol {
		if viol[i] > gbd.FeasTol && (j < 0 || viol[i] > viol[j]) {
			j = i
		}
	}
	if j < 0 {
		return pickWorst(opt, viol)
	}
	return j
}

type randomPolicy struct {
	rng    *rand.Rand
	logits []float64
	dec    *staged.Decoder // an implicit Y_pb: the best assignment under random scores
	score  []float64
	y      []float64
}

func (r *randomPolicy) Propose(v *gbd.MasterView) (gbd.Proposal, error) {
	if v.Ypb.Implicit() {
		r.score, r.y = scratch.Resize(r.score, v.Ypb.NY), scratch.Resize(r.y, v.Ypb.NY)
		for i := range r.score {
			r.score[i] = r.rng.NormFloat64()
		}
		if err := r.dec.Screened(v, r.score, v.Candidates, r.y); err != nil {
			return gbd.Proposal{}, fmt.Errorf("builtin random: %w", err)
		}
		return gbd.Proposal{Assign: r.y}, nil
	}
	n := v.Ypb.Count()
	r.logits = scratch.Resize(r.logits, n)
	return gbd.Proposal{Logits: oneHot(r.logits, r.rng.IntN(n))}, nil
}

// errImplicitBuiltin: infeasible and suboptimal score every assignment of Y_pb, which an implicit
// set does not list (oracle and random decode over its stages).
var errImplicitBuiltin = errors.New("builtin policy: Y_pb is too large to enumerate")
