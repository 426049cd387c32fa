package mpc

import (
	"fmt"

	"gbdmpc/gbd/ipm"
	"gbdmpc/gbd/ipopt"
	"gbdmpc/gbd/nlp"
)

// NLPNames are the NLP back-ends NLPByName knows, as command-line flags and configs spell them.
var NLPNames = []string{"ipopt", "native"}

// NLPByName returns a constructor of the named NLP back-end: "ipopt" (Debian's Ipopt 3.11 with
// MUMPS, one process-wide lock; the default for "") or "native" (gbd/ipm, pure Go, no lock, with
// Ipopt as its rescue: see Rescued). Each call of the constructor makes a solver for one goroutine.
func NLPByName(name string) (func() nlp.Solver, error) {
	switch name {
	case "", "ipopt":
		return func() nlp.Solver { return ipopt.Solver{} }, nil
	case "native":
		return func() nlp.Solver { return &Rescued{Native: ipm.New()} }, nil
	}
	return nil, fmt.Errorf("mpc: unknown NLP back-end %q (want one of %v)", name, NLPNames)
}

// Rescued is the native back-end with Ipopt behind it: a solve the native solver ends failed or
// at its iteration limit is solved again by Ipopt, so a plant never loses a plan the reference
// would have found. The native solver passes the shared back-end suite (gbd/nlpsuite) but not yet
// every problem the plants build (the pump station's soft problem, whose penalties it does not
// scale well, goes to Ipopt every time). Rescues counts the solves Ipopt took over.
type Rescued struct {
	Native  *ipm.Solver
	Rescues int
}

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
