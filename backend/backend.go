// Package backend names the solver back-ends a plant can use, as configs and command-line flags
// spell them, and makes them: the master back-ends (enum and staged, pure Go in package gbd; cbc,
// the CBC binding's gbd/cbc.Master) and the NLP back-ends (native, gbd/ipm with Ipopt as its
// rescue; ipopt, Ipopt alone). It is the one place that links the C solvers into the product:
// gbd, mpc, policy and replay stay free of cgo and take their back-ends as values.
package backend

import (
	"fmt"

	"gbdmpc/gbd"
	"gbdmpc/gbd/cbc"
	"gbdmpc/gbd/ipopt"
	"gbdmpc/gbd/nlp"
)

// MasterNames are the master back-ends MasterByName knows; AutoMasterName picks one of the others
// from Y_pb.
var MasterNames = []string{AutoMasterName, "enum", "cbc", "staged"}

// AutoMasterName is the default master: the back-end that suits the plant's Y_pb (AutoMaster).
const AutoMasterName = "auto"

// AutoMaster is the master back-end "auto" stands for on ypb: enum while Y_pb is enumerated (an
// exact scan, tens of µs a master on the 12-binary station), staged when it is too large to
// enumerate but staged by move blocks (exact branch and bound, far faster than a MILP there),
// cbc otherwise.
func AutoMaster(ypb *gbd.Admissible) string {
	switch {
	case ypb == nil || !ypb.Implicit():
		return "enum"
	case len(ypb.Stages) > 0:
		return "staged"
	}
	return "cbc"
}

// MasterFor resolves a configured master name for a plant whose admissible set is ypb: "auto"
// (and "") by AutoMaster, any other name as MasterByName. It returns the back-end's name too, so
// that callers can say which one runs.
func MasterFor(name string, ypb *gbd.Admissible) (func() gbd.Master, string, error) {
	if name == "" || name == AutoMasterName {
		name = AutoMaster(ypb)
	}
	newMaster, err := MasterByName(name)
	return newMaster, name, err
}

// MasterByName returns a constructor of the named master back-end: "enum" (exact scan of Y_pb,
// the default for "") or "cbc" (time-limited MILP, needed by agent-based GBD's T_k; CBCMaster) or "staged"
// (exact branch and bound over the stages of a Y_pb too large to enumerate, time-limited).
// "auto" needs Y_pb: see MasterFor.
func MasterByName(name string) (func() gbd.Master, error) {
	switch name {
	case "", "enum":
		return func() gbd.Master { return &gbd.EnumMaster{} }, nil
	case "cbc":
		return CBCMaster, nil
	case "staged":
		return func() gbd.Master { return &gbd.StagedMaster{} }, nil
	case AutoMasterName:
		return nil, fmt.Errorf("master %q depends on the plant's admissible set: resolve it with MasterFor", name)
	}
	return nil, fmt.Errorf("unknown master back-end %q (want one of %v)", name, MasterNames)
}

// CBCMaster makes the product's CBC master: every solve in a worker process (cbc.Options.Isolate),
// so that a crash inside CBC fails a master solve, not the daemon, and a solve far past its time
// limit is ended.
func CBCMaster() gbd.Master { return &cbc.Master{Options: cbc.Options{Isolate: true}} }

// NLPNames are the NLP back-ends NLPByName knows.
var NLPNames = []string{"native", "ipopt"}

// NLPByName returns a constructor of the named NLP back-end: "native" (gbd/ipm, pure Go, no lock,
// with Ipopt as its rescue: see ipopt.Rescued; the default for "") or "ipopt" (Debian's Ipopt 3.11
// with MUMPS, one process-wide lock). Each call of the constructor makes a solver for one goroutine.
func NLPByName(name string) (func() nlp.Solver, error) {
	switch name {
	case "", "native":
		return NLP, nil
	case "ipopt":
		return func() nlp.Solver { return ipopt.Solver{} }, nil
	}
	return nil, fmt.Errorf("unknown NLP back-end %q (want one of %v)", name, NLPNames)
}

// NLP makes the product's default NLP back-end: the native solver with Ipopt as its rescue.
func NLP() nlp.Solver { return ipopt.NewRescued() }
