package replay

import (
	"context"
	"runtime"
	"slices"
	"sync"

	"gbdmpc/gbd"
	"gbdmpc/policy"
)

// labelStats are the labelling counts that go into Stats.
type labelStats struct {
	infeasible, loggedOptimal, agrees int
}

// labelled is one master's outcome: its sample, or ok=false when the feasibility cuts exclude every
// admissible assignment (the logged solve ended there, and there is nothing to imitate).
type labelled struct {
	sample        policy.Sample
	ok            bool
	loggedOptimal bool
	agrees        bool
}

// label rebuilds each pending master problem and labels it with the exact master's optimum. The label
// comes from gbd.EnumMaster itself, not from a copy of its rule, so that replayed labels are the
// expert decisions the engine would have taken: argmin over Y_pb of the largest optimality cut,
// subject to every feasibility cut within gbd.FeasTol, ties to the earliest assignment.
//
// Workers take contiguous runs of whole solves and write to their own slots, so the output order is
// the input order whatever the scheduling.
func label(ctx context.Context, ms []pending, ypb *gbd.Admissible, workers int) ([]policy.Sample, labelStats) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(ms)/16)) // a handful of masters is not worth a goroutine
	out := make([]labelled, len(ms))
	var wg sync.WaitGroup
	chunk := (len(ms) + workers - 1) / workers
	for lo := 0; lo < len(ms); {
		hi := min(lo+chunk, len(ms))
		for hi < len(ms) && ms[hi].solve == ms[hi-1].solve {
			hi++ // keep a solve on one worker, where its masters build on each other
		}
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			var lb labeller
			for i := lo; i < hi; i++ {
				if i%256 == 0 && ctx.Err() != nil {
					return
				}
				out[i] = lb.label(ms[i], ypb)
			}
		}(lo, hi)
		lo = hi
	}
	wg.Wait()

	var st labelStats
	samples := make([]policy.Sample, 0, len(ms))
	for i := range out {
		o := &out[i]
		if !o.ok {
			st.infeasible++
			continue
		}
		if o.loggedOptimal {
			st.loggedOptimal++
			if o.agrees {
				st.agrees++
			}
		}
		samples = append(samples, o.sample)
	}
	return samples, st
}

// labeller keeps the exact master between consecutive records. GBD only ever adds cuts, so the master
// at iteration k+1 of a solve is the one at k plus a cut: when the previous record's cuts are a prefix
// of this one's, only the new cuts are added. That makes a solve of K masters cost O(K) cut
// insertions instead of O(K²), which is most of the labelling time on a large Y_pb. The state after
// adding the same cuts in the same order is the same whether or not it was reset in between, so the
// labels do not depend on it.
type labeller struct {
	em    gbd.EnumMaster
	solve int
	cuts  []gbd.Cut // the cuts in em, the previous record's
	ready bool      // em holds a master (false before the first)
}

func (lb *labeller) label(p pending, ypb *gbd.Admissible) labelled {
	m := p.rec
	cuts := m.GBDCuts(false)
	from := 0
	if lb.ready && lb.solve == p.solve && isPrefix(lb.cuts, cuts) {
		from = len(lb.cuts)
	} else {
		// Reset cannot fail: ypb is the family's and the record's NY was checked against it.
		_ = lb.em.Reset(ypb.NY, nil, ypb)
	}
	for k := from; k < len(cuts); k++ {
		lb.em.AddCut(&cuts[k])
	}
	lb.solve, lb.cuts, lb.ready = p.solve, cuts, true
	res, _ := lb.em.Solve(0, nil) // the scan never fails
	if res.Status != gbd.MasterOptimal {
		return labelled{}
	}
	j := ypb.Index(res.Y)
	o := labelled{ok: true, sample: policy.Sample{Cuts: cuts, Prev: m.Prev, Label: j, Set: p.solve}}
	if m.MasterStatus == gbd.MasterOptimal.String() && len(m.MasterY) == ypb.NY {
		o.loggedOptimal = true
		o.agrees = ypb.Index(m.MasterY) == j
	}
	return o
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
