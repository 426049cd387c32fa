package master

import (
	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/gbd/master/staged"
)

// NewExact is the exact master for ypb, the expert of replay's and datagen's labels and the
// default of replay's re-runs: the scan of an enumerated Y_pb, the staged branch and bound over the
// move blocks of an implicit one.
func NewExact(ypb *gbd.Admissible) gbd.Master {
	if ypb.Implicit() {
		return &staged.Master{}
	}
	return &enum.Master{}
}
