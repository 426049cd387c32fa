package policy

import (
	"slices"

	"gbdmpc/gbd"
)

// Labeller labels master problems with the expert's decision: the exact master's optimum over Y_pb
// — argmin of the largest optimality cut subject to every feasibility cut within gbd.FeasTol, ties
// to the earliest assignment — as gbd.EnumMaster itself computes it, not a copy of its rule. Replay
// (decision logs) and datagen (independent instances) both label through it, so a sample means
// the same whichever way it was made.
//
// It keeps the master between calls. GBD only ever adds cuts, so the master at iteration k+1 of a
// solve is the one at k plus a cut: when the previous call's cuts are a prefix of this one's (same
// solve), only the new cuts are added, and a solve of K masters costs O(K) cut insertions instead
// of O(K²). The state after adding the same cuts in the same order is the same whether or not it
// was reset in between, so the labels do not depend on the order of calls. A Labeller serves one
// goroutine.
type Labeller struct {
	em    gbd.EnumMaster
	solve int
	cuts  []gbd.Cut // the cuts in em: the previous call's
	ready bool      // em holds a master (false before the first call)
}

// Label returns the position in ypb (an enumerated Y_pb) of the optimum of the master made of cuts,
// and false when the feasibility cuts exclude every admissible assignment (there is nothing to
// imitate). solve names the solve the master comes from. The labeller keeps cuts until the next
// call: the caller must not change them.
func (lb *Labeller) Label(solve int, cuts []gbd.Cut, ypb *gbd.Admissible) (int, bool) {
	from := 0
	if lb.ready && lb.solve == solve && isPrefix(lb.cuts, cuts) {
		from = len(lb.cuts)
	} else if err := lb.em.Reset(ypb.NY, nil, ypb); err != nil {
		return -1, false // an implicit Y_pb: nothing to label positions in
	}
	for k := from; k < len(cuts); k++ {
		lb.em.AddCut(&cuts[k])
	}
	lb.solve, lb.cuts, lb.ready = solve, cuts, true
	res, _ := lb.em.Solve(0, nil) // the scan never fails
	if res.Status != gbd.MasterOptimal {
		return -1, false
	}
	return ypb.Index(res.Y), true
}

// isPrefix reports whether a is a prefix of b, cut for cut and bit for bit.
func isPrefix(a, b []gbd.Cut) bool {
	if len(a) > len(b) {
		return false
	}
	for k := range a {
		x, y := &a[k], &b[k]
		if x.Kind != y.Kind || x.Const != y.Const || !slices.Equal(x.Coef, y.Coef) {
			return false
		}
	}
	return true
}
