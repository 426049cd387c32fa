package replay

import (
	"context"
	"runtime"

	"gbdmpc/gbd"
	"gbdmpc/internal/par"
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

// label rebuilds each pending master problem and labels it with the exact master's optimum
// (policy.Labeller: the expert decision the engine would have taken).
//
// Workers take whole solves as they come free (par.Each: a solve's masters build on each other, and
// the cost of a solve varies a hundredfold on a large station, so fixed shares leave a worker idle)
// and write to their own slots, so the output order is the input order whatever the scheduling.
// Each solve starts from a reset labeller, so its labels do not depend on the worker either. A
// cancelled ctx leaves the solves not yet started unlabelled; the caller checks ctx.
func label(ctx context.Context, ms []pending, ypb *gbd.Admissible, hinges []*gbd.Hinges, workers int) ([]policy.Sample, labelStats) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(ms)/16)) // a handful of masters is not worth a goroutine
	out := make([]labelled, len(ms))
	var runs []int // the first master of each solve, and len(ms)
	for i := range ms {
		if i == 0 || ms[i].solve != ms[i-1].solve {
			runs = append(runs, i)
		}
	}
	runs = append(runs, len(ms))
	_ = par.Each(ctx, len(runs)-1, workers, func() func(int) {
		var lb labeller
		return func(r int) {
			for i := runs[r]; i < runs[r+1]; i++ {
				out[i] = lb.label(ms[i], ypb, hinges[ms[i].solve])
			}
		}
	})

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

// labeller labels one worker's records through policy.Labeller and compares with what was logged.
type labeller struct{ policy.Labeller }

func (lb *labeller) label(p pending, ypb *gbd.Admissible, h *gbd.Hinges) labelled {
	m := p.rec
	cuts := m.GBDCuts(false, h)
	j, y, ok := lb.Label(p.solve, cuts, ypb)
	if !ok {
		return labelled{}
	}
	o := labelled{ok: true, sample: policy.Sample{Cuts: cuts, Prev: m.Prev, Label: j, Y: y, Set: p.solve}}
	if m.MasterStatus == gbd.MasterOptimal.String() && len(m.MasterY) == ypb.NY {
		o.loggedOptimal = true
		if ypb.Implicit() {
			// Ties may go another way than the logged master's: agreement is the same objective.
			o.agrees = gbd.MaxOptimality(cuts, m.MasterY) <= gbd.MaxOptimality(cuts, gbd.Floats(make([]float64, len(y)), y))+policy.TieTol
		} else {
			o.agrees = ypb.Index(m.MasterY) == j
		}
	}
	return o
}
