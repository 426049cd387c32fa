package ipopt

import (
	"errors"
	"math"

	"gbdmpc/gbd/nlp"
)

// Solver adapts Ipopt to gbd's back-end-neutral contract (nlp.Solver), so that gbd speaks no
// Ipopt type. Options are the Ipopt options of every solve; nlp.Options override Tol and
// MaxIter and map Conservative to the monotone barrier and Stop to the intermediate callback.
// Solver holds no state: any number of goroutines may use one value, though every solve still
// takes the package's lock (see "Concurrency" in doc.go).
type Solver struct {
	Options Options
}

// Solve implements nlp.Solver.
func (s Solver) Solve(p *nlp.Problem, x0 []float64, opt nlp.Options) (nlp.Result, error) {
	if err := p.Validate(x0); err != nil {
		return nlp.Result{}, err
	}
	opt = opt.WithDefaults()
	o := s.Options
	o.Tol, o.MaxIter, o.Stop = opt.Tol, opt.MaxIter, opt.Stop
	if opt.Conservative {
		o.MonotoneMu = true
	}
	res, err := Solve(p, x0, nil, o)
	if err != nil {
		var se *SolveError
		if !errors.As(err, &se) {
			return nlp.Result{}, err
		}
		// A malformed call or an internal breakdown inside Ipopt is an outcome of a solve that
		// ran: report it as a failure with Ipopt's status.
	}
	out := nlp.Result{
		Status: MapStatus(res.Status), X: res.X, Obj: res.Obj, G: res.G,
		MultG: res.MultG, MultXL: res.MultXL, MultXU: res.MultXU, Iterations: res.Iterations,
		PrimalInf: math.NaN(), DualInf: math.NaN(), Compl: math.NaN(),
	}
	if out.Status != nlp.Solved {
		out.Message = "ipopt: " + res.Status.String()
	}
	return out, nil
}

// MapStatus maps Ipopt's return status to the neutral one. SolvedToAcceptableLevel is a failure:
// an "acceptable" point missed the tolerance, and a Benders cut built from it has no margin.
func MapStatus(s Status) nlp.Status {
	switch s {
	case Solved:
		return nlp.Solved
	case InfeasibleProblemDetected:
		return nlp.Infeasible
	case DivergingIterates:
		return nlp.Unbounded
	case UserRequestedStop, MaximumCpuTimeExceeded:
		return nlp.Stopped
	case MaximumIterationsExceeded:
		return nlp.IterationLimit
	}
	return nlp.Failed
}

var _ nlp.Solver = Solver{}
