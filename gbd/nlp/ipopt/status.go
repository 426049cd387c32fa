package ipopt

import "fmt"

// Status is Ipopt's ApplicationReturnStatus. The numeric values are those of the C enum
// (IpReturnCodes_inc.h) so that a value logged by this package can be looked up in Ipopt's docs;
// solve.go proves the correspondence at compile time.
type Status int

const (
	Solved                    Status = 0
	SolvedToAcceptableLevel   Status = 1
	InfeasibleProblemDetected Status = 2
	SearchDirectionTooSmall   Status = 3
	DivergingIterates         Status = 4
	UserRequestedStop         Status = 5
	FeasiblePointFound        Status = 6

	MaximumIterationsExceeded Status = -1
	RestorationFailed         Status = -2
	ErrorInStepComputation    Status = -3
	MaximumCpuTimeExceeded    Status = -4
	NotEnoughDegreesOfFreedom Status = -10
	InvalidProblemDefinition  Status = -11
	InvalidOption             Status = -12
	InvalidNumberDetected     Status = -13

	UnrecoverableException  Status = -100
	NonIpoptExceptionThrown Status = -101
	InsufficientMemory      Status = -102
	InternalError           Status = -199
)

var statusNames = map[Status]string{
	Solved:                    "Solved",
	SolvedToAcceptableLevel:   "SolvedToAcceptableLevel",
	InfeasibleProblemDetected: "InfeasibleProblemDetected",
	SearchDirectionTooSmall:   "SearchDirectionTooSmall",
	DivergingIterates:         "DivergingIterates",
	UserRequestedStop:         "UserRequestedStop",
	FeasiblePointFound:        "FeasiblePointFound",
	MaximumIterationsExceeded: "MaximumIterationsExceeded",
	RestorationFailed:         "RestorationFailed",
	ErrorInStepComputation:    "ErrorInStepComputation",
	MaximumCpuTimeExceeded:    "MaximumCpuTimeExceeded",
	NotEnoughDegreesOfFreedom: "NotEnoughDegreesOfFreedom",
	InvalidProblemDefinition:  "InvalidProblemDefinition",
	InvalidOption:             "InvalidOption",
	InvalidNumberDetected:     "InvalidNumberDetected",
	UnrecoverableException:    "UnrecoverableException",
	NonIpoptExceptionThrown:   "NonIpoptExceptionThrown",
	InsufficientMemory:        "InsufficientMemory",
	InternalError:             "InternalError",
}

func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Ok reports whether the returned point is a (locally) optimal KKT point, to Options.Tol or to
// Options.AcceptableTol respectively. Only then are X and the multipliers usable as a solution.
func (s Status) Ok() bool { return s == Solved || s == SolvedToAcceptableLevel }

// Infeasible reports whether Ipopt ended at a point that (locally) minimises the constraint
// violation without reaching feasibility. For a convex problem this certifies infeasibility;
// for a nonconvex one it only says that Ipopt got stuck.
func (s Status) Infeasible() bool { return s == InfeasibleProblemDetected }

// failure reports whether the status means the call itself was wrong or Ipopt broke down, as
// opposed to an outcome of the optimisation. Solve turns these into a *SolveError.
func (s Status) failure() bool {
	switch s {
	case InvalidProblemDefinition, InvalidOption, UnrecoverableException,
		NonIpoptExceptionThrown, InsufficientMemory, InternalError:
		return true
	}
	return false
}
