package mpc

import (
	"fmt"

	"gbdmpc/gbd"
	"gbdmpc/gbd/ipopt"
	"gbdmpc/gbd/nlp"
)

// NLPNames are the NLP back-ends NLPByName knows, as command-line flags and configs spell them.
var NLPNames = []string{"native", "ipopt"}

// NLPByName returns a constructor of the named NLP back-end: "native" (gbd/ipm, pure Go, no lock,
// with Ipopt as its rescue: see gbd.Rescued; the default for "") or "ipopt" (Debian's Ipopt 3.11
// with MUMPS, one process-wide lock). Each call of the constructor makes a solver for one goroutine.
func NLPByName(name string) (func() nlp.Solver, error) {
	switch name {
	case "", "native":
		return func() nlp.Solver { return gbd.NewRescued() }, nil
	case "ipopt":
		return func() nlp.Solver { return ipopt.Solver{} }, nil
	}
	return nil, fmt.Errorf("mpc: unknown NLP back-end %q (want one of %v)", name, NLPNames)
}
