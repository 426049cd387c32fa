package ipopt

import (
	"math"

	"gbdmpc/gbd/nlp"
	"gbdmpc/gbd/nlp/ipm"
)

// Rescued is the native back-end (gbd/nlp/ipm) with Ipopt behind it: a solve the native solver ends
// failed or at its iteration limit is solved again by Ipopt, so a plant never loses a plan the
// reference would have found. The native solver passes the shared back-end suite (gbd/nlp/nlpsuite),
// which holds every kind of problem the plants build (the pump station's soft problem included),
// so a rescue is the exception: a problem outside what the suite covers, or the unbounded
// multiplier sets below. Rescues counts the solves Ipopt took over. A Rescued serves one goroutine
// at a time.
type Rescued struct {
	Native  *ipm.Solver
	Rescues int

	grad, colMax, jac []float64 // scratch of the multiplier test
}

// rescueMultRatio: a native solution whose largest multiplier exceeds this many times the
// multipliers the objective can justify goes to Ipopt too. On a subproblem whose feasible set has
// no interior in some direction (a row pins a variable to its bound) the optimal multipliers form
// an unbounded set and the interior-point iterates follow it out (1e7–1e8 where Ipopt, which
// relaxes its bounds by 1e-8, reports 0.01–50): the cut is valid but has slopes a MILP master
// cannot handle. What the objective justifies is 1 + max_j |∂f/∂x_j| / max_i |J_ij|: a variable
// that enters its rows with small coefficients (the soft problem's penalties, 1e-7) balances its
// gradient with multipliers that large, legitimately.
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
	return Solver{}.Solve(p, x0, opt)
}

// oversized reports whether a solution's multipliers are out of scale with what its objective's
// gradient justifies (see rescueMultRatio).
func (r *Rescued) oversized(p *nlp.Problem, res *nlp.Result) bool {
	big := 0.0
	for _, ms := range [][]float64{res.MultG, res.MultXL, res.MultXU} {
		for _, v := range ms {
			big = max(big, math.Abs(v))
		}
	}
	if cap(r.grad) < p.N {
		r.grad, r.colMax = make([]float64, p.N), make([]float64, p.N)
	}
	g := r.grad[:p.N]
	if !p.Eval.Gradient(res.X, g) {
		return true
	}
	gmax := 0.0
	for _, v := range g {
		gmax = max(gmax, math.Abs(v))
	}
	if big <= rescueMultRatio*(1+gmax) {
		// Within what the gradient alone justifies, which never exceeds what the columns do:
		// the usual case, decided without the Jacobian.
		return false
	}
	if cap(r.jac) < len(p.JacRow) {
		r.jac = make([]float64, len(p.JacRow))
	}
	cm, jv := r.colMax[:p.N], r.jac[:len(p.JacRow)]
	if len(jv) > 0 && !p.Eval.Jacobian(res.X, jv) {
		return true
	}
	clear(cm)
	for k, j := range p.JacCol {
		cm[j] = max(cm[j], math.Abs(jv[k]))
	}
	just := 0.0
	for j, v := range g {
		v = math.Abs(v)
		if cm[j] > 0 && cm[j] < 1 {
			v /= cm[j]
		}
		just = max(just, v)
	}
	return big > rescueMultRatio*(1+just)
}
