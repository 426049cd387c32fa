package mpc

import (
	"fmt"

	"gbdmpc/gbd"
)

// MasterNames are the master back-ends MasterByName knows, as command-line flags spell them.
var MasterNames = []string{"enum", "cbc", "staged"}

// MasterFits says why master cannot serve ypb: the enum master scans an enumerated Y_pb and has
// nothing to scan in an implicit one. The controller checks it at start-up and the offline
// commands before their first solve, rather than every solve failing in Master.Reset.
func MasterFits(ypb *gbd.Admissible, master gbd.Master) error {
	if ypb.Implicit() && master.Name() == "enum" {
		return fmt.Errorf("Y_pb of %d binaries is too large to enumerate: the enum master cannot scan it, use cbc or staged", ypb.NY)
	}
	return nil
}

// MasterByName returns the Options.NewMaster constructor for a back-end name: "enum" (exact scan
// of Y_pb, the default for "") or "cbc" (time-limited MILP, needed by agent-based GBD's T_k) or
// "staged" (exact branch and bound over the stages of a Y_pb too large to enumerate, time-limited).
func MasterByName(name string) (func() gbd.Master, error) {
	switch name {
	case "", "enum":
		return func() gbd.Master { return &gbd.EnumMaster{} }, nil
	case "cbc":
		return func() gbd.Master { return &gbd.CBCMaster{} }, nil
	case "staged":
		return func() gbd.Master { return &gbd.StagedMaster{} }, nil
	}
	return nil, fmt.Errorf("mpc: unknown master back-end %q (want one of %v)", name, MasterNames)
}
