package mpc

import (
	"fmt"
	"time"

	"gbdmpc/gbd"
)

// ProblemKind tells a measurement's own problem, with its hard limits, from the soft-constrained
// version solved when those limits cannot be held (doc.go, "When the limits cannot be held").
type ProblemKind int

const (
	Hard ProblemKind = iota // Measurement.Problem
	Soft                    // Softener.SoftProblem
)

func (k ProblemKind) String() string {
	if k == Soft {
		return "soft"
	}
	return "hard"
}

// Softener is implemented by measurements whose problem has limits the plant may be unable to hold
// (the pump station's level limits). Its soft problem has the same binaries and the same pure rows,
// hence the same Y_pb, so GBD and the agent apply to it unchanged; it penalises the violation of the
// limits exactly (L1) instead of forbidding it, and always has a feasible point.
type Softener interface {
	// Unholdable returns a non-empty reason when a cheap test proves Problem() infeasible. It must be
	// exact where it claims (a certificate, never a guess); "" means inconclusive.
	Unholdable() string
	// SoftProblem is the soft-constrained problem, and Bound, an upper bound on its objective at the
	// optimum of Problem() whenever that one is feasible: a soft lower bound above Bound proves
	// Problem() infeasible.
	SoftProblem() (p *gbd.Problem, bound float64, err error)
	// SoftStart lifts a point of Problem()'s layout (a shifted plan's warm start) into
	// SoftProblem()'s, or returns nil.
	SoftStart(x []float64) []float64
	// Relaxation reads how a solution x of SoftProblem() breaks the hard limits; violated is false
	// when it holds them within the family's tolerance (then x is a point of Problem() as well).
	Relaxation(x []float64) (r Relaxation, violated bool)
}

// Relaxation says how a published plan breaks the plant's hard limits: the action's and the
// `gbdmpc solve` result's "relaxed" object (specs/interfaces.md). Steps are the plan's, 0-based: step
// t's violation is that of the state at the end of step t (the plan's steps[t]).
type Relaxation struct {
	// Limit is the limit violated the most, named as the family's configuration names it (the pump
	// station: "level_min_m" or "level_max_m"), Bound its value and Unit their unit.
	Limit string  `json:"limit"`
	Bound float64 `json:"bound"`
	Unit  string  `json:"unit"`
	// MaxViolation is the largest predicted violation of any limit, in Unit, at plan step WorstStep;
	// FirstStep is the first plan step at which any limit is violated.
	MaxViolation float64 `json:"max_violation"`
	FirstStep    int     `json:"first_step"`
	WorstStep    int     `json:"worst_step"`
	// Unserved is the demand the plan cannot serve over the horizon (the pump station: m³ drawn from
	// an empty tank), in UnservedUnit.
	Unserved     float64 `json:"unserved"`
	UnservedUnit string  `json:"unserved_unit"`
	// Proof says how the hard problem was shown infeasible: ProofPrecheck, ProofGBD or ProofSoftBound,
	// and ProofDetail the certificate's own words.
	Proof       string `json:"proof"`
	ProofDetail string `json:"proof_detail,omitempty"`
	// Shortfall is one line naming the shortfall, for the status alarm and logs.
	Shortfall string `json:"shortfall"`
}

// How the hard problem was shown infeasible (Relaxation.Proof).
const (
	ProofPrecheck  = "precheck"   // Softener.Unholdable, before any solve
	ProofGBD       = "gbd"        // the hard solve ended infeasible
	ProofSoftBound = "soft_bound" // the soft solve's lower bound exceeds Softener's Bound
)

// DefaultHardFrac is Options.HardFrac's default: after a step that could not hold the limits, the
// hard and the soft problem share the time equally.
const DefaultHardFrac = 0.5

// SolveFunc runs GBD on one of a measurement's problems. The Controller's carries cuts of the same
// kind and warm-starts; `gbdmpc solve` calls the engine.
type SolveFunc func(kind ProblemKind, p *gbd.Problem, set gbd.Settings) (*gbd.Result, error)

// Outcome is what Solve did for one measurement.
type Outcome struct {
	// Result is the solve to act on and Kind its problem: the hard solve, or the soft one when the
	// hard problem was proven infeasible (Relaxed set) or when the soft solve found a point within the
	// hard limits after the hard one found none in its time (Relaxed nil: the plan holds the limits).
	Result *gbd.Result
	Kind   ProblemKind
	// Hard and Soft are the two solves (nil when not run; Hard is nil after a conclusive pre-check).
	Hard, Soft *gbd.Result
	// Relaxed is set when the hard problem is proven infeasible and the soft solve has an incumbent.
	Relaxed *Relaxation
	// Infeasible is how the hard problem was proven infeasible (ProofPrecheck, ProofGBD,
	// ProofSoftBound), also when the soft solve then found no plan; "" when it was not.
	Infeasible string
	// Note explains a soft solve that did not give a relaxed plan (no incumbent, or infeasibility
	// not proven); empty otherwise.
	Note string
}

// Solve solves m's problem, and its soft version when the hard limits cannot be held (doc.go, "When
// the limits cannot be held"):
//
//   - a conclusive pre-check (Softener.Unholdable) goes straight to the soft problem, with the whole
//     time to set.Deadline;
//   - otherwise the hard problem gets hardFrac of the time left (1: all of it; always all of it for
//     a measurement that is not a Softener), and the soft one the rest when the hard solve proved
//     infeasibility or ended without an incumbent.
//
// The error is the hard problem's transcription or solve error (an input the engine refuses); a
// soft problem that cannot be built or solved leaves the outcome without a relaxed plan, with Note.
func Solve(m Measurement, set gbd.Settings, hardFrac float64, clock gbd.Clock, solve SolveFunc) (*Outcome, error) {
	p, err := m.Problem()
	if err != nil {
		return nil, fmt.Errorf("transcription: %w", err)
	}
	sf, soft := m.(Softener)
	if !soft {
		r, err := solve(Hard, p, set)
		return &Outcome{Result: r, Kind: Hard, Hard: r}, wrapSolve(err)
	}
	if clock == nil {
		clock = gbd.RealClock
	}
	if why := sf.Unholdable(); why != "" {
		return solveSoft(sf, set, solve, &Outcome{}, ProofPrecheck, why), nil
	}
	hset := set
	if !set.Deadline.IsZero() {
		now := clock.Now()
		if left := set.Deadline.Sub(now); left > 0 {
			hset.Deadline = now.Add(time.Duration(float64(left) * hardFrac))
		}
	}
	r, err := solve(Hard, p, hset)
	out := &Outcome{Result: r, Kind: Hard, Hard: r}
	if err != nil || r == nil || r.Y != nil {
		return out, wrapSolve(err)
	}
	if r.Status == gbd.StatusInfeasible {
		return solveSoft(sf, set, solve, out, ProofGBD, r.Message), nil
	}
	// No plan within the limits in the hard problem's share of the time: the soft problem may still
	// find one (it relaxes the hard problem, so its lower bound is valid for it too), or prove that
	// there is none.
	return solveSoft(sf, set, solve, out, "", ""), nil
}

func wrapSolve(err error) error {
	if err != nil {
		return fmt.Errorf("solve: %w", err)
	}
	return nil
}

// solveSoft runs the soft problem and fills out. proof is how the hard problem was shown infeasible
// ("" when it was not: then only a plan within the limits or a soft lower bound above the bound
// makes the soft result the one to act on).
func solveSoft(sf Softener, set gbd.Settings, solve SolveFunc, out *Outcome, proof, why string) *Outcome {
	out.Infeasible = proof
	prefix := ""
	if proof != "" {
		prefix = "hard limits cannot be held (" + proof + "); "
	}
	sp, bound, err := sf.SoftProblem()
	if err != nil {
		out.Note = prefix + "soft problem: " + err.Error()
		return out
	}
	set.X0 = sf.SoftStart(set.X0)
	rs, err := solve(Soft, sp, set)
	out.Soft = rs
	switch {
	case err != nil:
		out.Note = prefix + "soft problem: " + err.Error()
		return out
	case rs == nil || rs.Y == nil || rs.X == nil:
		status := "no result"
		if rs != nil {
			status = rs.Status.String()
			if out.Result == nil {
				out.Result, out.Kind = rs, Soft
			}
		}
		out.Note = prefix + "soft problem ended " + status + " without a plan"
		return out
	}
	rel, violated := sf.Relaxation(rs.X)
	if proof == "" {
		switch {
		case !violated:
			// A plan within the hard limits: it is the hard problem's incumbent, and the soft lower
			// bound is a valid bound for the hard problem.
			out.Result, out.Kind = rs, Soft
			return out
		case rs.LBD > bound:
			out.Infeasible = ProofSoftBound
			proof, why = ProofSoftBound, fmt.Sprintf("soft lower bound %.6g exceeds %.6g, the most any plan within the limits can cost", rs.LBD, bound)
		default:
			out.Note = "no plan within the hard limits found in time, and their infeasibility is not proven"
			return out
		}
	}
	rel.Proof, rel.ProofDetail = proof, why
	out.Result, out.Kind, out.Relaxed = rs, Soft, &rel
	return out
}
