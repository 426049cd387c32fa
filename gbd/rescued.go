package gbd

import (
	"math"

	"gbdmpc/gbd/ipm"
	"gbdmpc/gbd/ipopt"
	"gbdmpc/gbd/nlp"
)

// Rescued is the native back-end (gbd/ipm) with Ipopt behind it: a solve the native solver ends
// failed or at its iteration limit is solved again by Ipopt, so a plant never loses a plan the
// reference would have found. The native solver passes the shared back-end suite (gbd/nlpsuite)
// but not yet every problem the plants build (the pump station's soft problem, whose penalties it
// does not scale well, goes to Ipopt every time). Rescues counts the solves Ipopt took over. A
// Rescued serves one goroutine at a time.
type Rescued struct {
	Native  *ipm.Solver
	Rescues int
	grad    []float64
}

// rescueMultRatio: a native solution whose largest multiplier exceeds this many times
// (1 + the largest objective gradient entry) goes to Ipopt too. On a subproblem whose feasible set
// has no interior in some direction (a row pins a variable to its bound) the optimal multipliers
// form an unbounded set and the interior-point iterates follow it out (1e7–1e8 where Ipopt, which
// relaxes its bounds by 1e-8, reports 0.01–50): the cut is valid but has slopes a MILP master
// cannot handle.
const rescueMultRatio = 1e4

// NewRescued returns a native back-end with Ipopt as its rescue.
func NewRescued() *Rescued { return &Rescued{Native: ipm.New()} }

// Solve implements nlp.Solver.
func (r *Rescued) Solve(p *nlp.Problem, x0 []float64, opt nlp.Options) (nlp.Result, error) {
	res, err := r.Native.Solve(p, x0, opt)
	if err != nil {
		return res, err
	}
	switch res.Status {
	case nlp.Failed, nlp.IterationLimit:
	case nlp.Solved:
		if !r.oversized(p, &res) {
			return res, nil
		}
	default:
		return res, nil
	}
	if opt.Stop != nil && opt.Stop() {
		return res, nil
	}
	r.Rescues++
	return ipopt.Solver{}.Solve(p, x0, opt)
}

// oversized reports whether a solution's multipliers are out of scale with its objective's
// gradient (see rescueMultRatio).
func (r *Rescued) oversized(p *nlp.Problem, res *nlp.Result) bool {
	if cap(r.grad) < p.N {
		r.grad = make([]float64, p.N)
	}
	g := r.grad[:p.N]
	if !p.Eval.Gradient(res.X, g) {
		return true
	}
	gmax := 0.0
	for _, v := range g {
		gmax = max(gmax, math.Abs(v))
	}
	lim := rescueMultRatio * (1 + gmax)
	for _, ms := range [][]float64{res.MultG, res.MultXL, res.MultXU} {
		for _, v := range ms {
			if math.Abs(v) > lim {
				return true
			}
		}
	}
	return false
}
