package gbd

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gbdmpc/internal/enum"
)

// ErrTimeUp is wrapped by errors of a step that was cut short by its time budget.
var ErrTimeUp = errors.New("time budget exhausted")

// MasterStatus says how a master solve ended.
type MasterStatus int

const (
	MasterOptimal     MasterStatus = iota + 1 // proven optimal: Bound == Mu
	MasterStopped                             // time limit with an incumbent: Bound ≤ optimum ≤ Mu
	MasterNoIncumbent                         // time limit before any integer point: only Bound is known
	MasterInfeasible                          // no admissible y satisfies the feasibility cuts
	MasterAboveCutoff                         // every admissible y has μ_B above the cutoff (Cutoff): Bound ≥ it, no Y
)

var masterStatusNames = [...]string{
	MasterOptimal:     "optimal",
	MasterStopped:     "stopped",
	MasterNoIncumbent: "no_incumbent",
	MasterInfeasible:  "infeasible",
	MasterAboveCutoff: "above_cutoff",
}

func (s MasterStatus) String() string { return enum.Name(masterStatusNames[:], s, "MasterStatus") }

// MasterResult is (ȳ, μ̄_B, L̄B) of Algorithm 2. Before the first optimality cut μ_B is unbounded
// below, so Mu and Bound are −Inf and Y is any y satisfying the constraints.
type MasterResult struct {
	Status MasterStatus
	Y      []float64
	Mu     float64 // objective of Y: max_k φ_o^(k)(Y)
	Bound  float64 // certified lower bound on the master optimum
}

// Master is a back-end for the master problem M (paper eq. (6)):
//
//	min μ_B  s.t.  μ_B ≥ φ_o^(k)(y) ∀k∈K_O,  φ_f^(k)(y) ≤ 0 ∀k∈K_F,  K y ≤ b,  y ∈ {0,1}^m.
//
// Every back-end (the packages under gbd/master) runs the same shared test suite
// (gbd/master/suite_test.go) and must agree with the others.
type Master interface {
	// Reset starts a new master problem for the given pure binary rows and their admissible set.
	Reset(ny int, pure []PureRow, ypb *Admissible) error
	// AddCut adds one cut; the master keeps its own copy.
	AddCut(c *Cut)
	// Solve solves M. limit > 0 stops the search after that long (the time-limited solve of
	// Algorithm 2); start, if not nil, is offered as a starting incumbent.
	Solve(limit time.Duration, start []float64) (MasterResult, error)
	Name() string
}

// Cutoff is a capability a Master may have: SetCutoff(v) tells it that no assignment whose μ_B
// exceeds v can change the solve's outcome. The engine sets v = UBD − ε whenever the incumbent
// improves (+Inf after Reset): a master optimum above it lifts LBD to within ε of UBD and ends the
// solve. What remains of the solve is then to exclude, one evaluation at a time, the assignments
// with μ_B ≤ v, and a master may keep them at hand (the staged master's pool) instead of
// searching for each. Answers stay exact; only how they are found changes. A master that can
// show that every admissible y has μ_B above v, without finding the optimum, may answer
// MasterAboveCutoff with that bound (≥ v): the solve is then certified.
type Cutoff interface {
	SetCutoff(v float64)
}

// Budgeted is a capability a Master may have: a time limit for classical GBD's master steps, far
// below what an exact solve can take. Early in a solve, with a few cuts, a master's lower bound is
// weak and an exact search can take seconds for an assignment that only its cut will correct; a
// step stopped by the budget hands on its incumbent (a new assignment) and raises LBD by its
// bound. A step that finds no incumbent within the budget is solved exactly, and so is one whose
// incumbent was evaluated already (the engine's repeat rule), so the solve still ends certified.
// StepLimit ≤ 0 means exact master steps.
type Budgeted interface {
	StepLimit() time.Duration
}

// Interruptible is a capability a Master may have: the engine hands it Settings.Interrupt (nil
// when there is none) after Reset, and a master whose single solve can take long (a MILP from
// scratch) asks it while it solves and, once it says true, ends that solve at once with what it
// has: MasterStopped, or MasterNoIncumbent with a bound of −Inf. The engine then ends the solve
// as at its deadline.
type Interruptible interface {
	SetInterrupt(func() bool)
}

// FeasTol is the tolerance of the feasibility screen φ_f(ŷ) ≤ FeasTol, shared by every back-end so
// that they agree on which assignments the feasibility cuts exclude.
const FeasTol = 1e-7

// StageTabled is a Master that reads a stage cut's tables (Cut.Tables) rather than only its
// affine part; the engine makes stage cuts for such a master over a staged Y_pb.
type StageTabled interface {
	TakesStageTables() bool
}

// MaxOptimality is μ̂_B = max_k φ_o^(k)(y) over the optimality cuts (−Inf when there are none):
// the master objective at y, for masters and policies outside this package too.
func MaxOptimality(cuts []Cut, y []float64) float64 {
	return MaxOptimalityOf(cuts, func(c *Cut) bool { return c.Kind == OptimalityCut }, func(c *Cut) float64 { return c.Eval(y) })
}

// MaxOptimalityOf is MaxOptimality over any representation of the cuts (a master's own, such as
// the staged master's stage tables), so that every master takes the max the same way: the largest
// value of the optimality cuts among cuts (−Inf when there are none); only those are evaluated.
func MaxOptimalityOf[C any](cuts []C, isOpt func(*C) bool, value func(*C) float64) float64 {
	v := math.Inf(-1)
	for k := range cuts {
		if c := &cuts[k]; isOpt(c) {
			v = math.Max(v, value(c))
		}
	}
	return v
}

// MasterFits says why master cannot serve ypb: the enum master scans an enumerated Y_pb and has
// nothing to scan in an implicit one. The controller checks it at start-up and the offline
// commands before their first solve, rather than every solve failing in Master.Reset.
func MasterFits(ypb *Admissible, master Master) error {
	if ypb.Implicit() && master.Name() == "enum" {
		return fmt.Errorf("Y_pb of %d binaries is too large to enumerate: the enum master cannot scan it, use cbc or staged", ypb.NY)
	}
	return nil
}
