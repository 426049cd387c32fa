package replay

import (
	"context"
	"runtime"
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

// label rebuilds each pending master problem and labels it with the exact master's optimum
// (policy.Labeller: the expert decision the engine would have taken).
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

// labeller labels one worker's records through policy.Labeller and compares with what was logged.
type labeller struct{ policy.Labeller }

func (lb *labeller) label(p pending, ypb *gbd.Admissible) labelled {
	m := p.rec
	cuts := m.GBDCuts(false)
	j, y, ok := lb.Label(p.solve, cuts, ypb)
	if !ok {
		return labelled{}
	}
	o := labelled{ok: true, sample: policy.Sample{Cuts: cuts, Prev: m.Prev, Label: j, Y: y, Set: p.solve}}
	if m.MasterStatus == gbd.MasterOptimal.String() && len(m.MasterY) == ypb.NY {
		o.loggedOptimal = true
		if ypb.Implicit() {
			// Ties may go another way than the logged master's: agreement is the same objective.
			o.agrees = gbd.MaxOptimality(cuts, m.MasterY) <= gbd.MaxOptimality(cuts, bitsFloat(y))+policy.TieTol
		} else {
			o.agrees = ypb.Index(m.MasterY) == j
		}
	}
	return o
}

// bitsFloat is an assignment's 0/1 values as float64s.
func bitsFloat(y []uint8) []float64 {
	f := make([]float64, len(y))
	for i, v := range y {
		f[i] = float64(v)
	}
	return f
}
