// Package backend makes the solver back-ends a plant's solver.Spec names: the master back-ends
// (the packages under gbd/master: enum and staged, pure Go; cbc, the CBC binding) and the NLP
// back-ends (native, gbd/nlp/ipm with Ipopt as its rescue; ipopt, Ipopt alone). The names and what
// they mean are package solver's; this package adds how each is made.
//
// It is the one place that links the C solvers into the product: gbd, mpc, policy and replay stay
// free of cgo and take their back-ends as values.
package backend

import (
	"fmt"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/cbc"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/gbd/master/staged"
	"gbdmpc/gbd/nlp"
	"gbdmpc/gbd/nlp/ipopt"
	"gbdmpc/solver"
)

// MasterNames are the master back-ends MasterFor knows (solver.MasterNames); AutoMasterName picks
// one of the others from Y_pb.
var MasterNames = solver.MasterNames

// NLPNames are the NLP back-ends NLPByName knows (solver.NLPNames).
var NLPNames = solver.NLPNames

// AutoMasterName is the default master: the back-end that suits the plant's Y_pb
// (solver.AutoMaster).
const AutoMasterName = solver.MasterAuto

// newMasters makes each master back-end of solver.MasterNames but auto, which stands for one of
// them.
var newMasters = map[string]func() gbd.Master{
	solver.MasterEnum:   func() gbd.Master { return &enum.Master{} },
	solver.MasterCBC:    CBCMaster,
	solver.MasterStaged: func() gbd.Master { return &staged.Master{Workers: staged.AutoWorkers} },
}

// newNLPs makes each NLP back-end of solver.NLPNames.
var newNLPs = map[string]func() nlp.Solver{
	solver.NLPNative: NLP,
	solver.NLPIpopt:  func() nlp.Solver { return ipopt.Solver{} },
}

// MasterFor resolves a configured master name for a plant whose admissible set is ypb: "auto"
// (and "") by solver.AutoMaster, any other name as MasterByName. It returns the back-end's name
// too, so that callers can say which one runs.
func MasterFor(name string, ypb *gbd.Admissible) (func() gbd.Master, string, error) {
	if name == "" || name == AutoMasterName {
		name = solver.AutoMaster(ypb)
	}
	newMaster, err := MasterByName(name)
	return newMaster, name, err
}

// MasterByName returns a constructor of the named master back-end: "enum" (exact scan of Y_pb,
// the default for "") or "cbc" (time-limited MILP, needed by agent-based GBD's T_k; CBCMaster) or
// "staged" (exact branch and bound over the stages of a Y_pb too large to enumerate,
// time-limited). "auto" needs Y_pb: see MasterFor.
func MasterByName(name string) (func() gbd.Master, error) {
	if name == "" {
		name = solver.MasterEnum
	}
	if mk, ok := newMasters[name]; ok {
		return mk, nil
	}
	if name == AutoMasterName {
		return nil, fmt.Errorf("master %q depends on the plant's admissible set: resolve it with MasterFor", name)
	}
	return nil, fmt.Errorf("unknown master back-end %q (want one of %v)", name, MasterNames)
}

// CBCMaster makes the product's CBC master: every solve in a worker process (cbc.Options.Isolate),
// so that a crash inside CBC fails a master solve, not the daemon, and a solve far past its time
// limit is ended.
func CBCMaster() gbd.Master { return &cbc.Master{Options: cbc.Options{Isolate: true}} }

// NLPByName returns a constructor of the named NLP back-end: "native" (gbd/nlp/ipm, pure Go, no lock,
// with Ipopt as its rescue: see ipopt.Rescued; the default for "") or "ipopt" (Debian's Ipopt 3.11
// with MUMPS, one process-wide lock). Each call of the constructor makes a solver for one goroutine.
func NLPByName(name string) (func() nlp.Solver, error) {
	if name == "" {
		name = solver.NLPNative
	}
	if mk, ok := newNLPs[name]; ok {
		return mk, nil
	}
	return nil, fmt.Errorf("unknown NLP back-end %q (want one of %v)", name, NLPNames)
}

// NLP makes the product's default NLP back-end: the native solver with Ipopt as its rescue.
func NLP() nlp.Solver { return ipopt.NewRescued() }
