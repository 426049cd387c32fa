package gbd

import (
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
}

// NewRescued returns a native back-end with Ipopt as its rescue.
func NewRescued() *Rescued { return &Rescued{Native: ipm.New()} }

// Solve implements nlp.Solver.
func (r *Rescued) Solve(p *nlp.Problem, x0 []float64, opt nlp.Options) (nlp.Result, error) {
	res, err := r.Native.Solve(p, x0, opt)
	if err != nil || (res.Status != nlp.Failed && res.Status != nlp.IterationLimit) {
		return res, err
	}
	if opt.Stop != nil && opt.Stop() {
		return res, nil
	}
	r.Rescues++
	return ipopt.Solver{}.Solve(p, x0, opt)
}
