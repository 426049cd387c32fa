package policy

import (
	"slices"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master"
)

// Labeller labels master problems with the expert's decision: the exact master's optimum over Y_pb
// — argmin of the largest optimality cut subject to every feasibility cut within gbd.FeasTol, ties
// to the earliest assignment — as gbd/master/enum itself computes it, not a copy of its rule. Replay
// (decision logs) and datagen (independent instances) both label through it, so a sample means
// the same whichever way it was made.
//
// It keeps the master between calls. GBD only ever adds cuts, so the master at iteration k+1 of a
// solve is the one at k plus a cut: when the previous call's cuts are a prefix of this one's (same
// solve), only the new cuts are added, and a solve of K masters costs O(K) cut insertions instead
// of O(K²). The state after adding the same cuts in the same order is the same whether or not it
// was reset in between, so the labels do not depend on the order of calls. A Labeller serves one
// goroutine.
//
// In an implicit Y_pb (too large to enumerate) the expert is the staged master (gbd/master/staged),
// the master the engine runs there: the label is then the assignment itself. Its ties go to the
// first optimum its search meets, which depends on the solve's cuts in order (the master is reset
// at every new solve).
type Labeller struct {
	m        gbd.Master // master.NewExact's, for a Y_pb implicit or not as implicit says
	implicit bool
	solve    int
	cuts     []gbd.Cut // the cuts in m: the previous call's
	sig      string    // the signature of the Y_pb the master is over
	ready    bool      // the master holds the previous call's (false before the first call)
}

// Label returns the optimum of the master made of cuts — its position in ypb for an enumerated
// Y_pb (y nil), the assignment itself for an implicit one (j = −1) — and false when the
// feasibility cuts exclude every admissible assignment (there is nothing to imitate) or the master
// cannot be built. solve names the solve the master comes from. The labeller keeps cuts until the
// next call: the caller must not change them.
func (lb *Labeller) Label(solve int, cuts []gbd.Cut, ypb *gbd.Admissible) (j int, y []uint8, ok bool) {
	if lb.m == nil || lb.implicit != ypb.Implicit() {
		lb.m, lb.implicit, lb.ready = master.NewExact(ypb), ypb.Implicit(), false
	}
	m := lb.m
	from := 0
	if lb.ready && lb.solve == solve && lb.sig == ypb.Signature && isPrefix(lb.cuts, cuts) && gbd.HingesOf(lb.cuts).Equal(gbd.HingesOf(cuts)) {
		from = len(lb.cuts)
	} else if err := m.Reset(ypb.NY, ypb.Rows, ypb); err != nil {
		lb.ready = false
		return -1, nil, false
	} else if h := gbd.HingesOf(cuts); h != nil {
		// The cuts carry the problem's hinges (gbd.Hinges), which the master adds to them.
		if ht, ok := m.(gbd.HingeTaker); ok {
			ht.TakeHinges(h)
		}
	}
	for k := from; k < len(cuts); k++ {
		m.AddCut(&cuts[k])
	}
	lb.solve, lb.cuts, lb.sig, lb.ready = solve, cuts, ypb.Signature, true
	res, err := m.Solve(0, nil)
	if err != nil || res.Status != gbd.MasterOptimal {
		return -1, nil, false
	}
	if ypb.Implicit() {
		y = make([]uint8, ypb.NY)
		for i, v := range res.Y {
			y[i] = uint8(v)
		}
		return -1, y, true
	}
	return ypb.Index(res.Y), nil, true
}

// isPrefix reports whether a is a prefix of b, cut for cut and bit for bit (iteration and carried
// flag included, which a dataset file stores).
func isPrefix(a, b []gbd.Cut) bool {
	if len(a) > len(b) {
		return false
	}
	for k := range a {
		x, y := &a[k], &b[k]
		if x.Kind != y.Kind || x.Const != y.Const || x.Iter != y.Iter || x.Carried != y.Carried || !x.Hinges.Equal(y.Hinges) || !slices.Equal(x.Coef, y.Coef) {
			return false
		}
	}
	return true
}
