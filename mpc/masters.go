package mpc

import (
	"fmt"

	"gbdmpc/gbd"
)

// MasterNames are the master back-ends MasterByName knows, as command-line flags spell them.
var MasterNames = []string{"enum", "cbc"}

// MasterByName returns the Options.NewMaster constructor for a back-end name: "enum" (exact scan
// of Y_pb, the default for "") or "cbc" (time-limited MILP, needed by agent-based GBD's T_k).
func MasterByName(name string) (func() gbd.Master, error) {
	switch name {
	case "", "enum":
		return func() gbd.Master { return &gbd.EnumMaster{} }, nil
	case "cbc":
		return func() gbd.Master { return &gbd.CBCMaster{} }, nil
	}
	return nil, fmt.Errorf("mpc: unknown master back-end %q (want one of %v)", name, MasterNames)
}
