package solver

import (
	"strings"

	"gbdmpc/gbd"
)

// The back-ends a Spec can name.
const (
	MasterAuto   = "auto"   // the master that suits Y_pb: AutoMaster
	MasterEnum   = "enum"   // gbd/master/enum
	MasterCBC    = "cbc"    // the CBC binding's master
	MasterStaged = "staged" // gbd/master/staged
	NLPNative    = "native" // gbd/nlp/ipm with Ipopt as its rescue
	NLPIpopt     = "ipopt"  // Ipopt alone

	CutsStrengthened = "strengthened" // gbd's default optimality cut
	CutsStage        = "stage"        // gbd.Settings.StageCuts
	CutsClassical    = "classical"    // gbd.Settings.ClassicalCuts
)

// choice is one back-end of a table: its name and what it is, for flag help.
type choice struct{ name, about string }

// masters is the one table of master back-ends, the default first; MasterNames, the flag help and
// the validation come from it.
var masters = []choice{
	{MasterAuto, "enum while Y_pb is enumerated, staged when it is staged by move blocks, cbc otherwise"},
	{MasterEnum, "exact scan of Y_pb"},
	{MasterCBC, "time-limited MILP"},
	{MasterStaged, "branch and bound over the move blocks, for a Y_pb too large to enumerate"},
}

// nlps is the one table of NLP back-ends, the default first.
var nlps = []choice{
	{NLPNative, "pure-Go interior point, Ipopt when it fails"},
	{NLPIpopt, "Ipopt 3.11 + MUMPS"},
}

// cutKinds is the one table of optimality cuts, the default first.
var cutKinds = []choice{
	{CutsStrengthened, "the Lagrangian with the rows that tie a flow to its binary kept primal, and with the enum or staged master the start costs exact (hinges): prices switching a unit off and on"},
	{CutsStage, "per move block, tables over the block's patterns on top of the strengthened cut: fewer iterations for stage NLPs, which cost more than they save on the pump stations"},
	{CutsClassical, "GBD's: every coupling row dualized"},
}

// CutNames are the optimality cuts a Spec can name, the default first.
var CutNames = names(cutKinds)

// MasterNames are the master back-ends a Spec can name, the default first.
var MasterNames = names(masters)

// NLPNames are the NLP back-ends a Spec can name, the default first.
var NLPNames = names(nlps)

func names(table []choice) []string {
	out := make([]string, len(table))
	for i, c := range table {
		out[i] = c.name
	}
	return out
}

// describe is a table as flag help spells it: "a (what a is) | b (what b is)".
func describe(table []choice) string {
	parts := make([]string, len(table))
	for i, c := range table {
		parts[i] = c.name + " (" + c.about + ")"
	}
	return strings.Join(parts, " | ")
}

// oneOf lists the names a setting may take: "a or b", "one of a, b, c".
func oneOf(names []string) string {
	if len(names) == 2 {
		return names[0] + " or " + names[1]
	}
	return "one of " + strings.Join(names, ", ")
}

// AutoMaster is the master back-end MasterAuto stands for on ypb: enum while Y_pb is enumerated
// (an exact scan, tens of µs a master on the 12-binary station), staged when it is too large to
// enumerate but staged by move blocks (exact branch and bound, far faster than a MILP there), cbc
// otherwise.
func AutoMaster(ypb *gbd.Admissible) string {
	switch {
	case ypb == nil || !ypb.Implicit():
		return MasterEnum
	case len(ypb.Stages) > 0:
		return MasterStaged
	}
	return MasterCBC
}
